"""A KG to and from the graph libraries its users have: PyKEEN's TriplesFactory and PyG's Data,
both without loss (names, descriptions, aliases, categories and triple order kept)."""

import numpy as np
import pytest
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.toy import toy_kg


@pytest.fixture
def kg():
    graph, _ = toy_kg()
    graph.entity_aliases[3] = ["an alias", "another"]  # something PyKEEN and PyG have no field for
    return graph


def test_pykeen_round_trip_is_lossless(kg):
    factory = kg.to_triples_factory()
    assert factory.num_triples == kg.num_triples and factory.entity_to_id[kg.entity_ids[5]] == 5
    back = KnowledgeGraph.from_triples_factory(factory)
    assert back == kg and back.entity_aliases[3] == ["an alias", "another"]
    # a factory from elsewhere (no jaket metadata): readable labels as names, as before
    from pykeen.triples import TriplesFactory

    plain = TriplesFactory.from_labeled_triples(np.array([["big_cat", "eats", "small_dog"]]))
    other = KnowledgeGraph.from_triples_factory(plain)
    assert other.entity_names == ["big cat", "small dog"] and other.triples.tolist() == [[0, 0, 1]]


def test_to_pyg_gives_a_data_a_gnn_runs_on_and_back(kg):
    from torch_geometric.nn import RGCNConv

    data = kg.to_pyg()
    assert data.num_nodes == kg.num_entities and data.edge_index.shape == (2, 2 * kg.num_triples)
    assert int(data.edge_type.max()) == 2 * kg.num_relations - 1 and data.num_relations == kg.num_relations
    assert data.y.tolist() == kg.entity_category.tolist() and data.entity_names == list(kg.entity_names)
    h, r, t = kg.triples[0]
    assert data.edge_index[:, 0].tolist() == [t, h] and int(data.edge_type[0]) == r  # message t -> h
    out = RGCNConv(8, 4, num_relations=2 * kg.num_relations)(torch.randn(data.num_nodes, 8), data.edge_index,
                                                              data.edge_type)
    assert out.shape == (kg.num_entities, 4)
    assert KnowledgeGraph.from_pyg(data) == kg


def test_a_plain_pyg_graph_reads_each_edge_as_a_triple():
    from torch_geometric.data import Data

    data = Data(edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]]), edge_type=torch.tensor([0, 1, 1]),
                y=torch.tensor([2, -1, 0, -1]), num_nodes=4)
    kg = KnowledgeGraph.from_pyg(data, relation_names=["parent of", "likes"])
    assert kg.triples.tolist() == [[0, 0, 1], [1, 1, 2], [2, 1, 0]]
    assert kg.relation_names == ["parent of", "likes"] and kg.category_names == ["0", "2"]
    assert kg.entity_category.tolist() == [1, -1, 0, -1] and kg.num_entities == 4
    with pytest.raises(ValueError, match="relation_names has 1 names, edge_type goes up to 1"):
        KnowledgeGraph.from_pyg(data, relation_names=["parent of"])
