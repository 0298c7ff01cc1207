"""The link-prediction model and its frozen-memory training (:mod:`jaket.tasks.link_prediction`).

:class:`LinkScorer`: entity embeddings from LM1's description memory (Eq. 7) through the KM over
the training triples (Eq. 1-5), relation embeddings a learned map of the relation-description
memory, and a scoring function (``distmult``, ``transe``, ``rotate``). :func:`train_scorer`
trains it on a fixed memory, one sampled subgraph per step with the batch's own triples hidden.
The comparison of settings (:mod:`jaket.tasks.link_prediction`), the encoder-training mode
(:mod:`jaket.tasks.link_training`) and the fine-tuned model (:mod:`jaket.tasks.link_predictor`)
import this module; it imports none of them.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sampling import sample_neighbors
from jaket.tasks.training import fine_tuning_step
from jaket.tasks.settings import METRICS, LinkPredictionConfig
from jaket.tasks.variants import Backbone, FrozenMemory


class LinkScorer(nn.Module):
    """Entity encoder (KM over the training graph, or a projection of frozen LM features) +
    relation projection + one scoring function.

    ``metric="native"`` scores with the scorer's own function (module docstring; the frozen-memory
    mode). ``metric="cosine"`` (the trained-encoder mode, :mod:`jaket.tasks.link_training`) scores
    ``cos(q, e)`` between a query ``q`` and a candidate entity ``e``: ``q = h + r`` (TransE),
    ``h o r`` (DistMult) or ``h o e^{i theta_r}`` (RotatE), and a head is predicted with the query of
    the *inverse* relation, ``q = t + r^{-1}``, whose embedding is a second learned map of the same
    relation memory (the inverse-relation queries of text-based KG completion). Its learnable
    temperature ``tau`` (``log_inverse_temperature`` = log 1/tau) scales the contrastive logits;
    ranks do not depend on it.
    """

    def __init__(self, backbone: Backbone, scorer: str, num_relations: int, metric: str = "native",
                 temperature: float = 0.05):
        super().__init__()
        import copy

        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        f = backbone.hidden_size
        self.scorer = scorer
        self.metric = metric
        self.knowledge = copy.deepcopy(backbone.knowledge) if backbone.knowledge is not None else None
        self.entity_projection = nn.Linear(f, f) if self.knowledge is None else None
        out = f // 2 if scorer == "rotate" else f
        self.relation_projection = nn.Linear(f, out)
        self.inverse_projection = nn.Linear(f, out) if metric == "cosine" else None
        self.log_inverse_temperature = (nn.Parameter(torch.tensor(math.log(1.0 / temperature)))
                                        if metric == "cosine" else None)
        self.dim = f

    def entities(self, memory: FrozenMemory, edge_index, edge_type) -> torch.Tensor:
        if self.knowledge is not None:
            return self.knowledge(memory.entities, edge_index, edge_type, memory.relations)
        return self.entity_projection(memory.entities)

    def relations(self, memory: FrozenMemory) -> torch.Tensor:
        """(P, F') relation embeddings; with the cosine metric (2P, F'): rows P.. are the inverses."""
        forward = self.relation_projection(memory.relations)
        if self.inverse_projection is None:
            return forward
        return torch.cat([forward, self.inverse_projection(memory.relations)])

    def _rotate(self, x: torch.Tensor, phase: torch.Tensor, inverse: bool = False) -> torch.Tensor:
        re, im = x.chunk(2, dim=-1)
        theta = math.pi * torch.tanh(phase)
        if inverse:
            theta = -theta
        c, s = torch.cos(theta), torch.sin(theta)
        return torch.cat([re * c - im * s, re * s + im * c], dim=-1)

    def query(self, x: torch.Tensor, r: torch.Tensor, inverse: bool = False) -> torch.Tensor:
        """The point a tail (``inverse=False``: ``x`` = h) or a head (``x`` = t) should be near."""
        if self.scorer == "distmult":
            return x * r
        if self.scorer == "transe":
            return x - r if inverse else x + r
        return self._rotate(x, r, inverse=inverse)

    def score(self, h: torch.Tensor, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Scores of broadcastable (..., F) triples (the native metric)."""
        if self.scorer == "distmult":
            return (h * r * t).sum(-1) / math.sqrt(self.dim)
        return -torch.linalg.vector_norm(self.query(h, r) - t, dim=-1)

    def _against(self, query: torch.Tensor, entities: torch.Tensor) -> torch.Tensor:
        if self.metric == "cosine":
            return nn.functional.normalize(query, dim=-1) @ nn.functional.normalize(entities, dim=-1).T
        if self.scorer == "distmult":
            return query @ entities.T / math.sqrt(self.dim)
        return -torch.cdist(query, entities)

    def tail_scores(self, entities: torch.Tensor, relations: torch.Tensor, h, r) -> torch.Tensor:
        """(b, N): every entity as the tail of ``(h, r, ?)`` (index tensors ``h``, ``r``)."""
        return self._against(self.query(entities[h], relations[r]), entities)

    def head_scores(self, entities: torch.Tensor, relations: torch.Tensor, r, t) -> torch.Tensor:
        """(b, N): every entity as the head of ``(?, r, t)``; with the cosine metric the query is the
        inverse relation's ``(t, r^{-1}, ?)``."""
        if self.metric == "cosine":
            return self._against(self.query(entities[t], relations[r + len(relations) // 2]), entities)
        return self._against(self.query(entities[t], relations[r], inverse=True), entities)

def known_answers(triples: np.ndarray) -> tuple[dict, dict]:
    tails: dict[tuple[int, int], list[int]] = {}
    heads: dict[tuple[int, int], list[int]] = {}
    for h, r, t in triples.tolist():
        tails.setdefault((h, r), []).append(t)
        heads.setdefault((r, t), []).append(h)
    return tails, heads

def train_view(kg: KnowledgeGraph, train: np.ndarray):
    """``kg`` with ``train`` as its triples: the graph the KM reads and training samples from."""
    import dataclasses

    return dataclasses.replace(kg, triples=np.asarray(train, dtype=np.int32).reshape(-1, 3), _adjacency=None)

def train_scorer(model: LinkScorer, memory: FrozenMemory, graph, train: np.ndarray,
                 config: LinkPredictionConfig, seed: int, progress: tqdm | None = None) -> list[float]:
    """Mini-batch training, one sampled subgraph per step (as pre-training samples, paper
    "Implementation Details").

    Each step draws ``batch_size`` training triples and ``negatives`` uniformly drawn entities
    shared by the batch; the KM runs over the ``fanouts`` neighbourhood of these seeds in
    ``graph`` (the training triples) **with the batch's own triples hidden**, so a positive is
    never visible as an edge -- as an evaluation triple is not. Each positive is scored against
    every shared negative as tail and as head (softmax cross-entropy, the positive first).
    """
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    device = memory.entities.device  # the batches follow the memory and the model there
    params = [{"params": [p for n, p in model.named_parameters() if not n.startswith("knowledge.")],
               "lr": config.lr}]
    if model.knowledge is not None:
        params.append({"params": model.knowledge.parameters(), "lr": config.km_lr})
    optimizer = torch.optim.AdamW(params, weight_decay=0.0)
    num_entities = int(graph.num_entities)
    if config.self_negatives:  # (h, r, h) / (t, r, t) is true when the training set has that self-loop
        h_all, r_all, t_all = (np.asarray(train, dtype=np.int64)[:, i] for i in range(3))
        width = int(r_all.max(initial=0)) + 1
        loops = np.unique((h_all * width + r_all)[h_all == t_all])
        self_true = torch.as_tensor(np.isin(h_all * width + r_all, loops)
                                    | np.isin(t_all * width + r_all, loops)).to(device)
    losses = []
    model.train()
    for _ in range(config.steps):
        rows = rng.integers(len(train), size=min(config.batch_size, len(train)))
        batch = torch.as_tensor(train[rows], dtype=torch.long).to(device)
        b = len(batch)
        seeds = np.concatenate([train[rows, 0], train[rows, 2], rng.integers(num_entities, size=config.negatives)])
        if model.knowledge is not None:
            sub = sample_neighbors(graph, seeds, config.fanouts, rng, exclude_triples=rows).to(device)
            x = memory.entities[sub.node_ids]
            out = model.knowledge(x, sub.edge_index, sub.edge_type, memory.relations,
                                  hops=(sub.nodes_per_hop, sub.edges_per_hop))
            embedded = out[sub.seed_local]
        else:
            embedded = model.entity_projection(memory.entities[torch.as_tensor(seeds).to(device)])
        h, t, negatives = embedded[:b], embedded[b:2 * b], embedded[2 * b:]
        r = model.relations(memory)[batch[:, 1]]
        pos = model.score(h, r, t)[:, None]
        tail_neg = model.score(h[:, None], r[:, None], negatives[None])
        head_neg = model.score(negatives[None], r[:, None], t[:, None])
        if config.self_negatives:  # (h, r, h) and (t, r, t), unless that triple is true
            true_loop = self_true[torch.from_numpy(rows).to(device)][:, None]
            tail_self = model.score(h, r, h)[:, None].masked_fill(true_loop, -torch.inf)
            head_self = model.score(t, r, t)[:, None].masked_fill(true_loop, -torch.inf)
            tail_neg, head_neg = torch.cat([tail_neg, tail_self], 1), torch.cat([head_neg, head_self], 1)
        zeros = torch.zeros(b, dtype=torch.long, device=device)
        loss = (nn.functional.cross_entropy(torch.cat([pos, tail_neg], 1), zeros)
                + nn.functional.cross_entropy(torch.cat([pos, head_neg], 1), zeros)) / 2
        fine_tuning_step(optimizer, loss, losses, progress)
    return losses
