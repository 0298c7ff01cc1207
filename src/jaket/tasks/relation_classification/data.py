"""FewRel 1.0 (Han et al., 2018) in its own JSON format: the relation-classification task's dataset.

``{relation_id: [{"tokens": [...], "h": [name, qid, [[positions]]], "t": [...]}, ...]}`` and an
optional ``pid2name.json`` (``relation_id -> [name, description]``; read from beside the file or
folder when present). Every problem is reported as ``path: message`` naming the relation and the
instance index; nothing is silently dropped. :func:`read_query_lines` reads sentences to classify,
one FewRel instance (``{"tokens", "h", "t"}``) a line, errors as ``path:line: message``.
:func:`kg_relation_instances` builds a set of the same format from a KG (the embedded default).
:func:`read_inputs` reads and checks a job's relations before any model code loads: its files,
and the division of their relations into training and evaluation ones (:func:`relation_split`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaket.jsonio import JSONInputError, quote, read_json
from jaket.kg.errors import Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import json_objects, read_lines
from jaket.kg.sources.registry import build_source
from jaket.tasks.relation_classification.job import (TASK, RelationClassificationConfig, RelationClassificationData,
                                                     RelationClassificationJob)
from jaket.tasks.settings import builtin_wordnet_notice

logger = logging.getLogger(__name__)


class FewRelFormatError(ValueError):
    """A FewRel file does not follow the format."""


@dataclass(frozen=True)
class FewRelInstance:
    """One sentence with a head and a tail entity (token positions, inclusive, first mention)."""

    tokens: tuple[str, ...]
    head: tuple[int, int]
    tail: tuple[int, int]
    head_name: str
    tail_name: str
    head_id: str
    tail_id: str
    relation: str

    def marked_text(self, head_marker: tuple[str, str] = ("[", "]"),
                    tail_marker: tuple[str, str] = ("<", ">")) -> str:
        """The sentence with entity markers around the head and the tail (PAIR's input).

        Plain-text markers keep any tokenizer's vocabulary unchanged.
        """
        out: list[str] = []
        for i, token in enumerate(self.tokens):
            if i == self.head[0]:
                out.append(head_marker[0])
            if i == self.tail[0]:
                out.append(tail_marker[0])
            out.append(token)
            if i == self.head[1]:
                out.append(head_marker[1])
            if i == self.tail[1]:
                out.append(tail_marker[1])
        return " ".join(out)


@dataclass
class FewRelData:
    instances: dict[str, list[FewRelInstance]]
    relation_names: dict[str, str]
    relation_descriptions: dict[str, str]

    @property
    def relations(self) -> list[str]:
        return sorted(self.instances)

    def without(self, relations) -> "FewRelData":
        """The same data minus the given relations."""
        drop = set(relations)
        return FewRelData({r: v for r, v in self.instances.items() if r not in drop},
                          {r: v for r, v in self.relation_names.items() if r not in drop},
                          {r: v for r, v in self.relation_descriptions.items() if r not in drop})


def merge_fewrel(parts: list[FewRelData]) -> FewRelData:
    """Several FewRel files as one (a relation present in several has all their instances)."""
    instances: dict[str, list[FewRelInstance]] = {}
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for part in parts:
        for relation, items in part.instances.items():
            instances.setdefault(relation, []).extend(items)
        for relation, name in part.relation_names.items():
            if name != relation or relation not in names:
                names[relation] = name
        for relation, text in part.relation_descriptions.items():
            if text != names.get(relation, relation) or relation not in descriptions:
                descriptions[relation] = text
    return FewRelData(instances, names, descriptions)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _span(where: str, field: str, value) -> tuple[str, str, tuple[int, int]]:
    if not (isinstance(value, list) and len(value) >= 3):
        raise FewRelFormatError(f"{where}: {field!r} must be [name, id, [[positions]]]")
    name, qid, positions = value[0], value[1], value[2]
    if not (isinstance(name, str) and isinstance(qid, str)):
        raise FewRelFormatError(f"{where}: {field!r}: the name and the id must be strings")
    if not (isinstance(positions, list) and positions and isinstance(positions[0], list) and positions[0]):
        raise FewRelFormatError(f"{where}: {field!r} has no token positions")
    first = positions[0]
    if not all(_is_int(p) for p in first):
        raise FewRelFormatError(f"{where}: {field!r} positions must be integers")
    return name, qid, (min(first), max(first))


def parse_instance(item, where: str, relation: str = "") -> FewRelInstance:
    """One ``{"tokens", "h", "t"}`` object; ``where`` prefixes every error message."""
    tokens = item.get("tokens") if isinstance(item, dict) else None
    if not (isinstance(tokens, list) and tokens):
        raise FewRelFormatError(f"{where}: no tokens")
    if not all(isinstance(t, str) for t in tokens):
        raise FewRelFormatError(f"{where}: 'tokens' must be strings")
    h_name, h_id, h_span = _span(where, "h", item.get("h"))
    t_name, t_id, t_span = _span(where, "t", item.get("t"))
    if min(h_span[0], t_span[0]) < 0 or max(h_span[1], t_span[1]) >= len(tokens):
        raise FewRelFormatError(f"{where}: entity position outside the {len(tokens)} tokens")
    return FewRelInstance(tuple(tokens), h_span, t_span, h_name, t_name, h_id, t_id, relation)


def read_query_lines(path: str | Path) -> list[tuple[int, FewRelInstance]]:
    """Sentences to classify, ``(line number, instance)``: one JSON object ``{"tokens", "h", "t"}``
    a line (optionally ``"relation"``, the gold answer; blank lines skipped)."""
    path = Path(path)
    problems: list[Problem] = []
    out = []
    try:
        lines = read_lines(path, problems)
    except OSError as error:
        raise FewRelFormatError(f"{path}: cannot read ({error.strerror or error})") from None
    rows = json_objects(path, lines, problems)
    if problems:  # the first line that is not UTF-8 or not a JSON object
        raise FewRelFormatError(str(min(problems, key=lambda problem: problem.line or 0)))
    for line_no, item in rows:
        relation = item.get("relation", "")
        if not isinstance(relation, str):
            raise FewRelFormatError(f"{path}:{line_no}: 'relation' must be a relation id string")
        out.append((line_no, parse_instance(item, f"{path}:{line_no}", relation)))
    if not out:
        raise FewRelFormatError(f"{path}: no query sentence")
    return out


def _read_json(path: Path):
    """A whole JSON file (:func:`jaket.jsonio.read_json`), its problems as :class:`FewRelFormatError`."""
    try:
        return read_json(path)
    except JSONInputError as error:
        raise FewRelFormatError(f"{path}:{error.line or 1}: {error.reason}") from None
    except OSError as error:
        raise FewRelFormatError(f"{path}: cannot read ({error.strerror or error})") from None


def load_fewrel(path: str | Path, pid2name: str | Path | None = None) -> FewRelData:
    """Read a FewRel JSON file (and ``pid2name.json`` beside it when present)."""
    path = Path(path)
    if path.is_dir():
        candidates = sorted(p for p in path.glob("*.json") if p.name != "pid2name.json")
        if not candidates:
            raise FewRelFormatError(f"{path}: no FewRel JSON file in this folder")
        if pid2name is None and (path / "pid2name.json").exists():
            pid2name = path / "pid2name.json"
        path = candidates[0] if len(candidates) == 1 else _pick(candidates, path)
    elif pid2name is None and (path.parent / "pid2name.json").exists() and path.name != "pid2name.json":
        pid2name = path.parent / "pid2name.json"
    raw = _read_json(path)
    if not isinstance(raw, dict) or not raw:
        raise FewRelFormatError(f"{path}: the top level must be a non-empty object relation_id -> instances")
    instances: dict[str, list[FewRelInstance]] = {}
    for relation, items in raw.items():
        if not isinstance(items, list):
            raise FewRelFormatError(f"{path}: relation {quote(relation)}: instances must be a list")
        if not items:
            raise FewRelFormatError(f"{path}: relation {quote(relation)} has no instance (remove it or give its sentences)")
        parsed = []
        for index, item in enumerate(items):
            parsed.append(parse_instance(item, f"{path}: relation {quote(relation)}, instance {index}", relation))
        instances[relation] = parsed
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    if pid2name is not None:
        table = _read_json(Path(pid2name))
        if not isinstance(table, dict):
            raise FewRelFormatError(f"{pid2name}: the top level must be an object relation_id -> [name, description]")
        for pid, value in table.items():
            if not (isinstance(value, list) and 1 <= len(value) <= 2 and all(isinstance(v, str) for v in value)):
                raise FewRelFormatError(f"{pid2name}: relation {quote(pid)}: expected [name] or [name, description] "
                                        "(strings)")
            names[pid] = value[0]
            descriptions[pid] = value[1] if len(value) > 1 else ""
    for relation in instances:
        names.setdefault(relation, relation)
        descriptions.setdefault(relation, names[relation])
    return FewRelData(instances, names, descriptions)


def _pick(candidates: list[Path], folder: Path) -> Path:
    for preferred in ("val_wiki.json", "dev_wiki.json", "train_wiki.json"):
        for candidate in candidates:
            if candidate.name == preferred:
                return candidate
    raise FewRelFormatError(f"{folder}: several JSON files, name one: {[c.name for c in candidates]}")


def kg_relation_instances(kg: KnowledgeGraph, per_relation: int = 100, min_per_relation: int = 20, seed: int = 0,
                          max_gloss_words: int = 20) -> FewRelData:
    """A FewRel-format few-shot set built from a KG (the embedded default, for WordNet).

    Each instance is one triple written as ``head name : head gloss ; tail name : tail gloss``
    (whitespace tokens; head and tail are the two names). Nothing in the sentence names the
    relation: it must be read from what the two descriptions say. Relations with fewer than
    ``min_per_relation`` triples are left out (and counted in the log).
    """
    rng = np.random.default_rng(seed)
    triples = np.asarray(kg.triples)
    instances: dict[str, list[FewRelInstance]] = {}
    left_out = []
    for p in range(kg.num_relations):
        rows = np.flatnonzero(triples[:, 1] == p)
        if len(rows) < min_per_relation:
            left_out.append(str(kg.relation_ids[p]))
            continue
        picked = rng.permutation(rows)[:per_relation]
        items = []
        for h, _, t in triples[picked].tolist():
            hn, tn = str(kg.entity_names[h]).split(), str(kg.entity_names[t]).split()
            hd = str(kg.entity_descriptions[h]).split()[:max_gloss_words]
            td = str(kg.entity_descriptions[t]).split()[:max_gloss_words]
            if not hn or not tn:
                continue
            tokens = hn + [":"] + hd + [";"] + tn + [":"] + td
            t_start = len(hn) + 2 + len(hd)
            items.append(FewRelInstance(tuple(tokens), (0, len(hn) - 1), (t_start, t_start + len(tn) - 1),
                                        " ".join(hn), " ".join(tn), str(kg.entity_ids[h]),
                                        str(kg.entity_ids[t]), str(kg.relation_ids[p])))
        instances[str(kg.relation_ids[p])] = items
    if left_out:
        logger.info("relations with fewer than %d triples left out: %s", min_per_relation, ", ".join(left_out))
    names = {str(r): str(n) for r, n in zip(kg.relation_ids, kg.relation_names) if str(r) in instances}
    descriptions = {str(r): str(d) for r, d in zip(kg.relation_ids, kg.relation_descriptions) if str(r) in instances}
    return FewRelData(instances, names, descriptions)


# ----------------------------------------------------------------------------- a job's relations


class RelationOverlapError(ValueError):
    """A relation is both a training and an evaluation relation."""


def relation_split(data: FewRelData, config: RelationClassificationConfig,
                   train_data: FewRelData | None = None, drop_overlap: bool = False) -> tuple[list[str], list[str]]:
    """(training relations, evaluation relations); see :mod:`jaket.tasks.relation_classification.run`."""
    if train_data is not None:
        overlap = sorted(set(train_data.relations) & set(data.relations))
        if overlap and not drop_overlap:
            raise RelationOverlapError(
                f"relation(s) {', '.join(overlap)} are in both --train and --data: an episode must never "
                "evaluate a relation it trained on; add --drop-overlap to train without them, or remove them "
                "from one side")
        train = [r for r in train_data.relations if r not in overlap]
        if not train:
            raise ValueError("no training relation is left once the evaluation relations are removed")
        return train, data.relations
    relations = data.relations
    if config.train_relations:
        unknown = set(config.train_relations) - set(relations)
        if unknown:
            raise ValueError(f"unknown training relations {sorted(unknown)}; the data has {relations}")
        train = sorted(config.train_relations)
    else:
        train = relations[: config.num_train_relations]
    evaluation = [r for r in relations if r not in train]
    return train, evaluation


def checked_relation_split(data: FewRelData, config: RelationClassificationConfig,
                           train_data: FewRelData | None = None,
                           drop_overlap: bool = False) -> tuple[list[str], list[str]]:
    """:func:`relation_split`, refused when an N-way setting of ``config`` finds fewer than N
    evaluation relations, or a relation has fewer instances than an episode draws from it (K
    supports and a query: never silently fewer)."""
    train, evaluation = relation_split(data, config, train_data, drop_overlap)
    for way, shot in config.settings:
        if way > len(evaluation):
            raise ValueError(
                f"{way}-way {shot}-shot cannot run: it needs {way} evaluation relations, the split "
                f"holds out {len(evaluation)} of {len(data.relations)} ({', '.join(evaluation)})")
    train_source = train_data if train_data is not None else data
    for side, source, relations, shot in (("evaluation", data, evaluation, max((k for _, k in config.settings), default=0)),
                                          ("training", train_source, train, config.train_shot)):
        short = [f"{r} ({len(source.instances[r])})" for r in relations if len(source.instances[r]) < shot + 1]
        if short:
            raise ValueError(f"{side} relation(s) {', '.join(short)} have fewer than {shot + 1} instances: an "
                             f"episode draws {shot} support(s) and a query from each")
    return train, evaluation


def load_relations(data: RelationClassificationData) -> tuple[FewRelData, FewRelData | None]:
    """``(evaluation data, training data or None)`` of a job's data section: ``data.data`` (FewRel),
    else the WordNet-derived set of a ``max_entities`` subset (:func:`kg_relation_instances`);
    ``data.train_data``'s files merged."""
    if data.data is not None:
        evaluation = load_fewrel(data.data)
    else:
        builtin_wordnet_notice(logger, TASK, f"relation instances of a {data.max_entities}-synset "
                               "subset", "--data FILE (FewRel)")
        evaluation = kg_relation_instances(build_source("wordnet", max_entities=data.max_entities, seed=0).kg)
    train = merge_fewrel([load_fewrel(p) for p in data.train_data]) if data.train_data else None
    return evaluation, train


def read_inputs(job: RelationClassificationJob) -> tuple[FewRelData, FewRelData | None]:
    """A resolved job's ``(evaluation data, training data or None)``, read and checked before any
    model code loads: its files (:func:`load_relations`), then the division of their relations
    (:func:`checked_relation_split`: a relation in both ``--train`` and ``--data``, an unknown
    training relation or an N-way setting short of N evaluation relations is refused now)."""
    data, train = load_relations(job.data)
    checked_relation_split(data, job, train, job.data.drop_overlap)
    return data, train


def read_prediction_inputs(support, queries) -> tuple[FewRelData, list[tuple[int, FewRelInstance]]]:
    """``jaket predict relation-classification``'s inputs, read and checked before the model is
    loaded: the support file (every relation with a sentence) and the query lines."""
    supports = load_fewrel(support)
    empty = [r for r, items in supports.instances.items() if not items]
    if empty:
        raise ValueError(f"{support}: relation(s) {', '.join(map(quote, empty))} have no support sentence")
    return supports, read_query_lines(queries)
