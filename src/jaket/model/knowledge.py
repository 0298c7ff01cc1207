"""The knowledge module: a composition-based multi-relational graph attention network (Eq. 1-5).

For every edge ``u -> v`` of relation ``r`` the neighbour and the relation are composed,
``M_{u,r} = f(E_u, R_r)`` (Eq. 1, ``f`` = addition after TransE by default); head ``k`` scores the
edge with ``S = a^T [W^k E_v ⊕ W^k M_{u,r}]`` (Eq. 3), normalises ``LeakyReLU(S)`` over ``v``'s
sampled neighbours (Eq. 4), aggregates ``m_v^k = σ(Σ α W^k M_{u,r})`` (Eq. 2) and the layer
returns ``LayerNorm(⊕_k m_v^k + E_v)`` (Eq. 5). Relation embeddings are shared across layers.

Edge types follow the KG's adjacency (docs/design.md): ``type in [0, 2P)``, ``type >= P`` for an
edge seen from the triple's tail. The relation embedding of an edge is ``R[type % P] + D[type // P]``
with a learned two-row direction embedding ``D``; ``R`` itself comes from relation descriptions
(the relation context memory), so relations of an unseen KG work unchanged.

Cost: with ``f`` linear (``add``, ``sub``) ``W^k M = W^k E_u ± W^k R_r`` is computed per node and
per relation and only gathered per edge (and so is its attention half ``a^T W^k M``), so a layer
costs one ``n x F x F`` product, O((n + 2P) F^2 + e F), instead of O(e F^2); ``mult`` and ``mlp``
compose per edge. ``jaket bench model`` measures it (docs/performance.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import softmax

COMPOSITIONS = ("add", "sub", "mult", "mlp")
_ACTIVATIONS = {"elu": F.elu, "gelu": F.gelu, "relu": F.relu, "identity": lambda x: x}


class CompGATConv(MessagePassing):
    """One composition graph-attention layer (Eq. 1-5).

    Args:
        channels: F, the width of entity and relation embeddings (in = out, for the residual).
        heads: K attention heads, each of width ``F / K``; their outputs are concatenated.
        composition: ``f`` of Eq. 1: ``add`` (E + R), ``sub`` (E - R), ``mult`` (E * R) or
            ``mlp`` (a one-layer MLP over [E ⊕ R]).
        negative_slope: LeakyReLU slope of Eq. 4.
        activation: σ of Eq. 2 (``elu`` as in GAT; ``gelu``, ``relu``, ``identity``).
        dropout: dropout on the attention coefficients.

    ``forward(x (n, F), edge_index (2, e), edge_attr (e, F) or (relation_table (R, F), edge_rel (e,)))``
    where row 0 of ``edge_index`` is the neighbour ``u`` and row 1 the node ``v`` being updated.
    """

    def __init__(self, channels: int, heads: int = 8, composition: str = "add",
                 negative_slope: float = 0.2, activation: str = "elu", dropout: float = 0.0,
                 layer_norm_eps: float = 1e-12):
        super().__init__(aggr="add", node_dim=0)
        if channels % heads:
            raise ValueError(f"channels={channels} is not divisible by heads={heads}")
        if composition not in COMPOSITIONS:
            raise ValueError(f"unknown composition {composition!r}; choose from {COMPOSITIONS}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {sorted(_ACTIVATIONS)}")
        self.channels, self.heads, self.head_dim = channels, heads, channels // heads
        self.composition = composition
        self.negative_slope = negative_slope
        self.activation = activation
        self.dropout = dropout
        self.lin = nn.Linear(channels, channels, bias=False)  # the K matrices W^k side by side
        self.att_dst = nn.Parameter(torch.empty(1, heads, self.head_dim))  # a, the W^k E_v half
        self.att_src = nn.Parameter(torch.empty(1, heads, self.head_dim))  # a, the W^k M half
        self.compose_mlp = nn.Linear(2 * channels, channels) if composition == "mlp" else None
        self.norm = nn.LayerNorm(channels, eps=layer_norm_eps)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_dst)
        nn.init.xavier_uniform_(self.att_src)
        if self.compose_mlp is not None:
            self.compose_mlp.reset_parameters()
        self.norm.reset_parameters()

    # ------------------------------------------------------------------ Eq. 1
    def compose(self, entity: torch.Tensor, relation: torch.Tensor) -> torch.Tensor:
        """``M = f(E_u, R_r)`` (Eq. 1) for aligned rows."""
        if self.composition == "add":
            return entity + relation
        if self.composition == "sub":
            return entity - relation
        if self.composition == "mult":
            return entity * relation
        return torch.tanh(self.compose_mlp(torch.cat([entity, relation], dim=-1)))

    def _messages_and_scores(self, x, wx, edge_index, relation_table, edge_rel):
        """``W M_{u,r}`` (e, K, F/K) for every edge and its half ``a^T W M_{u,r}`` of Eq. 3, (e, K).

        For ``add``/``sub`` (``f`` linear) both are computed per node and per relation and only
        gathered per edge: ``W(E_u ± R_r) = W E_u ± W R_r`` and likewise the dot product with ``a``.
        ``index_select`` (not ``t[index]``) keeps the backward pass a fast ``index_add``.
        """
        src = edge_index[0]
        if self.composition in ("add", "sub"):
            wr = self.lin(relation_table).view(-1, self.heads, self.head_dim)
            if self.composition == "sub":
                wr = -wr
            msg = wx.index_select(0, src) + wr.index_select(0, edge_rel)
            score = (wx * self.att_src).sum(-1).index_select(0, src) + \
                (wr * self.att_src).sum(-1).index_select(0, edge_rel)
            return msg, score
        msg = self.lin(self.compose(x.index_select(0, src), relation_table.index_select(0, edge_rel)))
        msg = msg.view(-1, self.heads, self.head_dim)
        return msg, (msg * self.att_src).sum(-1)

    # ------------------------------------------------------------------ Eq. 2-5
    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr=None,
                return_attention_weights: bool = False):
        """Update every node from its incoming edges (Eq. 2-5).

        ``edge_attr``: the relation embedding of each edge ``(e, F)``, or a pair
        ``(relation_table (R, F), edge_rel (e,))`` to gather from (cheaper for ``add``/``sub``).
        With ``return_attention_weights`` also returns ``(edge_index, alpha (e, K))``.
        """
        n = x.size(0)
        if isinstance(edge_attr, tuple):
            relation_table, edge_rel = edge_attr
        else:
            if edge_attr is None:
                edge_attr = x.new_zeros(edge_index.size(1), self.channels)
            relation_table, edge_rel = edge_attr, torch.arange(edge_attr.size(0), device=x.device)
        we = self.lin(x).view(n, self.heads, self.head_dim)  # W^k E for every node, computed once
        wm, score_src = self._messages_and_scores(x, we, edge_index, relation_table, edge_rel)
        dst = edge_index[1]
        score = (we * self.att_dst).sum(-1).index_select(0, dst) + score_src  # Eq. 3, (e, K)
        alpha = softmax(F.leaky_relu(score, self.negative_slope), dst, num_nodes=n)  # Eq. 4
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        aggregated = self.propagate(edge_index, message_value=wm, alpha=alpha, size=(n, n))
        m = _ACTIVATIONS[self.activation](aggregated).reshape(n, self.channels)  # Eq. 2
        out = self.norm(m + x)  # Eq. 5
        if return_attention_weights:
            return out, (edge_index, alpha)
        return out

    def message(self, message_value: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        return message_value * alpha.unsqueeze(-1)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.channels}, heads={self.heads}, "
                f"composition={self.composition!r})")


class KnowledgeModule(nn.Module):
    """A stack of :class:`CompGATConv` layers with relation embeddings shared across layers.

    ``forward(x (n, F) = E^(0), edge_index (2, e), edge_type (e,) in [0, 2P), relations (P, F) = R)``
    returns ``E^KM`` (n, F). ``relations=None`` uses zero relation vectors (the paper pre-trains
    without relation embeddings, "for consideration of efficiency"); the direction embedding
    still tells forward from inverse edges.
    """

    def __init__(self, channels: int, num_layers: int = 2, heads: int = 8, composition: str = "add",
                 activation: str = "elu", dropout: float = 0.0, layer_norm_eps: float = 1e-12):
        super().__init__()
        self.channels = channels
        self.layers = nn.ModuleList(
            CompGATConv(channels, heads, composition, activation=activation, dropout=dropout,
                        layer_norm_eps=layer_norm_eps) for _ in range(num_layers))
        self.direction = nn.Embedding(2, channels)  # D: forward / inverse edge
        nn.init.normal_(self.direction.weight, std=0.02)

    def relation_table(self, relations: torch.Tensor | None, num_relations: int,
                       like: torch.Tensor) -> torch.Tensor:
        """The ``2P`` edge-type embeddings ``R[t % P] + D[t // P]``, (2P, F)."""
        if relations is None:
            relations = like.new_zeros(max(1, num_relations), self.channels)
        p = relations.size(0)
        return torch.cat([relations + self.direction.weight[0], relations + self.direction.weight[1]])[: 2 * p]

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor,
                relations: torch.Tensor | None = None, num_relations: int | None = None,
                hops: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> torch.Tensor:
        """``E^KM`` of every node, or with ``hops`` only of the seeds.

        ``hops = (nodes_per_hop, edges_per_hop)`` of a subgraph stored in hop order (as
        :func:`jaket.kg.sampling.sample_neighbors` returns it: seeds, then nodes first reached at hop
        1, 2, ...; edges of hop 1, hop 2, ...). A seed's output after L layers depends on layer
        ``l``'s outputs within ``L - l`` hops only, so layer ``l`` (0-based) reads the edges of hops
        ``1 .. L - l`` and updates only the nodes of hops ``0 .. L - l - 1`` (the idea of PyG's
        ``trim_to_layer``). The result, ``(nodes_per_hop[0], F)``, equals the seeds' rows of the
        untrimmed output exactly.
        """
        if relations is None:
            if num_relations is None:
                raise ValueError("without relation embeddings, pass num_relations (P) so that edge "
                                 "types [0, 2P) can be read as relation + direction")
            p = max(1, int(num_relations))
        else:
            p = relations.size(0)
        if edge_type.numel() and int(edge_type.max()) >= 2 * p:
            raise ValueError(f"edge type {int(edge_type.max())} outside [0, 2P) with P={p}")
        table = self.relation_table(relations, p, x)
        if hops is None:
            for layer in self.layers:
                x = layer(x, edge_index, (table, edge_type))
            return x
        nodes, edges = list(hops[0]), list(hops[1])
        depth = len(self.layers)
        nodes += [0] * (depth + 1 - len(nodes))
        edges += [0] * (depth - len(edges))
        for l, layer in enumerate(self.layers):
            reach = depth - l  # edges of hops 1..reach still matter
            e = sum(edges[:reach])
            updated = sum(nodes[:reach])  # nodes of hops 0..reach-1 (targets of those edges)
            sources = sum(nodes[:reach + 1])  # their sources lie up to one hop further out
            x = layer(x[:sources], edge_index[:, :e], (table, edge_type[:e]))[:updated]
        return x
