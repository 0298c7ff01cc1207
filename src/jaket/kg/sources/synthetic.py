"""Synthetic KGs with power-law degrees, for scale tests and benchmarks (``jaket kg build synthetic``).

The generator is :func:`jaket.kg.toy.synthetic_kg` (heads and tails drawn with probability
``(rank + 1) ** -exponent`` over a random permutation of the entities, uniform relations, no
self-loops, random categories); this module adds the report the ``kg build`` command writes.
"""

from __future__ import annotations

import time

import numpy as np

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.toy import synthetic_kg


def build_synthetic(num_entities: int, num_triples: int, num_relations: int = 20,
                    num_categories: int = 10, exponent: float = 0.7,
                    seed: int = 0) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)``: a random power-law KG of the given size."""
    if num_entities < 2:
        raise ValueError(f"a synthetic KG needs at least 2 entities, got {num_entities}")
    if num_triples < 0 or num_relations < 1 or num_categories < 0:
        raise ValueError("triples must be >= 0, relations >= 1 and categories >= 0")
    if exponent < 0:
        raise ValueError(f"the power-law exponent must be >= 0, got {exponent}")
    began = time.perf_counter()
    kg = synthetic_kg(num_entities, num_triples, num_relations=num_relations,
                      num_categories=num_categories, exponent=exponent, seed=seed)
    degree = np.bincount(kg.triples[:, [0, 2]].reshape(-1), minlength=num_entities) if num_triples \
        else np.zeros(num_entities, dtype=np.int64)
    report = {
        "source": "synthetic",
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": int(len(np.unique(kg.entity_category[kg.entity_category >= 0]))),
        "exponent": exponent,
        "seed": seed,
        "degree": {"max": int(degree.max()) if len(degree) else 0, "mean": float(degree.mean()),
                   "median": float(np.median(degree)), "isolated": int((degree == 0).sum())},
        "seconds": round(time.perf_counter() - began, 2),
    }
    return kg, report
