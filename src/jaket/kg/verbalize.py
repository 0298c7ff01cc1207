"""Text from a KG that has none: descriptions and a linked corpus made from its own triples.

Eq. 7 embeds every entity from its description, and three of the four pre-training tasks read a
corpus linked to the KG; a KG of names and triples (a product catalogue, MetaQA's movie KB) has
neither. This module writes both from the triples (docs/data.md, "A KG without text"):

- :func:`describe_entities`: an entity without a description (or with one shorter than
  ``min_words``) gets its name and its neighbourhood in words, most informative relations first,
  cut at ``max_words``: ``"Kismet: directed by William Dieterle; written by Norman Reilly Raine;
  starred actors Marlene Dietrich, Ronald Colman; release year 1944"``.
- :func:`corpus_from_kg`: every triple said once in a sentence, up to ``facts_per_text`` facts of
  one head a sentence, its head and tails linked by construction (no linker): ``"Kismet was directed
  by William Dieterle and was released in 1944."``. Reproducible from ``seed``. With
  ``both_sides``, every triple is said a second time from its tail, by the relation's inverse phrase:
  ``"William Dieterle directed Kismet and The Last Flight."`` (a fact said one way is not recalled the
  other way unless it was read both ways; tasks.md, MetaQA item 9).

**Relation phrases**: a relation's name in words by default (``directed_by`` -> "directed by"), or
the templates a user writes in ``relations.jsonl`` (optional fields): ``"template": "{head} was
directed by {tail}"`` (a sentence; its part after ``{head}`` is the description's phrase) and
``"inverse_template": "{tail} directed {head}"`` (how the tail's description says it; default: the
name followed by "(inverse)"), or the same fields in a file of their own (``--templates FILE``).

**Informative first**: a relation whose tails are shared by few heads (a film's director) says more
about an entity than one whose tails are shared by thousands (its genre): relations are ordered by
the mean number of heads per tail, fewest first (then by id); within a relation, the tails with the
fewest heads first (then by name).
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.graph import KnowledgeGraph


_PLACEHOLDER = re.compile(r"(\{head\}|\{tail\})")


@dataclass(frozen=True)
class Phrasing:
    """How a relation is said: ``template`` a sentence with ``{head}`` and ``{tail}``, and the phrase
    an entity's description uses for it, ``{}`` where the other entities' names go (``forward``: "was
    directed by {}" for its tails, ``inverse``: "directed {}" for its heads)."""

    template: str
    forward: str
    inverse: str


def default_phrasing(name: str) -> Phrasing:
    words = " ".join(name.replace("_", " ").split()) or name
    return Phrasing("{head} " + words + " {tail}", words + " {}", f"{words} (inverse) {{}}")


def _phrase(template: str, subject: str, other: str) -> str | None:
    """A description's phrase of ``template`` said of ``subject`` (``{head}`` or ``{tail}``): the
    template after a leading ``subject``, the ``other`` placeholder as ``{}`` (where the names go)."""
    if not template.startswith(subject):
        return None
    rest = template[len(subject):].strip()
    return rest.replace(other, "{}") if other in rest and subject not in rest else None


def read_phrasings(directory: str | Path, kg: KnowledgeGraph, templates: str | Path | None = None
                   ) -> list[Phrasing]:
    """Every relation's :class:`Phrasing`, from the optional ``template`` and ``inverse_template``
    fields of ``DIR/relations.jsonl`` and then of ``templates`` (a JSONL file of ``{"id", "template",
    "inverse_template"}``, which wins), the default for a relation without them; a template without
    ``{head}`` and ``{tail}``, or a templates line naming no relation of the KG, is a
    :class:`KGFormatError` naming its line."""
    written: dict[str, tuple[str | None, str | None, int]] = {}
    problems: list[Problem] = []
    _read_templates(Path(directory) / "relations.jsonl", written, problems, None)
    if templates is not None:
        if not Path(templates).is_file():
            raise KGFormatError([Problem(str(templates), None, "no such file (--templates)")])
        _read_templates(Path(templates), written, problems, set(map(str, kg.relation_ids)))
    if problems:
        raise KGFormatError(problems)
    phrasings = []
    for relation_id, name in zip(kg.relation_ids, kg.relation_names):
        default = default_phrasing(str(name))
        forward, inverse, _ = written.get(str(relation_id), (None, None, 0))
        template = forward or default.template
        phrase = _phrase(template, "{head}", "{tail}") or default.forward
        inverse_phrase = (_phrase(inverse, "{tail}", "{head}") if inverse else None) or default.inverse
        phrasings.append(Phrasing(template, phrase, inverse_phrase))
    return phrasings


def _read_templates(path: Path, written: dict, problems: list[Problem], known: set[str] | None) -> None:
    """The templates of one JSONL file into ``written``; ``known``: the relation ids a line must name
    (None: any, as the KG's own relations file)."""
    if path.is_file():
        for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the KG reader says what is wrong with the line
            if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                if known is not None:
                    problems.append(Problem(str(path), number, "expected {\"id\", \"template\", ...}"))
                continue
            if known is not None and record["id"] not in known:
                problems.append(Problem(str(path), number, f"{quote(record['id'])} is not a relation of the KG"))
                continue
            forward, inverse = record.get("template"), record.get("inverse_template")
            for field, value in (("template", forward), ("inverse_template", inverse)):
                if value is not None and (not isinstance(value, str) or "{head}" not in value
                                          or "{tail}" not in value):
                    problems.append(Problem(str(path), number, f"{field} {quote(str(value))} must be a string "
                                                               "holding {head} and {tail}"))
            known_forward, known_inverse, _ = written.get(record["id"], (None, None, 0))
            written[record["id"]] = (forward or known_forward, inverse or known_inverse, number)


def _order(kg: KnowledgeGraph) -> tuple[np.ndarray, dict[int, int]]:
    """``(relation rank, tail heads)``: each relation's place in the informative-first order and each
    (relation, tail)'s number of heads, as the module docstring says."""
    triples = np.asarray(kg.triples, dtype=np.int64)
    keys = triples[:, 1] * kg.num_entities + triples[:, 2]
    unique, counts = np.unique(keys, return_counts=True)
    relation_of = unique // kg.num_entities
    mean = np.full(kg.num_relations, np.inf)
    for r in np.unique(relation_of):
        mean[r] = counts[relation_of == r].mean()
    rank = np.empty(kg.num_relations, dtype=np.int64)
    rank[np.lexsort((np.arange(kg.num_relations), mean))] = np.arange(kg.num_relations)
    return rank, dict(zip(unique.tolist(), counts.tolist()))


def _needs(description: str, name: str, min_words: int) -> str | None:
    """``"missing"``, ``"short"`` or None: whether an entity's description is to be made."""
    text = " ".join(str(description).split())
    if not text or text.lower() == str(name).lower():
        return "missing"
    return "short" if len(text.split()) < min_words else None


def describe_entities(kg: KnowledgeGraph, phrasings: list[Phrasing] | None = None, max_words: int = 40,
                      min_words: int = 0) -> tuple[KnowledgeGraph, dict]:
    """``kg`` with descriptions made from its triples (module docstring) for the entities without one
    (a description equal to the name counts as none) or with fewer than ``min_words`` words (those keep
    their text, the facts after it); deterministic. Returns the KG and a report of what was made."""
    phrasings = phrasings or [default_phrasing(str(n)) for n in kg.relation_names]
    rank, heads_of = _order(kg)
    outgoing: dict[int, list[tuple[int, int]]] = defaultdict(list)
    incoming: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for h, r, t in np.asarray(kg.triples).tolist():
        outgoing[h].append((r, t))
        incoming[t].append((r, h))
    names = [str(n) for n in kg.entity_names]
    descriptions = [str(d) for d in kg.entity_descriptions]
    made = {"missing": 0, "short": 0, "without_triples": 0}
    for e in range(kg.num_entities):
        why = _needs(descriptions[e], names[e], min_words)
        if why is None:
            continue
        facts = _facts(e, outgoing[e], incoming[e], phrasings, rank, heads_of, names, kg.num_entities)
        if not facts:
            made["without_triples"] += 1
            continue
        start = names[e] if why == "missing" else descriptions[e].rstrip(" .;")
        descriptions[e] = _budget(start + ": " if why == "missing" else start + "; ", facts, max_words)
        made[why] += 1
    report = {"descriptions_made_for_entities_without_one": made["missing"],
              "descriptions_completed_below_min_words": made["short"],
              "entities_without_description_or_triple": made["without_triples"],
              "max_words": max_words, "min_words": min_words}
    return replace(kg, entity_descriptions=descriptions), report


def _facts(e: int, outgoing, incoming, phrasings, rank, heads_of, names, n) -> list[str]:
    """The entity's facts as description phrases, informative relations first."""
    groups: dict[tuple[int, int, int], list[tuple[int, str]]] = defaultdict(list)
    for r, t in outgoing:
        groups[(int(rank[r]), 0, r)].append((heads_of[r * n + t], names[t]))
    for r, h in incoming:
        groups[(int(rank[r]), 1, r)].append((1, names[h]))
    facts = []
    for (_, direction, r), items in sorted(groups.items()):
        phrase = phrasings[r].forward if direction == 0 else phrasings[r].inverse
        tails = [name for _, name in sorted(set(items))]
        facts.append((phrase, tails))
    return facts


def _budget(start: str, facts: list[tuple[str, list[str]]], max_words: int) -> str:
    """``start`` and as many facts (and of each fact's entities) as ``max_words`` words allow."""
    parts, words = [], len(start.split())
    for phrase, tails in facts:
        kept = []
        cost = len(phrase.replace("{}", "").split())
        for tail in tails:
            extra = len(tail.split())
            if words + cost + extra > max_words:
                break
            kept.append(tail)
            cost += extra
        if not kept:
            break
        parts.append(phrase.replace("{}", ", ".join(kept)))
        words += cost
    return start + "; ".join(parts)


def corpus_from_kg(kg: KnowledgeGraph, phrasings: list[Phrasing] | None = None, facts_per_text: int = 3,
                   seed: int = 0, max_texts: int | None = None, both_sides: bool = False
                   ) -> tuple[MentionCorpus, dict]:
    """Every triple of ``kg`` said once (module docstring), each text up to ``facts_per_text`` facts of
    one head, head and tails linked; heads and their facts in an order drawn from ``seed``. With
    ``both_sides``, each triple also once from its tail (``facts_per_text`` facts of one tail a text, by
    the relations' inverse phrases), the tail's texts drawn after the heads' from the same ``seed``."""
    if facts_per_text < 1:
        raise ValueError(f"facts_per_text must be >= 1, got {facts_per_text}")
    phrasings = phrasings or [default_phrasing(str(n)) for n in kg.relation_names]
    names = [str(n) for n in kg.entity_names]
    by_head: dict[int, list[tuple[int, int]]] = defaultdict(list)
    by_tail: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for h, r, t in np.asarray(kg.triples).tolist():
        by_head[h].append((r, t))
        by_tail[t].append((r, h))
    rng = random.Random(seed)
    texts, mentions = [], []
    sides = [(by_head, _sentence), (by_tail, _inverse_sentence)] if both_sides else [(by_head, _sentence)]
    for grouped, say in sides:
        subjects = sorted(grouped)
        rng.shuffle(subjects)
        for subject in subjects:
            facts = sorted(set(grouped[subject]))
            rng.shuffle(facts)
            for start in range(0, len(facts), facts_per_text):
                text, spans = say(subject, facts[start:start + facts_per_text], phrasings, names)
                texts.append(text)
                mentions.append(spans)
    order = list(range(len(texts)))
    rng.shuffle(order)
    if max_texts is not None:
        order = order[:max_texts]
    corpus = MentionCorpus([texts[i] for i in order], [mentions[i] for i in order])
    return corpus, {"texts": len(corpus), "mentions": corpus.num_mentions, "triples_said": int(
        sum(len(m) - 1 for m in corpus.mentions)), "triples": int(kg.num_triples),
        "facts_per_text": facts_per_text, "both_sides": both_sides, "seed": seed}


def _sentence(h: int, facts: list[tuple[int, int]], phrasings: list[Phrasing], names: list[str]):
    """One text of head ``h``'s facts and its mentions (each ``{head}`` and ``{tail}`` said): the
    first fact's whole template, the next ones' after their leading ``{head}`` ("..., was written by
    X and was released in 1944.")."""
    pieces: list[tuple[str, int | None]] = []
    for k, (r, t) in enumerate(facts):
        template = phrasings[r].template
        if k:
            joined = template.startswith("{head}")
            pieces.append((" and " if k == len(facts) - 1 else ", ") if joined else ("; ", None))
            if isinstance(pieces[-1], str):
                pieces[-1] = (pieces[-1], None)
            if joined:
                template = template[len("{head}"):].lstrip()
        for part in _PLACEHOLDER.split(template):
            if part == "{head}":
                pieces.append((names[h], h))
            elif part == "{tail}":
                pieces.append((names[t], t))
            elif part:
                pieces.append((part, None))
    return _assemble(pieces)


def _inverse_sentence(t: int, facts: list[tuple[int, int]], phrasings: list[Phrasing], names: list[str]):
    """One text of tail ``t``'s facts ``(relation, head)`` and its mentions, each said by the relation's
    inverse phrase after the tail's name ("William Dieterle directed Kismet and wrote Juarez.")."""
    pieces: list[tuple[str, int | None]] = [(names[t], t)]
    for k, (r, h) in enumerate(facts):
        pieces.append((" " if k == 0 else (" and " if k == len(facts) - 1 else ", "), None))
        before, _, after = phrasings[r].inverse.partition("{}")
        pieces += [(before, None), (names[h], h), (after, None)]
    return _assemble(pieces)


def _assemble(pieces: list[tuple[str, int | None]]) -> tuple[str, list[Mention]]:
    """The text of ``pieces`` ended by a full stop, and a mention at each piece that names an entity."""
    text, spans = "", []
    for piece, entity in pieces + [(".", None)]:
        if entity is not None:
            spans.append(Mention(len(text), len(text) + len(piece), entity))
        text += piece
    return text, spans


__all__ = ["Phrasing", "corpus_from_kg", "default_phrasing", "describe_entities", "read_phrasings"]
