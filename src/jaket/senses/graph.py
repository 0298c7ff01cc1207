"""The sense KG as the knowledge module reads it around a word's candidate senses.

:func:`target_spans`: the token span of a target word in its text (the place a sense is fused at,
Eq. 8-9, and read from); :class:`SenseGraph`: the sense KG with its frozen memory ``E^context``
(Eq. 7) and the KM's neighbourhood sampling; :func:`km_embeddings`: ``E^KM`` of candidate senses
(Eq. 1-5) over their sampled neighbourhoods; :func:`neighbourhood`: the entities within ``k`` hops.
Shared by word in context and the word-sense scorers (:mod:`jaket.senses.scorers`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sampling import sample_neighbors
from jaket.model.memory import FrozenMemory

#: encoded texts with a ``candidates`` table of entity indices (a dataclass), e.g. word in context's pairs
Encoded = TypeVar("Encoded")

def target_spans(tokenizer, texts: list[str], spans: list[tuple[int, int]], max_length: int,
                 names: list[str] | None = None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Token ids (with special tokens, cut at ``max_length``) and the inclusive token span of each
    character span; a target cut off by ``max_length`` is an error naming the text (``names[i]``)."""
    encoded = tokenizer(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    starts, ends, ids = np.zeros(len(texts), np.int64), np.zeros(len(texts), np.int64), []
    for i, (offsets, (a, b)) in enumerate(zip(encoded["offset_mapping"], spans)):
        inside = [k for k, (s, e) in enumerate(offsets) if e > s and s < b and e > a]
        if not inside:
            name = names[i] if names is not None else f"text {i + 1}"
            raise ValueError(f"{name}: the target [{a}, {b}) is not within the first {max_length} tokens; "
                             f"raise max_length")
        starts[i], ends[i] = inside[0], inside[-1]
        ids.append(np.asarray(encoded["input_ids"][i], dtype=np.int64))
    return ids, starts, ends


@dataclass
class SenseGraph:
    """The sense KG as a setting sees it: its frozen memory and the neighbourhood sampling of the KM.

    ``index_of`` maps the whole KG's entity indices (the numbering :func:`encode_pairs` writes the
    candidates in) to ``kg``'s, -1 outside it; None when ``kg`` is the whole KG. A graph is built
    once and shared by every seed of a setting, so it is never changed afterwards, and neither are
    the encoded pairs: :meth:`localise` renumbers a copy on every use."""

    kg: KnowledgeGraph
    memory: FrozenMemory
    fanouts: tuple[int, ...]
    index_of: np.ndarray | None = None

    def localise(self, data: Encoded) -> Encoded:
        """A copy of ``data`` whose candidates are indices of :attr:`kg` (``data`` is unchanged)."""
        if self.index_of is None:
            return data
        candidates = data.candidates
        if len(candidates) and candidates.max() >= len(self.index_of):
            raise ValueError(f"candidate {int(candidates.max())} is beyond the {len(self.index_of)} entities "
                             f"of the KG the sense graph was cut from")
        local = np.where(candidates >= 0, self.index_of[np.maximum(candidates, 0)], -1)
        if np.any(local[candidates >= 0] < 0):
            raise ValueError("a candidate lies outside the sense graph: it was cut for other pairs")
        return replace(data, candidates=local)


def km_embeddings(knowledge: nn.Module, graph: SenseGraph, entities, generator: np.random.Generator) -> torch.Tensor:
    """E^KM (Eq. 1-5) by ``knowledge`` of ``entities`` (unique indices of ``graph.kg``) over their
    neighbourhoods sampled with ``graph.fanouts``, from the frozen memory rows."""
    device = graph.memory.entities.device
    seeds = entities.cpu().numpy() if isinstance(entities, torch.Tensor) else np.asarray(entities)
    sub = sample_neighbors(graph.kg, seeds, graph.fanouts, generator)
    x = graph.memory.entities.index_select(0, sub.node_ids.to(device))
    out = knowledge(x, sub.edge_index.to(device), sub.edge_type.to(device), graph.memory.relations,
                    num_relations=graph.kg.num_relations, hops=(sub.nodes_per_hop, sub.edges_per_hop))
    return out[sub.seed_local.to(device)]


def neighbourhood(kg: KnowledgeGraph, entities, hops: int) -> np.ndarray:
    """The sorted entities within ``hops`` edges (either direction) of ``entities``."""
    adjacency = kg.adjacency
    reached = np.zeros(kg.num_entities, dtype=bool)
    frontier = np.unique(np.asarray(list(entities), dtype=np.int64))
    reached[frontier] = True
    for _ in range(hops):
        if not len(frontier):
            break
        starts, stops = adjacency.indptr[frontier], adjacency.indptr[frontier + 1]
        found = np.concatenate([adjacency.neighbors[a:b] for a, b in zip(starts, stops)] or [np.zeros(0, np.int64)])
        found = np.unique(found.astype(np.int64))
        frontier = found[~reached[found]]
        reached[frontier] = True
    return np.flatnonzero(reached)


__all__ = ["SenseGraph", "km_embeddings", "neighbourhood", "target_spans"]
