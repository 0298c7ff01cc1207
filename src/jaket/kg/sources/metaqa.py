"""MetaQA (Zhang et al., 2018), vanilla version.

``kb.txt``: one triple a line, ``head|relation|tail``. Question files (e.g. ``1-hop/qa_train.txt``):
``question with [topic entity]<TAB>answer1|answer2``. Entity names are the ids (MetaQA has no other
ids). As in the paper, an entity's description is one sampled question mentioning it (the entity
name alone when no question mentions it), and relation descriptions are written by hand
(:data:`RELATION_DESCRIPTIONS`).

Problems are reported as ``path:line: message``; questions whose topic or an answer is not in the
KB are counted in ``skipped`` (never silently dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: hand-written relation descriptions for the nine MetaQA relations (the paper writes its own)
RELATION_DESCRIPTIONS = {
    "directed_by": "the film was directed by this person",
    "written_by": "the film was written by this screenwriter or author",
    "starred_actors": "this actor starred in the film",
    "release_year": "the year in which the film was released",
    "in_language": "the language spoken in the film",
    "has_tags": "a tag or keyword describing the film",
    "has_genre": "the genre of the film",
    "has_imdb_votes": "how popular the film is by its number of votes on IMDb",
    "has_imdb_rating": "the rating of the film on IMDb",
}

_TOPIC = re.compile(r"\[([^\]]+)\]")


class MetaQAFormatError(ValueError):
    """A MetaQA file does not follow the format."""


@dataclass
class QAExample:
    """A question with its topic entity marked by a character span (end exclusive)."""

    text: str
    topic: int
    topic_start: int
    topic_end: int
    answers: list[int]
    hops: int = 1


@dataclass
class MetaQAKB:
    entity_names: list[str]
    relation_names: list[str]
    triples: np.ndarray  # (T, 3) int32
    index: dict[str, int] = field(default_factory=dict)


def read_kb(path: str | Path) -> MetaQAKB:
    """Read ``kb.txt`` (``head|relation|tail``)."""
    path = Path(path)
    names: list[str] = []
    index: dict[str, int] = {}
    relations: list[str] = []
    relation_index: dict[str, int] = {}
    rows: list[tuple[int, int, int]] = []

    def entity(name: str) -> int:
        if name not in index:
            index[name] = len(names)
            names.append(name)
        return index[name]

    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split("|")
            if len(parts) != 3 or not all(p.strip() for p in parts):
                raise MetaQAFormatError(f"{path}:{line_no}: expected head|relation|tail, got {line!r}")
            head, relation, tail = (p.strip() for p in parts)
            if relation not in relation_index:
                relation_index[relation] = len(relations)
                relations.append(relation)
            rows.append((entity(head), relation_index[relation], entity(tail)))
    if not rows:
        raise MetaQAFormatError(f"{path}: no triples")
    return MetaQAKB(names, relations, np.asarray(rows, dtype=np.int32), index)


def read_questions(path: str | Path, kb: MetaQAKB, hops: int = 1) -> tuple[list[QAExample], int]:
    """Read one question file; returns ``(examples, skipped)`` where ``skipped`` counts questions
    whose topic entity is not in the KB or that have no answer in it."""
    path = Path(path)
    out: list[QAExample] = []
    skipped = 0
    lookup = {name.lower(): i for name, i in kb.index.items()}
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if "\t" not in line:
                raise MetaQAFormatError(f"{path}:{line_no}: expected question<TAB>answers")
            question, answer_field = line.split("\t", 1)
            match = _TOPIC.search(question)
            if match is None:
                raise MetaQAFormatError(f"{path}:{line_no}: no [topic entity] in the question")
            topic_name = match.group(1)
            text = question[: match.start()] + topic_name + question[match.end():]
            topic = kb.index.get(topic_name, lookup.get(topic_name.lower()))
            answers = [kb.index.get(a, lookup.get(a.lower())) for a in answer_field.split("|") if a]
            answers = [a for a in answers if a is not None]
            if topic is None or not answers:
                skipped += 1
                continue
            out.append(QAExample(text, int(topic), match.start(), match.start() + len(topic_name),
                                 sorted(set(int(a) for a in answers)), hops))
    return out, skipped


def entity_descriptions_from_questions(num_entities: int, names: list[str],
                                       questions: list[QAExample], seed: int = 0) -> list[str]:
    """The paper's MetaQA descriptions: one randomly sampled question mentioning the entity
    (as its topic), or the entity's name when none does."""
    rng = np.random.default_rng(seed)
    by_entity: dict[int, list[str]] = {}
    for q in questions:
        by_entity.setdefault(q.topic, []).append(q.text)
    out = []
    for i in range(num_entities):
        texts = by_entity.get(i)
        out.append(texts[int(rng.integers(len(texts)))] if texts else names[i])
    return out


def load_metaqa(root: str | Path, hops: tuple[int, ...] = (1, 2), split: str = "train"):
    """Read ``root/kb.txt`` and ``root/{k}-hop/qa_{split}.txt`` (also accepts ``{k}hop``)."""
    root = Path(root)
    kb_path = root / "kb.txt"
    if not kb_path.exists():
        raise MetaQAFormatError(f"{kb_path}: not found (expected the MetaQA kb.txt)")
    kb = read_kb(kb_path)
    examples: list[QAExample] = []
    skipped = 0
    for k in hops:
        for folder in (f"{k}-hop", f"{k}hop"):
            path = root / folder / f"qa_{split}.txt"
            if path.exists():
                qs, s = read_questions(path, kb, hops=k)
                examples += qs
                skipped += s
                break
        else:
            raise MetaQAFormatError(f"{root}: no {k}-hop/qa_{split}.txt")
    return kb, examples, skipped
