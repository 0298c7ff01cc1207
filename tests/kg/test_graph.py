"""KnowledgeGraph: CSR adjacency in both directions, id maps, derived graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaket.kg.graph import KnowledgeGraph

from .conftest import knowledge_graphs


@settings(max_examples=60, deadline=None)
@given(knowledge_graphs())
def test_csr_holds_every_triple_once_per_direction(kg: KnowledgeGraph):
    adjacency = kg.adjacency
    p = kg.num_relations
    assert adjacency.indptr[0] == 0 and adjacency.indptr[-1] == 2 * kg.num_triples
    assert np.all(np.diff(adjacency.indptr) >= 0)
    owner = np.repeat(np.arange(kg.num_entities), np.diff(adjacency.indptr))
    seen = []
    for position in range(adjacency.num_edges):
        v, u = owner[position], adjacency.neighbors[position]
        kind, triple = adjacency.edge_type[position], adjacency.triple_id[position]
        h, r, t = kg.triples[triple]
        if kind < p:
            assert (v, kind, u) == (h, r, t)
        else:
            assert (v, kind - p, u) == (t, r, h)
        seen.append((int(triple), bool(kind >= p)))
    assert sorted(seen) == sorted((i, d) for i in range(kg.num_triples) for d in (False, True))
    positions = adjacency.edge_positions_of_triples(p)
    assert np.all(adjacency.triple_id[positions] == np.arange(kg.num_triples)[:, None])
    assert np.all(adjacency.edge_type[positions[:, 0]] < p)
    assert np.all(adjacency.edge_type[positions[:, 1]] >= p)
    assert np.array_equal(kg.degree(), np.bincount(kg.triples[:, [0, 2]].reshape(-1),
                                                   minlength=kg.num_entities))


@settings(max_examples=60, deadline=None)
@given(knowledge_graphs(), st.data())
def test_edge_index_is_the_adjacency_in_pyg_order(kg: KnowledgeGraph, data):
    """Row 0 sends, row 1 is updated: the same edges as the CSR table (neighbour -> entity,
    type), in triple order, forward edges first; a mask keeps the edges of its triples only."""
    edge_index, edge_type = kg.edge_index()
    assert edge_index.dtype == edge_type.dtype == np.int64
    assert edge_index.shape == (2, 2 * kg.num_triples) and edge_type.shape == (2 * kg.num_triples,)
    adjacency = kg.adjacency
    owner = np.repeat(np.arange(kg.num_entities), np.diff(adjacency.indptr))
    csr = sorted(zip(adjacency.neighbors.tolist(), owner.tolist(), adjacency.edge_type.tolist()))
    assert sorted(zip(*edge_index.tolist(), edge_type.tolist())) == csr
    p, t = kg.num_relations, kg.num_triples
    h, r, tail = (kg.triples[:, k].astype(np.int64) for k in range(3))
    assert np.array_equal(edge_index[:, :t], np.stack([tail, h]))
    assert np.array_equal(edge_index[:, t:], np.stack([h, tail]))
    assert np.array_equal(edge_type, np.concatenate([r, r + p]))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=t, max_size=t)), dtype=bool)
    kept_index, kept_type = kg.edge_index(mask)
    expected_index, expected_type = kg.drop_triples(~mask).edge_index()
    assert np.array_equal(kept_index, expected_index) and np.array_equal(kept_type, expected_type)
    with pytest.raises(ValueError, match="triple_mask has"):
        kg.edge_index(np.ones(t + 1, dtype=bool))



def test_id_maps(toy):
    kg, _ = toy
    for i, entity_id in enumerate(kg.entity_ids):
        assert kg.entity_index(entity_id) == i
    assert kg.relation_ids[kg.relation_index("eats")] == "eats"
    with pytest.raises(KeyError, match="unicorn"):
        kg.entity_index("unicorn")
    with pytest.raises(KeyError, match="flies"):
        kg.relation_index("flies")


def test_induced_subgraph_keeps_only_inner_triples(toy):
    kg, _ = toy
    keep = [kg.entity_index(e) for e in ("dog", "cat", "mammal", "meat", "house", "lion")]
    sub, old_of_new = kg.induced_subgraph(keep)
    assert sorted(keep) == old_of_new.tolist()
    assert sub.entity_ids == [kg.entity_ids[i] for i in old_of_new]
    assert sub.category_names == kg.category_names and sub.relation_ids == kg.relation_ids
    assert np.array_equal(sub.entity_category, kg.entity_category[old_of_new])
    expected = {(kg.entity_ids[h], r, kg.entity_ids[t]) for h, r, t in kg.triples.tolist()
                if h in keep and t in keep}
    got = {(sub.entity_ids[h], r, sub.entity_ids[t]) for h, r, t in sub.triples.tolist()}
    assert got == expected and len(got) > 0
    assert ("lion", kg.relation_index("eats"), "cow") not in got  # cow is outside
    # ids are read as entity_indices reads them; an unknown id or an index past the KG is named
    by_id, _ = kg.induced_subgraph(["dog", "cat", "mammal", "meat", "house", "lion"])
    assert by_id.entity_ids == sub.entity_ids and np.array_equal(by_id.triples, sub.triples)
    with pytest.raises(ValueError, match="unknown entity id 'unicorn'"):
        kg.induced_subgraph(["dog", "unicorn"])
    with pytest.raises(ValueError, match=f"entity index {kg.num_entities} is out of range"):
        kg.induced_subgraph([0, kg.num_entities])


def test_drop_triples(toy):
    kg, _ = toy
    mask = np.zeros(kg.num_triples, dtype=bool)
    mask[::3] = True
    dropped = kg.drop_triples(mask)
    assert dropped.num_entities == kg.num_entities
    assert np.array_equal(dropped.triples, kg.triples[~mask])
    assert dropped.adjacency.num_edges == 2 * int((~mask).sum())
    with pytest.raises(ValueError):
        kg.drop_triples(mask[:-1])
    numbers = np.zeros(kg.num_triples, dtype=np.int64)  # triple numbers, not a mask: refused, not read as bools
    with pytest.raises(TypeError, match="one bool per triple"):
        kg.drop_triples(numbers)


def test_bad_tables_are_rejected(toy):
    kg, _ = toy
    with pytest.raises(ValueError, match="entity index"):
        KnowledgeGraph(kg.entity_ids, kg.entity_names, kg.entity_descriptions, kg.entity_aliases,
                       kg.entity_category, kg.category_names, kg.relation_ids, kg.relation_names,
                       kg.relation_descriptions, np.array([[0, 0, kg.num_entities]]))
    with pytest.raises(ValueError, match="sorted"):
        KnowledgeGraph(kg.entity_ids, kg.entity_names, kg.entity_descriptions, kg.entity_aliases,
                       kg.entity_category, kg.category_names[::-1], kg.relation_ids,
                       kg.relation_names, kg.relation_descriptions, kg.triples)


def test_tables_given_the_wrong_way_are_refused(make_kg):
    """What the length checks missed: aliases given as one string per entity (linked character by
    character), a table given as one string, an id given twice (its lookup gave the last), (T, 2)
    triples (reshaped into other triples) and non-integer indices (0.7 read as entity 0)."""
    def build(**changes):
        values = dict(entity_ids=["e0", "e1", "e2"], entity_names=["dog", "cat", "cow"],
                      entity_descriptions=["a dog", "a cat", "a cow"], entity_aliases=[[], [], []],
                      entity_category=np.full(3, -1), category_names=[], relation_ids=["r"], relation_names=["r"],
                      relation_descriptions=["r"], triples=np.array([[0, 0, 1]]))
        return KnowledgeGraph(**{**values, **changes})

    with pytest.raises(TypeError, match=r"entity_aliases\[0\]: give a list of aliases \(\['hound'\]\)"):
        build(entity_aliases=["hound", "kitty", "heifer"])
    with pytest.raises(TypeError, match="entity_names: give a list with one entry per row, not one string"):
        build(entity_names="abc")
    with pytest.raises(ValueError, match="entity_ids: entity id 'e0' is given twice"):
        build(entity_ids=["e0", "e1", "e0"])
    with pytest.raises(ValueError, match="relation_ids: relation id 'r' is given twice"):
        build(relation_ids=["r", "r"], relation_names=["r", "s"], relation_descriptions=["r", "s"])
    for triples in ([[0, 1], [1, 2], [2, 0]], [[0, 1], [1, 2]]):
        with pytest.raises(ValueError, match=r"triples: expected \(T, 3\) rows .* got shape \(\d, 2\)"):
            build(triples=np.array(triples))
    for value in (0.7, np.nan):
        with pytest.raises(ValueError, match=f"triples: the indices must be integers, got {value}"):
            build(triples=np.array([[value, 0, 1]]))
    # what was valid stays valid: no triple, whole floats, a flat list of triples, lists of aliases
    assert build(triples=()).num_triples == 0
    assert build(triples=np.array([[0.0, 0.0, 2.0]])).triples.tolist() == [[0, 0, 2]]
    assert build(triples=[0, 0, 1, 1, 0, 2]).triples.tolist() == [[0, 0, 1], [1, 0, 2]]
    assert build(entity_aliases=[["hound"], [], []]).entity_aliases[0] == ["hound"]
    assert make_kg(["a", "b"], triples=[(0, 0, 1)]).num_triples == 1
