"""The MetaQA knowledge base (Zhang et al., 2018) as a :class:`~jaket.kg.graph.KnowledgeGraph`.

``kb.txt``: one triple a line, ``head|relation|tail``. Entity names are the ids (MetaQA has no
other ids). Relation descriptions are written by hand (:data:`RELATION_DESCRIPTIONS`), as the
paper does. MetaQA's entities have no descriptions of their own: the paper uses one sampled
question per entity, which is the question-answering task's business
(:mod:`jaket.tasks.metaqa` reads the questions and passes those descriptions to :func:`kb_to_kg`).

Problems are reported as ``path:line: message``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaket.kg.errors import Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import read_triples

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


class MetaQAFormatError(ValueError):
    """A MetaQA file does not follow the format."""


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

    problems: list[Problem] = []
    for _, head, relation, tail in read_triples(path, problems, separator="|"):
        if relation not in relation_index:
            relation_index[relation] = len(relations)
            relations.append(relation)
        rows.append((entity(head), relation_index[relation], entity(tail)))
    if problems:  # the first line that is not UTF-8 or not head|relation|tail
        raise MetaQAFormatError(str(problems[0]))
    if not rows:
        raise MetaQAFormatError(f"{path}: no triples")
    return MetaQAKB(names, relations, np.asarray(rows, dtype=np.int32), index)


def kb_to_kg(kb: MetaQAKB, descriptions: Sequence[str] | None = None) -> KnowledgeGraph:
    """The KB as a KnowledgeGraph: entity id = name = the KB's string; ``descriptions`` default
    to the names; relation descriptions from :data:`RELATION_DESCRIPTIONS`."""
    names = list(kb.entity_names)
    if descriptions is not None and len(descriptions) != len(names):
        raise ValueError(f"{len(descriptions)} descriptions for {len(names)} MetaQA entities")
    return KnowledgeGraph(
        entity_ids=names, entity_names=list(names),
        entity_descriptions=list(descriptions) if descriptions is not None else list(names),
        entity_aliases=[[] for _ in names], entity_category=np.full(len(names), -1),
        category_names=[], relation_ids=list(kb.relation_names),
        relation_names=[r.replace("_", " ") for r in kb.relation_names],
        relation_descriptions=[RELATION_DESCRIPTIONS.get(r, r.replace("_", " ")) for r in kb.relation_names],
        triples=kb.triples)
