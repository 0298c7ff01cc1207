"""Neighbour sampling and random walks: properties on random graphs, and uniformity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sampling import random_walks, sample_neighbors
from jaket.kg.toy import synthetic_kg

from .conftest import knowledge_graphs


@st.composite
def sampling_cases(draw):
    kg = draw(knowledge_graphs(max_entities=15, max_triples=60))
    seeds = draw(st.lists(st.integers(0, kg.num_entities - 1), min_size=1, max_size=6))
    fanouts = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    exclude = draw(st.lists(st.integers(0, max(kg.num_triples - 1, 0)), max_size=8)) \
        if kg.num_triples else []
    seed = draw(st.integers(0, 2**32 - 1))
    return kg, seeds, fanouts, exclude, seed


def _visible_degree(kg: KnowledgeGraph, node: int, exclude: set[int]) -> int:
    adjacency = kg.adjacency
    span = adjacency.triple_id[adjacency.indptr[node]:adjacency.indptr[node + 1]]
    return int(sum(int(t) not in exclude for t in span))


@settings(max_examples=150, deadline=None)
@given(sampling_cases())
def test_sampled_subgraph_properties(case):
    kg, seeds, fanouts, exclude, seed = case
    sub = sample_neighbors(kg, seeds, fanouts, np.random.default_rng(seed), exclude_triples=exclude)
    nodes = sub.node_ids.numpy()
    p = kg.num_relations
    # nodes: unique, unique seeds first in first-seen order, seed_local points back to the seeds
    assert len(set(nodes.tolist())) == len(nodes)
    assert nodes[:sub.num_seeds].tolist() == list(dict.fromkeys(seeds))
    assert nodes[sub.seed_local.numpy()].tolist() == seeds
    source, target = sub.edge_index.numpy()
    types, triple_ids = sub.edge_type.numpy(), sub.triple_id.numpy()
    assert set(triple_ids.tolist()).isdisjoint(exclude)
    # every sampled edge is an edge of the KG, with its type and direction
    for u, v, kind, triple in zip(nodes[source], nodes[target], types, triple_ids):
        h, r, t = kg.triples[triple]
        assert (v, kind, u) == ((h, r, t) if kind < p else (t, r + p, h))
    # hop by hop: each frontier node gets min(visible degree, fan-out) distinct edges
    hop_of = {int(n): 0 for n in nodes[:sub.num_seeds]}
    frontier = list(nodes[:sub.num_seeds])
    for hop, fanout in enumerate(fanouts, start=1):
        next_frontier = []
        for v in frontier:
            local_v = int(np.flatnonzero(nodes == v)[0])
            mine = np.flatnonzero(target == local_v)
            assert len(mine) == min(fanout, _visible_degree(kg, int(v), set(exclude)))
            edges = list(zip(triple_ids[mine].tolist(), types[mine].tolist()))
            assert len(set(edges)) == len(edges)  # without replacement
            for u in nodes[source[mine]]:
                if int(u) not in hop_of:
                    hop_of[int(u)] = hop
                    next_frontier.append(u)
        frontier = next_frontier
    assert set(hop_of) == set(nodes.tolist())
    # and exactly in first-seen order
    assert nodes.tolist() == list(hop_of)


@settings(max_examples=40, deadline=None)
@given(sampling_cases())
def test_same_seed_same_sample(case):
    kg, seeds, fanouts, exclude, seed = case
    a = sample_neighbors(kg, seeds, fanouts, np.random.default_rng(seed), exclude_triples=exclude)
    b = sample_neighbors(kg, seeds, fanouts, np.random.default_rng(seed), exclude_triples=exclude)
    for name in ("node_ids", "seed_local", "edge_index", "edge_type", "triple_id"):
        assert getattr(a, name).equal(getattr(b, name))
    assert a.num_seeds == b.num_seeds


@pytest.mark.parametrize("exclude", [None, [0, 5]])
def test_sampling_is_uniform_without_replacement(make_kg, exclude):
    kg = make_kg([""] * 21, triples=[(0, 0, i) for i in range(1, 21)])  # a hub and its 20 neighbours
    rng = np.random.default_rng(1)
    counts = np.zeros(kg.num_triples)
    rounds = 3000
    for _ in range(rounds):
        sub = sample_neighbors(kg, [0], (5,), rng, exclude_triples=exclude)
        counts[sub.triple_id.numpy()] += 1
    visible = 20 - (0 if exclude is None else len(exclude))
    expected = rounds * 5 / visible
    if exclude is not None:
        assert counts[exclude].sum() == 0
        counts = np.delete(counts, exclude)
    # binomial sd ~ sqrt(3000 * 0.25 * 0.75) ~ 24; allow 5 sd
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))


def test_seeds_out_of_range_raise(toy):
    kg, _ = toy
    with pytest.raises(IndexError):
        sample_neighbors(kg, [kg.num_entities], (2,), np.random.default_rng(0))
    with pytest.raises(IndexError):
        sample_neighbors(kg, [0], (2,), np.random.default_rng(0), exclude_triples=[kg.num_triples])


def test_sampling_at_scale_keeps_fanout():
    kg = synthetic_kg(5000, 50000, seed=3)
    sub = sample_neighbors(kg, np.arange(0, 5000, 7), (10, 10), np.random.default_rng(0))
    per_target = np.bincount(sub.edge_index[1].numpy(), minlength=sub.num_nodes)
    assert per_target.max() == 10
    degree = kg.degree()[sub.node_ids.numpy()]
    seeds = sub.num_seeds
    assert np.array_equal(per_target[:seeds], np.minimum(degree[:seeds], 10))


@settings(max_examples=60, deadline=None)
@given(knowledge_graphs(), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_random_walks_follow_edges(kg, length, seed):
    roots = np.arange(kg.num_entities)
    walks = random_walks(kg, roots, length, np.random.default_rng(seed))
    assert walks.shape == (kg.num_entities, length + 1) and walks.dtype == np.int64
    assert np.array_equal(walks[:, 0], roots)
    neighbours = {(int(h), int(t)) for h, _, t in kg.triples} | {(int(t), int(h)) for h, _, t in kg.triples}
    degree = kg.degree()
    for walk in walks:
        for a, b in zip(walk, walk[1:]):
            if a < 0:
                assert b == -1
            elif b < 0:
                assert degree[a] == 0
            else:
                assert (int(a), int(b)) in neighbours
    again = random_walks(kg, roots, length, np.random.default_rng(seed))
    assert np.array_equal(walks, again)
