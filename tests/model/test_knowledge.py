"""The composition graph-attention layer and stack (Eq. 1-5)."""

import pytest
import torch
import torch.nn.functional as F

from jaket.model.knowledge import COMPOSITIONS, CompGATConv, KnowledgeModule


def _graph(n=7, e=20, p=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, n, (2, e), generator=g)
    edge_index[1, :n] = torch.arange(n)  # every node has at least one incoming edge
    edge_type = torch.randint(0, 2 * p, (e,), generator=g)
    return edge_index, edge_type


def _dense_reference(layer: CompGATConv, x, edge_index, rel):
    """Eq. 1-5 written node by node, head by head, with explicit loops and softmax."""
    n, f = x.shape
    k, d = layer.heads, layer.head_dim
    w = layer.lin.weight  # (F, F): rows [k*d:(k+1)*d] are W^k
    act = {"elu": F.elu, "identity": lambda t: t}[layer.activation]
    out = torch.zeros_like(x)
    for v in range(n):
        incoming = (edge_index[1] == v).nonzero().flatten().tolist()
        heads = []
        for h in range(k):
            wk = w[h * d:(h + 1) * d]
            wev = wk @ x[v]
            messages = [wk @ layer.compose(x[edge_index[0, i]], rel[i]) for i in incoming]  # Eq. 1
            if not messages:
                heads.append(act(torch.zeros(d)))
                continue
            scores = torch.stack([layer.att_dst[0, h] @ wev + layer.att_src[0, h] @ m for m in messages])  # Eq. 3
            alpha = torch.softmax(F.leaky_relu(scores, layer.negative_slope), 0)  # Eq. 4
            heads.append(act(sum(a * m for a, m in zip(alpha, messages))))  # Eq. 2
        out[v] = layer.norm(torch.cat(heads) + x[v])  # Eq. 5
    return out


@pytest.mark.parametrize("composition", COMPOSITIONS)
def test_layer_agrees_with_dense_reference(composition):
    torch.manual_seed(1)
    layer = CompGATConv(8, heads=2, composition=composition).eval()
    x = torch.randn(6, 8)
    edge_index, _ = _graph(n=6, e=14)
    edge_index[1, 5] = 4  # node 5 has no incoming edge only if none below point to it
    edge_index[1][edge_index[1] == 5] = 0
    rel = torch.randn(edge_index.size(1), 8)
    with torch.no_grad():
        got = layer(x, edge_index, rel)
        expected = _dense_reference(layer, x, edge_index, rel)
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_attention_sums_to_one_per_node_and_head():
    torch.manual_seed(0)
    layer = CompGATConv(16, heads=4)
    x = torch.randn(7, 16)
    edge_index, _ = _graph()
    _, (ei, alpha) = layer(x, edge_index, torch.randn(edge_index.size(1), 16), return_attention_weights=True)
    assert alpha.shape == (edge_index.size(1), 4)
    sums = torch.zeros(7, 4).index_add(0, ei[1], alpha)
    has_edges = torch.bincount(ei[1], minlength=7) > 0
    assert torch.allclose(sums[has_edges], torch.ones(int(has_edges.sum()), 4), atol=1e-6)
    assert (alpha >= 0).all()


def test_permuting_nodes_permutes_the_output():
    torch.manual_seed(0)
    km = KnowledgeModule(16, num_layers=2, heads=4).eval()
    x = torch.randn(7, 16)
    edge_index, edge_type = _graph()
    relations = torch.randn(3, 16)
    perm = torch.randperm(7)
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(7)
    with torch.no_grad():
        out = km(x, edge_index, edge_type, relations)
        out_perm = km(x[perm], inverse[edge_index], edge_type, relations)
    assert torch.allclose(out_perm, out[perm], atol=1e-5)


def test_gradients_reach_relation_embeddings_and_direction():
    torch.manual_seed(0)
    km = KnowledgeModule(16, num_layers=2, heads=4)
    x = torch.randn(7, 16)
    edge_index, edge_type = _graph()
    relations = torch.randn(3, 16, requires_grad=True)
    km(x, edge_index, edge_type, relations).pow(2).sum().backward()
    assert relations.grad is not None and relations.grad.abs().sum() > 0
    assert km.direction.weight.grad.abs().sum() > 0
    for layer in km.layers:
        assert layer.lin.weight.grad.abs().sum() > 0


def test_relation_embedding_is_shared_and_direction_matters():
    """Edge type t uses R[t % P] + D[t // P]: the same relation seen from the other end differs."""
    torch.manual_seed(0)
    km = KnowledgeModule(8, num_layers=1, heads=2).eval()
    x = torch.randn(2, 8)
    relations = torch.randn(2, 8)
    edge_index = torch.tensor([[1], [0]])
    with torch.no_grad():
        forward = km(x, edge_index, torch.tensor([1]), relations)
        inverse = km(x, edge_index, torch.tensor([3]), relations)
        table = km.relation_table(relations, 2, x)
    assert not torch.allclose(forward[0], inverse[0])
    assert torch.allclose(table[3], relations[1] + km.direction.weight[1])


def test_stack_without_relation_memory_needs_the_relation_count():
    km = KnowledgeModule(8, num_layers=1, heads=2)
    x = torch.randn(3, 8)
    edge_index, edge_type = torch.tensor([[0, 1], [1, 2]]), torch.tensor([0, 5])
    with pytest.raises(ValueError, match="num_relations"):
        km(x, edge_index, edge_type)
    assert km(x, edge_index, edge_type, num_relations=3).shape == (3, 8)
    with pytest.raises(ValueError, match="outside"):
        km(x, edge_index, edge_type, num_relations=2)


def test_bad_configuration_is_rejected():
    with pytest.raises(ValueError, match="divisible"):
        CompGATConv(10, heads=4)
    with pytest.raises(ValueError, match="composition"):
        CompGATConv(8, heads=2, composition="concat")


@pytest.mark.parametrize("fanouts,layers", [((3, 3), 2), ((4,), 2), ((2, 2, 2), 2), ((3, 3), 1)])
def test_trimmed_layers_give_the_seeds_exactly_the_untrimmed_output(fanouts, layers):
    """Restricting layer l to the nodes within L - l hops of the seeds changes no seed's E^KM."""
    import numpy as np

    from jaket.kg.sampling import sample_neighbors
    from jaket.kg.toy import synthetic_kg

    kg = synthetic_kg(400, 3000, num_relations=4, seed=2)
    subgraph = sample_neighbors(kg, np.array([5, 17, 17, 300, 42]), fanouts, np.random.default_rng(1))
    assert sum(subgraph.nodes_per_hop) == subgraph.num_nodes
    assert sum(subgraph.edges_per_hop) == subgraph.num_edges
    torch.manual_seed(0)
    km = KnowledgeModule(16, num_layers=layers, heads=4).eval()
    x = torch.randn(subgraph.num_nodes, 16)
    relations = torch.randn(4, 16)
    with torch.no_grad():
        full = km(x, subgraph.edge_index, subgraph.edge_type, relations)
        trimmed = km(x, subgraph.edge_index, subgraph.edge_type, relations,
                     hops=(subgraph.nodes_per_hop, subgraph.edges_per_hop))
    assert trimmed.shape == (subgraph.num_seeds, 16)
    assert torch.allclose(trimmed, full[:subgraph.num_seeds], atol=1e-5)
