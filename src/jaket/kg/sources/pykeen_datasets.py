"""The small benchmark KGs bundled with PyKEEN: UMLS, Nations and Kinships.

Their triple files (``train.txt``, ``valid.txt``, ``test.txt``; ``head<TAB>relation<TAB>tail``)
ship inside the installed ``pykeen`` package (``pykeen/datasets/<name>/``), so they are read
directly from there: no download, and no import of PyKEEN itself (its dataset classes are offline
for these three too, but they load torch and build triples factories this importer does not need).

The KG holds every entity and relation of the three files (UMLS: 135 entities, 46 relations) and
the **training** triples only (UMLS: 5,216); the valid and test triples are evaluation splits
(:func:`read_splits`; ``jaket kg import pykeen`` writes them beside the KG as ``valid.txt`` and
``test.txt``). These datasets have no text: names double as descriptions, made readable
(``cell_or_molecular_dysfunction`` -> ``cell or molecular dysfunction``), and entities have no
category.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.graph import KnowledgeGraph, readable
from jaket.kg.readers import read_triples

#: dataset -> (folder inside pykeen/datasets, what its entities are, what its relations are)
DATASETS = {
    "umls": ("umls", "a semantic type of the UMLS (Unified Medical Language System) ontology",
             "a relation between UMLS semantic types"),
    "nations": ("nations", "a country of the Nations dataset of international relations",
                "a relation between two countries"),
    "kinships": ("kinships", "a person of the Alyawarra kinship dataset",
                 "a kinship term relating two people"),
}

SPLITS = ("train", "valid", "test")


class PyKEENDataError(ValueError):
    """The dataset is unknown, or PyKEEN (which holds the files) is not installed."""


def dataset_folder(name: str) -> Path:
    """The folder of a bundled dataset inside the installed ``pykeen`` package."""
    key = name.lower()
    if key not in DATASETS:
        raise PyKEENDataError(f"unknown PyKEEN dataset {name!r}; choose one of {', '.join(DATASETS)}")
    spec = importlib.util.find_spec("pykeen")
    if spec is None or not spec.submodule_search_locations:
        raise PyKEENDataError("the Python package `pykeen` is not installed (`pip install pykeen`); "
                              "it holds the UMLS, Nations and Kinships files")
    folder = Path(next(iter(spec.submodule_search_locations))) / "datasets" / DATASETS[key][0]
    if not (folder / "train.txt").is_file():
        raise PyKEENDataError(f"{folder / 'train.txt'}: missing (this pykeen version does not bundle {name})")
    return folder


def _read(path: Path, problems: list[Problem]) -> list[tuple[str, str, str]]:
    return [row[1:] for row in read_triples(path, problems)]


def read_splits(name: str) -> dict[str, list[tuple[str, str, str]]]:
    """The triples of each split of a bundled dataset, as id strings."""
    folder = dataset_folder(name)
    problems: list[Problem] = []
    splits = {split: _read(folder / f"{split}.txt", problems) for split in SPLITS
              if (folder / f"{split}.txt").is_file()}
    if problems:
        raise KGFormatError(problems)
    return splits


def load_pykeen_dataset(name: str) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` for ``umls``, ``nations`` or ``kinships`` (module docstring)."""
    key = name.lower()
    splits = read_splits(key)
    _, entity_kind, relation_kind = DATASETS[key]
    entities: dict[str, None] = {}
    relations: dict[str, None] = {}
    for rows in splits.values():
        for h, r, t in rows:
            entities.setdefault(h)
            entities.setdefault(t)
            relations.setdefault(r)
    entity_ids = sorted(entities)
    relation_ids = sorted(relations)
    e_index = {e: i for i, e in enumerate(entity_ids)}
    r_index = {r: i for i, r in enumerate(relation_ids)}
    triples = np.array([(e_index[h], r_index[r], e_index[t]) for h, r, t in splits["train"]],
                       dtype=np.int32).reshape(-1, 3)
    names = [readable(e) for e in entity_ids]
    relation_names = [readable(r) for r in relation_ids]
    kg = KnowledgeGraph(
        entity_ids=entity_ids, entity_names=names,
        entity_descriptions=[f"{n}: {entity_kind}" for n in names],
        entity_aliases=[[] for _ in entity_ids],
        entity_category=np.full(len(entity_ids), -1, dtype=np.int32), category_names=[],
        relation_ids=relation_ids, relation_names=relation_names,
        relation_descriptions=[f"{n}: {relation_kind}" for n in relation_names],
        triples=triples)
    in_train = np.zeros(len(entity_ids), dtype=bool)
    if len(triples):
        in_train[triples[:, [0, 2]].reshape(-1)] = True
    report = {
        "source": f"pykeen-{key}",
        "folder": str(dataset_folder(key)),
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": 0,
        "split_triples": {split: len(rows) for split, rows in splits.items()},
        "entities_not_in_train": int((~in_train).sum()),
        "duplicate_train_triples": int(len(triples) - len(np.unique(triples, axis=0))) if len(triples) else 0,
    }
    return kg, report
