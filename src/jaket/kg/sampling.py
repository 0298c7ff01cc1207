"""Vectorised k-hop fixed fan-out neighbour sampling and random walks.

The knowledge module runs on a sampled subgraph around the entities of a batch (paper: 10
neighbours per hop, 2 hops), and pre-training draws root entities and random-walks from them
(section "Pre-training"). Everything here works on whole frontiers at once with numpy: no Python
loop runs per node.

Sampling without replacement of ``k`` of the ``d > k`` edges of every frontier node uses Robert
Floyd's algorithm, vectorised over the frontier: ``k`` steps, each drawing one integer per row and
checking it against the at most ``k`` already chosen in that row; it yields a uniformly random
``k``-subset in O(k^2) per row whatever the degree. Rows whose edges are partly hidden by
``exclude_triples`` are sampled by random keys over their visible edges instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from jaket.kg.graph import CSRAdjacency, KnowledgeGraph


@dataclass
class Subgraph:
    """A sampled subgraph ready for torch_geometric (see docs/design.md, "Contracts").

    ``edge_index`` row 0 is the source (the sampled neighbour ``u``), row 1 the target (``v``,
    the node whose neighbourhood was sampled); both are local indices into ``node_ids``.
    """

    node_ids: torch.Tensor  # (n,) global entity indices, unique seeds first
    num_seeds: int
    seed_local: torch.Tensor  # (S,) local index of every seed passed in
    edge_index: torch.Tensor  # (2, e) local indices
    edge_type: torch.Tensor  # (e,) in [0, 2P)
    triple_id: torch.Tensor  # (e,)
    #: nodes first reached at each hop (``[0]`` = the unique seeds) and edges sampled at each hop;
    #: nodes and edges are stored in this hop order, which lets the knowledge module skip work
    #: the seeds do not need (``KnowledgeModule.forward(..., hops=...)``)
    nodes_per_hop: tuple[int, ...] | None = None
    edges_per_hop: tuple[int, ...] | None = None
    #: :meth:`KnowledgeGraph.fingerprint` of the graph it was sampled from: the model checks it
    #: against the KG its entity context memory describes (None = not known, not checked)
    kg_fingerprint: str | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.numel())

    @property
    def num_edges(self) -> int:
        return int(self.edge_type.numel())

    def _map(self, move) -> "Subgraph":
        return Subgraph(move(self.node_ids), self.num_seeds, move(self.seed_local),
                        move(self.edge_index), move(self.edge_type), move(self.triple_id),
                        self.nodes_per_hop, self.edges_per_hop, self.kg_fingerprint)

    def to(self, device, non_blocking: bool = False) -> "Subgraph":
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> "Subgraph":
        """A copy in pinned host memory (what a DataLoader with ``pin_memory=True`` calls)."""
        return self._map(torch.Tensor.pin_memory)


def _ragged_arange(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows with ``counts[i]`` items from ``starts[i]``: (row of each item, position)."""
    counts = counts.astype(np.int64, copy=False)
    total = int(counts.sum())
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) - first[rows] + starts.astype(np.int64)[rows]
    return rows, positions


def _floyd_sample(starts: np.ndarray, degrees: np.ndarray, k: int,
                  generator: np.random.Generator) -> np.ndarray:
    """(R, k) CSR positions: a uniformly random k-subset of every row's ``degrees[i] > k`` edges."""
    rows = len(starts)
    chosen = np.empty((rows, k), dtype=np.int64)
    uniform = generator.random((rows, k))
    degrees = degrees.astype(np.int64, copy=False)
    for m in range(k):
        j = degrees - k + m  # Floyd: draw t in [0, j]; if taken, take j itself
        t = np.minimum((uniform[:, m] * (j + 1)).astype(np.int64), j)
        taken = (chosen[:, :m] == t[:, None]).any(axis=1) if m else np.zeros(rows, dtype=bool)
        chosen[:, m] = np.where(taken, j, t)
    return chosen + starts.astype(np.int64)[:, None]


def _random_key_sample(starts: np.ndarray, degrees: np.ndarray, k: int, hidden: np.ndarray,
                       generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Up to k visible edges per row (random-key top-k); returns (row, position) of each pick."""
    rows, positions = _ragged_arange(starts, degrees)
    visible = ~hidden[positions]
    rows, positions = rows[visible], positions[visible]
    keys = generator.random(len(positions))
    order = np.lexsort((keys, rows))
    rows, positions = rows[order], positions[order]
    counts = np.bincount(rows, minlength=len(starts))
    first = np.cumsum(counts) - counts
    rank = np.arange(len(rows)) - first[rows]
    keep = rank < k
    return rows[keep], positions[keep]


def sample_edges(adjacency: CSRAdjacency, frontier: np.ndarray, fanout: int,
                 generator: np.random.Generator,
                 hidden_edges: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample up to ``fanout`` edges of every frontier node, without replacement.

    Returns ``(row, position)``: the frontier row each sampled edge belongs to and its CSR position,
    grouped by row in frontier order. ``hidden_edges`` is a sorted array of CSR positions that must
    not be sampled.
    """
    frontier = np.asarray(frontier, dtype=np.int64)
    starts = adjacency.indptr[frontier]
    degrees = adjacency.indptr[frontier + 1] - starts
    affected = np.zeros(len(frontier), dtype=bool)
    if hidden_edges is not None and len(hidden_edges):
        hidden_rows = np.searchsorted(adjacency.indptr, hidden_edges, side="right") - 1
        affected = np.isin(frontier, hidden_rows)
    small = (degrees <= fanout) & ~affected
    large = (degrees > fanout) & ~affected
    parts_row, parts_pos = [], []
    idx_small = np.flatnonzero(small)
    rows, positions = _ragged_arange(starts[idx_small], degrees[idx_small])
    parts_row.append(idx_small[rows])
    parts_pos.append(positions)
    idx_large = np.flatnonzero(large)
    if len(idx_large) and fanout > 0:
        chosen = _floyd_sample(starts[idx_large], degrees[idx_large], fanout, generator)
        parts_row.append(np.repeat(idx_large, fanout))
        parts_pos.append(chosen.reshape(-1))
    idx_affected = np.flatnonzero(affected)
    if len(idx_affected):
        mask = np.zeros(adjacency.num_edges, dtype=bool)
        mask[hidden_edges] = True
        rows, positions = _random_key_sample(starts[idx_affected], degrees[idx_affected], fanout,
                                             mask, generator)
        parts_row.append(idx_affected[rows])
        parts_pos.append(positions)
    row = np.concatenate(parts_row)
    position = np.concatenate(parts_pos)
    order = np.argsort(row, kind="stable")
    return row[order], position[order]


class _LocalIndex:
    """Global entity index -> local subgraph index, assigned in first-seen order."""

    def __init__(self, num_entities: int):
        self.local_of = np.full(num_entities, -1, dtype=np.int64)
        self.parts: list[np.ndarray] = []
        self.count = 0

    def add(self, candidates: np.ndarray) -> np.ndarray:
        """Give the not-yet-seen candidates the next local indices (first occurrence order);
        return those newly added global indices."""
        unseen = candidates[self.local_of[candidates] < 0]
        if not len(unseen):
            return unseen
        _, first = np.unique(unseen, return_index=True)
        fresh = unseen[np.sort(first)]
        self.local_of[fresh] = np.arange(self.count, self.count + len(fresh))
        self.parts.append(fresh)
        self.count += len(fresh)
        return fresh

    def nodes(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.int64)


def _entity_indices(values, kg: KnowledgeGraph, what: str) -> np.ndarray:
    """``values`` as a flat int64 array of entity indices (``IndexError`` naming ``what`` when one
    lies outside ``[0, num_entities)``)."""
    indices = np.asarray(values, dtype=np.int64).reshape(-1)
    if len(indices) and (indices.min() < 0 or indices.max() >= kg.num_entities):
        raise IndexError(f"{what} index outside [0, num_entities)")
    return indices


def sample_neighbors(kg: KnowledgeGraph, seeds, fanouts: Sequence[int] = (10, 10),
                     generator: np.random.Generator | None = None,
                     exclude_triples=None) -> Subgraph:
    """k-hop fixed fan-out neighbour sampling around ``seeds`` (global entity indices).

    Hop 1 samples up to ``fanouts[0]`` edges of each unique seed (without replacement when the
    degree allows), hop ``i`` up to ``fanouts[i - 1]`` edges of each node first reached at hop
    ``i - 1``. Every edge points toward the node that asked for it (``edge_index[1]``), with its
    direction-aware type in ``[0, 2P)``. Triples listed in ``exclude_triples`` are invisible.
    The same generator state gives the same subgraph.
    """
    generator = generator if generator is not None else np.random.default_rng()
    adjacency = kg.adjacency
    seeds = _entity_indices(seeds, kg, "seed")
    hidden = None
    if exclude_triples is not None:
        exclude = np.unique(np.asarray(exclude_triples, dtype=np.int64).reshape(-1))
        if len(exclude):
            if exclude[0] < 0 or exclude[-1] >= kg.num_triples:
                raise IndexError("exclude_triples holds an index outside [0, num_triples)")
            hidden = np.sort(adjacency.edge_positions_of_triples(kg.num_relations)[exclude].reshape(-1))
    index = _LocalIndex(kg.num_entities)
    frontier = index.add(seeds)
    num_seeds = index.count
    sources, targets, positions = [], [], []
    nodes_per_hop, edges_per_hop = [num_seeds], []
    for fanout in fanouts:
        if not len(frontier):
            nodes_per_hop.append(0)
            edges_per_hop.append(0)
            continue
        row, position = sample_edges(adjacency, frontier, int(fanout), generator, hidden)
        neighbours = adjacency.neighbors[position].astype(np.int64)
        targets.append(frontier[row])
        sources.append(neighbours)
        positions.append(position)
        frontier = index.add(neighbours)
        nodes_per_hop.append(len(frontier))
        edges_per_hop.append(len(position))
    if positions:
        position = np.concatenate(positions)
        edge_index = index.local_of[np.stack([np.concatenate(sources), np.concatenate(targets)])]
    else:
        position = np.zeros(0, dtype=np.int64)
        edge_index = np.zeros((2, 0), dtype=np.int64)
    return Subgraph(
        node_ids=torch.from_numpy(index.nodes()),
        num_seeds=num_seeds,
        seed_local=torch.from_numpy(index.local_of[seeds]),
        edge_index=torch.from_numpy(edge_index),
        edge_type=torch.from_numpy(adjacency.edge_type[position].astype(np.int64)),
        triple_id=torch.from_numpy(adjacency.triple_id[position].astype(np.int64)),
        nodes_per_hop=tuple(nodes_per_hop),
        edges_per_hop=tuple(edges_per_hop),
        kg_fingerprint=kg.fingerprint(),
    )


def random_walks(kg: KnowledgeGraph, roots, length: int,
                 generator: np.random.Generator | None = None) -> np.ndarray:
    """Uniform random walks over both edge directions: ``(R, length + 1)`` int64, column 0 the roots.

    A walk that reaches an entity without edges stops; the rest of its row is ``-1``.
    """
    generator = generator if generator is not None else np.random.default_rng()
    adjacency = kg.adjacency
    roots = _entity_indices(roots, kg, "root")
    walks = np.full((len(roots), length + 1), -1, dtype=np.int64)
    walks[:, 0] = roots
    current = roots.copy()
    for step in range(1, length + 1):
        alive = current >= 0
        safe = np.where(alive, current, 0)
        starts = adjacency.indptr[safe]
        degrees = np.where(alive, adjacency.indptr[safe + 1] - starts, 0)
        pick = (generator.random(len(current)) * degrees).astype(np.int64)
        moving = degrees > 0
        nxt = np.full(len(current), -1, dtype=np.int64)
        nxt[moving] = adjacency.neighbors[starts[moving] + np.minimum(pick[moving], degrees[moving] - 1)]
        walks[:, step] = nxt
        current = nxt
    return walks
