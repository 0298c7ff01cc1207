"""The graph side of KGQA: the kept triples, each question's candidates, and the computation
subgraph of one training step.

**Candidates**: every entity within ``k`` hops of the topic (either direction, over the kept
triples; ``k`` = the question's hop count), the topic excluded, nearest hops first (each hop in
index order), at most ``limit``. Computed once per (topic, k) and cached.

**One KM pass per step over the step's computation subgraph.** A training step needs ``E^KM``
(Eq. 1-5) of the batch's topics and candidates only. After ``L`` KM layers an entity's output
depends on its ``L``-hop in-neighbourhood and nothing else, so :meth:`QAGraph.computation_subgraph`
collects, in hop order, the seeds (topics and candidates of the whole batch, shared), every
in-edge of the seeds (hop 1), every in-edge of the entities first reached at hop 1 (hop 2), ...,
and :class:`~jaket.model.knowledge.KnowledgeModule` runs over it with ``hops=`` (layer ``l`` updates
only the nodes within ``L - l`` hops). No edge is sampled: the seeds' rows equal those of a pass
over the whole KG (tested to 1e-5), at a cost that grows with the batch's neighbourhood instead of
with the KG (docs/performance.md, "KGQA training step"). Opt-in, ``fanout`` samples at most that
many in-edges per node and hop instead (seeded), as pre-training's subgraphs do: no longer exact,
cheaper where hubs (a genre, a year) sit next to the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from jaket.kg.graph import CSRAdjacency, KnowledgeGraph
from jaket.kg.sampling import _ragged_arange, sample_edges
from jaket.tasks.variants import full_graph


def drop_triples_mask(num_triples: int, probability: float, seed: int) -> np.ndarray:
    """KG-50%: keep each triple with probability ``1 - probability`` (seeded)."""
    return np.random.default_rng(seed).random(num_triples) >= probability


@dataclass
class ComputationSubgraph:
    """Nodes in hop order (``nodes[:num_seeds]`` = the seeds, sorted) and their edges in the
    design's convention (row 0 the neighbour, row 1 the node updated), local indices."""

    nodes: np.ndarray
    edge_index: torch.Tensor
    edge_type: torch.Tensor
    nodes_per_hop: tuple[int, ...]
    edges_per_hop: tuple[int, ...]

    @property
    def seeds(self) -> np.ndarray:
        return self.nodes[: self.nodes_per_hop[0]]


class QAGraph:
    """A KG restricted to the kept triples (KG-Full: all; KG-50%: a seeded half)."""

    def __init__(self, kg: KnowledgeGraph, keep: np.ndarray | None = None):
        self.kg = kg
        self.keep = np.ones(kg.num_triples, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
        triples = np.asarray(kg.triples)[self.keep]
        # row v: v's neighbours u with the edge type of u -> v (full_graph's convention)
        self.adjacency = CSRAdjacency.from_triples(triples, kg.num_entities, kg.num_relations)
        self._candidates: dict[tuple[int, int], np.ndarray] = {}
        self._full: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def num_entities(self) -> int:
        return int(self.kg.num_entities)

    def full_edges(self, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """Every kept edge (``edge_index``, ``edge_type``) for a pass over the whole KG, on
        ``device`` (built once per device)."""
        key = str(torch.device(device))
        if key not in self._full:
            on_cpu = self._full.get("cpu") or full_graph(self.kg, self.keep)
            self._full[key] = tuple(t.to(device) for t in on_cpu)
        return self._full[key]

    def _neighbours(self, frontier: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row in ``frontier``, CSR position) of every edge of the frontier's entities."""
        indptr = self.adjacency.indptr
        return _ragged_arange(indptr[frontier], indptr[frontier + 1] - indptr[frontier])

    def candidates(self, topic: int, hops: int, limit: int) -> np.ndarray:
        """The candidates of a question (module docstring), cached."""
        key = (int(topic), int(hops))
        found = self._candidates.get(key)
        if found is None:
            seen = np.zeros(self.num_entities, dtype=bool)
            seen[topic] = True
            frontier = np.asarray([topic], dtype=np.int64)
            ordered = []
            for _ in range(hops):
                _, positions = self._neighbours(frontier)
                reached = np.unique(self.adjacency.neighbors[positions])
                frontier = reached[~seen[reached]].astype(np.int64)
                seen[frontier] = True
                ordered.append(frontier)
            found = np.concatenate(ordered) if ordered else np.zeros(0, dtype=np.int64)
            self._candidates[key] = found
        return found[:limit]

    def computation_subgraph(self, seeds: np.ndarray, depth: int, fanout: int = 0,
                             generator: np.random.Generator | None = None) -> ComputationSubgraph:
        """The seeds' ``depth``-hop in-neighbourhood in hop order (module docstring); ``fanout`` > 0:
        at most that many in-edges per node and hop, sampled with ``generator``."""
        seeds = np.unique(np.asarray(seeds, dtype=np.int64))
        local = np.full(self.num_entities, -1, dtype=np.int64)
        local[seeds] = np.arange(len(seeds))
        nodes, nodes_per_hop = [seeds], [len(seeds)]
        sources, targets, types, edges_per_hop = [], [], [], []
        frontier, count = seeds, len(seeds)
        for _ in range(depth):
            if fanout > 0:
                rows, positions = sample_edges(self.adjacency, frontier, fanout,
                                               generator if generator is not None else np.random.default_rng(0))
            else:
                rows, positions = self._neighbours(frontier)
            source = self.adjacency.neighbors[positions].astype(np.int64)
            new = np.unique(source[local[source] < 0])
            local[new] = np.arange(count, count + len(new))
            count += len(new)
            sources.append(local[source])
            targets.append(local[frontier[rows]])
            types.append(self.adjacency.edge_type[positions].astype(np.int64))
            edges_per_hop.append(len(positions))
            nodes.append(new)
            nodes_per_hop.append(len(new))
            frontier = new
        edge_index = torch.from_numpy(np.stack([np.concatenate(sources or [np.zeros(0, np.int64)]),
                                                np.concatenate(targets or [np.zeros(0, np.int64)])]))
        edge_type = torch.from_numpy(np.concatenate(types or [np.zeros(0, np.int64)]))
        return ComputationSubgraph(np.concatenate(nodes), edge_index, edge_type, tuple(nodes_per_hop),
                                   tuple(edges_per_hop))
