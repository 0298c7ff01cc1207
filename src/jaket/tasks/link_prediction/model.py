"""The link-prediction model and its two trainings: on a frozen memory, and with LM1 trained on the descriptions.

:class:`LinkScorer`: entity embeddings from LM1's description memory (Eq. 7) through the KM over
the training triples (Eq. 1-5), relation embeddings a learned map of the relation-description
memory, and a scoring function (``distmult``, ``transe``, ``rotate``). :func:`train_scorer`
trains it on a fixed memory, one sampled subgraph per step with the batch's own triples hidden.
The comparison of settings (:mod:`jaket.tasks.link_prediction`), the encoder-training mode
(:mod:`jaket.tasks.link_prediction.model`) and the fine-tuned model (:mod:`jaket.tasks.link_prediction.finetuned`)
import this module; it imports none of them.

Link prediction with LM1 trained on the descriptions (``--train-encoder``).

The frozen-memory mode (:func:`jaket.tasks.link_prediction.model.train_scorer`) reads every entity as
its fixed memory row ``E^context`` (Eq. 7 with the base or pre-trained LM1). Here LM1 itself is
fine-tuned for the task, as text-based KG completion (SimKGC) fine-tunes its encoder:

* **Rows with gradients.** Each step draws ``batch_size`` training triples; the step's entities
  (their heads and tails, deduplicated) get ``E^(0) = (Z_s + Z_o) / 2`` of LM1 over their
  descriptions computed *with* gradients (Eq. 7); the KM (Eq. 1-5) reads them together with the
  memory rows of their sampled neighbours (gradient-free, the batch's own triples hidden, as in the
  frozen mode). The fresh rows are written back into the memory, so entities seen in training stay
  current; the rest of the memory is recomputed by a full refresh on the paper's schedule
  (Eq. 11: after ``refresh_initial`` steps, then intervals growing by ``refresh_growth``). The
  relation memory ``R^context`` is LM1 over the relation descriptions, also with gradients.
* **In-batch softmax** (``objective="in-batch"``, the default): the scorer's own function (e.g.
  minus the RotatE distance), each triple's tail query ``h o r`` and head query ``t o r^{-1}``
  against every entity of the step (the heads, tails and hard negatives, all with fresh rows; the
  query's own entity among them: the self-negative), true answers masked, softmax cross-entropy.
  Every candidate comes from the same LM1 in the same step as the positive. Why: negatives read
  from the memory (rows of an older LM1) or from a queue of earlier steps differ from the fresh
  positive in a way the model learns to see instead of the relation, and the ranking over the
  refreshed memory collapses (docs/results.md, "Training LM1 on the descriptions").
* **No dropout in LM1** (``encoder_dropout=False``, the default): the step's rows are computed as the
  memory's refreshes compute them (LM1 in eval mode), so a fresh row and a memory row of the same
  entity differ only by LM1's updates since the refresh, and the evaluation reads rows of the
  kind training saw.
* **Frozen warm-up** (``frozen_warmup_steps`` = n): the first n steps are the frozen mode's
  (:func:`jaket.tasks.link_prediction.model.train_scorer` on the first fill's memory: only the KM and the
  relation map learn), then LM1 joins. A KM and a relation map that already rank well give LM1's
  first gradients a meaning (linear probing before fine-tuning); the warm-up's CPU time counts in
  ``budget_cpu_seconds`` (None or 0: no budget).
* **Contrastive loss** (``objective="contrastive"``; InfoNCE with an additive margin, SimKGC's): a tail query
  ``q = h + r`` (or ``h o r``, the rotation) is scored by cosine against every entity of the batch
  (in-batch negatives; the query's own head among them, the *self-negative*) and, optionally,
  the entity vectors of the ``queue_batches`` previous steps (detached, SimKGC's pre-batch
  negatives); ``loss = CE((cos - margin [positive]) / tau)`` with a learnable temperature
  ``tau``. A candidate that is a true answer of the query in the training triples is masked.
* **Hard negatives from the graph neighbourhood** (``hard_negatives`` = n per triple): n
  entities adjacent (in the training graph, either direction) to the triple's head or tail join the
  step's entities, so a query also competes with the neighbours of its own entities (in WordNet,
  the co-hyponyms and hyponyms that in-batch negatives almost never contain); true answers among
  them are masked like any other.
* **bf16** (``bf16``): LM1's forward passes (the step's rows and the refreshes) run under bf16
  autocast (:func:`jaket.model.device.autocast`, on LM1's device); the rows, the KM, the loss and
  every parameter stay fp32.
* **Device**: everything runs where LM1 is; the memory rows live there too when they fit
  (:meth:`jaket.model.memory.EntityContextMemory.place`, else in host memory with the step's rows
  copied over), the step's index tensors are moved there, and only the loss is read back.
* **Head prediction** uses the inverse-relation query ``q = t + r^{-1}`` against the batch's
  entities, with the same loss; the two sides are averaged.

Evaluation is the frozen mode's, on the memory recomputed by the final LM1: filtered realistic
ranks against every entity (:func:`jaket.tasks.link_prediction.run.filtered_ranks`; the native metric
with the in-batch objective, cosine with the contrastive one).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sampling import sample_neighbors
from jaket.model.device import autocast, module_device
from jaket.model.heads import span_mean
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import EntityContextMemory, refresh_interval
from jaket.tasks.link_prediction.job import METRICS, LinkPredictionConfig
from jaket.tasks.training import fine_tuning_step, step_done
from jaket.tasks.variants import Backbone
from jaket.model.memory import FrozenMemory

class LinkScorer(nn.Module):
    """Entity encoder (KM over the training graph, or a projection of frozen LM features) +
    relation projection + one scoring function.

    ``metric="native"`` scores with the scorer's own function (module docstring; the frozen-memory
    mode). ``metric="cosine"`` (the trained-encoder mode, :mod:`jaket.tasks.link_prediction.model`) scores
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


#: the largest 1/tau the learnable temperature may reach (SimKGC clamps likewise)
MAX_INVERSE_TEMPERATURE = 100.0


class KnownTriples:
    """Known-true ``(h, r, t)`` as sorted int64 keys, for vectorised membership tests."""

    def __init__(self, triples: np.ndarray, num_entities: int, num_relations: int):
        self.n, self.p = int(num_entities), int(num_relations)
        t = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
        self.keys = np.unique(self._key(t[:, 0], t[:, 1], t[:, 2]))

    def _key(self, h, r, t) -> np.ndarray:
        return (np.asarray(h, dtype=np.int64) * self.p + np.asarray(r, dtype=np.int64)) * self.n + \
            np.asarray(t, dtype=np.int64)

    def contains(self, h, r, t) -> np.ndarray:
        """Whether each broadcast ``(h, r, t)`` is known (bool array of the broadcast shape)."""
        key = self._key(h, r, t)
        if not len(self.keys):
            return np.zeros(key.shape, dtype=bool)
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        return self.keys[at] == key


class Neighbourhood:
    """The training graph's adjacency (both directions) for sampling hard negatives."""

    def __init__(self, triples: np.ndarray, num_entities: int):
        pairs = np.concatenate([triples[:, [0, 2]], triples[:, [2, 0]]]).astype(np.int64)
        order = np.argsort(pairs[:, 0], kind="stable")
        self.neighbours = pairs[order, 1]
        self.offsets = np.searchsorted(pairs[order, 0], np.arange(num_entities + 1))

    def sample(self, entities: np.ndarray, per_entity: int, rng: np.random.Generator) -> np.ndarray:
        """``per_entity`` random neighbours of each of ``entities`` (with replacement; none for an
        entity without neighbours)."""
        entities = np.repeat(np.asarray(entities, dtype=np.int64), per_entity)
        start, degree = self.offsets[entities], self.offsets[entities + 1] - self.offsets[entities]
        has = degree > 0
        picks = start[has] + (rng.random(int(has.sum())) * degree[has]).astype(np.int64)
        return self.neighbours[picks]


def describe(language: SplitLanguageModel, tokens, rows: np.ndarray) -> torch.Tensor:
    """Eq. 7 with gradients: ``(Z_s + Z_o) / 2`` of LM1 over the descriptions ``rows`` (n, F),
    on LM1's device."""
    device = module_device(language)
    ids, mask, start, end = (t.to(device) for t in tokens.batch(np.asarray(rows, dtype=np.int64)))
    z = language.lm1(ids, mask)
    return span_mean(z, torch.arange(len(ids), device=device), start, end).float()


def contrastive_loss(model: LinkScorer, queries: torch.Tensor, candidates: torch.Tensor, target: torch.Tensor,
                     masked: np.ndarray, margin: float) -> torch.Tensor:
    """InfoNCE with an additive margin: ``CE((cos(q, c) - margin [c = target]) / tau)``.

    ``queries`` (b, F), ``candidates`` (c, F), ``target`` (b,) column of each positive,
    ``masked`` (b, c) candidates to drop (true answers other than the target)."""
    cos = nn.functional.normalize(queries, dim=-1) @ nn.functional.normalize(candidates, dim=-1).T
    rows = torch.arange(len(target), device=cos.device)
    cos = cos.index_put((rows, target), cos[rows, target] - margin)
    scale = model.log_inverse_temperature.clamp(max=math.log(MAX_INVERSE_TEMPERATURE)).exp()
    # mask after scaling: -inf * (d scale) would make the temperature's gradient NaN
    logits = (cos * scale).masked_fill(torch.from_numpy(masked).to(cos.device), -torch.inf)
    return nn.functional.cross_entropy(logits, target)


def in_batch_loss(model: LinkScorer, queries: torch.Tensor, candidates: torch.Tensor, target: torch.Tensor,
                  masked: np.ndarray) -> torch.Tensor:
    """Softmax cross-entropy of the scorer's native scores (``objective="in-batch"``): ``queries``
    (b, F) against ``candidates`` (c, F), ``target`` (b,) the column of each positive, ``masked``
    (b, c) the other true answers, dropped."""
    logits = model._against(queries, candidates).masked_fill(torch.from_numpy(masked).to(candidates.device),
                                                             -torch.inf)
    return nn.functional.cross_entropy(logits, target)


@dataclass
class _StepData:
    """What every step of :func:`train_with_encoder` reads: the descriptions' tokens, the known
    triples (masked out of the negatives) and the hard-negative neighbourhoods."""

    entity_tokens: object
    relation_tokens: object
    known: KnownTriples
    neighbourhood: Neighbourhood | None


def _step_loss(model: LinkScorer, language: SplitLanguageModel, memory: EntityContextMemory, graph: KnowledgeGraph,
               train: np.ndarray, rows: np.ndarray, queue: list, data: _StepData, config: LinkPredictionConfig,
               rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """One step's loss on the training triples ``rows``: E^(0) of the step's entities by LM1 with
    gradients (Eq. 7), the KM over their sampled neighbourhood with the batch's triples hidden
    (Eq. 1-5), both sides' queries against the step's entities and the queued ones; returns
    ``(loss, the step's entity embeddings, their ids)`` (the memory's rows of those entities are
    updated to the fresh E^(0))."""
    device = module_device(language)
    in_batch = config.objective == "in-batch"
    p = graph.num_relations
    known, neighbourhood = data.known, data.neighbourhood
    h, r, t = (train[rows, i] for i in range(3))
    b = len(rows)
    hard = (neighbourhood.sample(np.concatenate([h, t]), (config.hard_negatives + 1) // 2, rng)
            if neighbourhood is not None else np.zeros(0, dtype=np.int64))
    entities, where = np.unique(np.concatenate([h, t, hard]), return_inverse=True)
    where = where[: 2 * b]
    with autocast(device, config.bf16):
        fresh = describe(language, data.entity_tokens, entities)  # E^(0) of the step's entities, with gradients
        relations = (describe(language, data.relation_tokens, np.arange(p)) if config.relation_memory
                     else fresh.new_zeros(p, fresh.shape[1]))
    if model.knowledge is not None:
        sub = sample_neighbors(graph, entities, config.fanouts, rng, exclude_triples=rows).to(device)
        x = memory.entity_rows(sub.node_ids, device=device).index_put((sub.seed_local,), fresh)
        out = model.knowledge(x, sub.edge_index, sub.edge_type, relations,
                              hops=(sub.nodes_per_hop, sub.edges_per_hop))
        embedded = out[sub.seed_local]
    else:
        embedded = model.entity_projection(fresh)
    with torch.no_grad():  # the step's rows of the memory follow LM1 at once
        stored = memory.entities.device
        memory.entities[torch.from_numpy(entities).to(stored)] = fresh.detach().to(stored, memory.entities.dtype)
    rel = model.relations(FrozenMemory(fresh.new_zeros(0), relations))
    head_index, tail_index = (torch.from_numpy(x).to(device) for x in (where[:b], where[b:]))
    heads, tails = embedded[head_index], embedded[tail_index]
    r_index = torch.from_numpy(r).to(device)
    candidates, ids = embedded, entities
    if queue:
        candidates = torch.cat([embedded] + [v for v, _ in queue])
        ids = np.concatenate([entities] + [i for _, i in queue])
    columns = np.arange(len(ids))
    # tail side: (h, r, ?) against every candidate; head side: (?, r, t)
    tail_masked = known.contains(h[:, None], r[:, None], ids[None, :]) & (columns[None] != where[b:, None])
    head_masked = known.contains(ids[None, :], r[:, None], t[:, None]) & (columns[None] != where[:b, None])
    if in_batch:  # the scorer's own function; the head query rotates (translates) t back
        head_query = model.query(tails, rel[r_index], inverse=True)
        side = lambda q, target, masked: in_batch_loss(model, q, candidates, target, masked)  # noqa: E731
    else:  # the inverse relation's own query
        head_query = model.query(tails, rel[r_index + p])
        side = lambda q, target, masked: contrastive_loss(model, q, candidates, target, masked,  # noqa: E731
                                                          config.margin)
    loss = (side(model.query(heads, rel[r_index]), tail_index, tail_masked)
            + side(head_query, head_index, head_masked)) / 2
    return loss, embedded, entities


def _refresh_all(memory: EntityContextMemory, language: SplitLanguageModel, graph: KnowledgeGraph,
                 config: LinkPredictionConfig, record: dict, step: int) -> None:
    """Recompute every memory row with the current LM1 (Eq. 11 without momentum), timed in
    ``record`` (wall and CPU seconds, the step it ran at)."""
    started, cpu = time.perf_counter(), time.process_time()
    with autocast(module_device(language), config.bf16):
        memory.refresh(language, graph, batch_size=128, max_length=config.description_max_length, momentum=0.0)
    record["refresh_seconds"].append(time.perf_counter() - started)
    record["refresh_cpu_seconds"].append(time.process_time() - cpu)
    record["refresh_at_step"].append(step)


def _optimizer(model: LinkScorer, language: SplitLanguageModel, config: LinkPredictionConfig):
    """``(parameter groups, AdamW, linear warm-up over the first tenth)``: LM1 at ``encoder_lr``,
    the scorer's head at ``lr``, the KM at ``km_lr``."""
    head_params = [p for n, p in model.named_parameters() if not n.startswith("knowledge.")]
    groups = [{"params": list(language.lm1_parameters()), "lr": config.encoder_lr},
              {"params": head_params, "lr": config.lr}]
    if model.knowledge is not None:
        groups.append({"params": list(model.knowledge.parameters()), "lr": config.km_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.0)
    warmup = max(1, config.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
    return groups, optimizer, schedule


def _summarize(record: dict, model: LinkScorer, config: LinkPredictionConfig, steps: int, train_seconds: float,
               train_cpu: float, refreshes: int) -> None:
    """Add the run's shares and throughput to ``record``, in process CPU seconds (robust on a
    shared machine)."""
    first_fill, during = record["refresh_cpu_seconds"][0], sum(record["refresh_cpu_seconds"][1:-1])
    stepping = max(1e-9, train_cpu - first_fill - during)
    record.update(
        train_seconds=train_seconds, train_cpu_seconds=train_cpu, first_fill_cpu_seconds=first_fill,
        refresh_cpu_seconds_during_training=during, refreshes_during_training=refreshes,
        refresh_share=(first_fill + during) / max(1e-9, train_cpu), refresh_share_without_first_fill=during / max(
            1e-9, train_cpu - first_fill), steps=steps, step_cpu_seconds=stepping / max(1, steps),
        triples_per_cpu_second=steps * config.batch_size / stepping,
        evaluation_memory_cpu_seconds=record["refresh_cpu_seconds"][-1],
        final_temperature=None if model.log_inverse_temperature is None else float(
            1.0 / model.log_inverse_temperature.detach().clamp(max=math.log(MAX_INVERSE_TEMPERATURE)).exp()))


def train_with_encoder(model: LinkScorer, backbone: Backbone, graph: KnowledgeGraph, train: np.ndarray,
                       config: LinkPredictionConfig, seed: int,
                       progress=None, on_refresh=None) -> tuple[list[float], dict, FrozenMemory]:
    """Train ``model`` (a cosine-metric :class:`~jaket.tasks.link_prediction.model.LinkScorer`) and
    ``backbone``'s LM1 together on ``train`` (module docstring).

    Returns the per-step losses, a record of the run (times, refreshes, throughput) and the memory
    recomputed by the trained LM1 (the evaluation's input). ``on_refresh(step, memory)``, if given,
    is called after the warm-up (step 0) and after every full refresh during training with the
    memory just recomputed (a :class:`FrozenMemory`): the points where the evaluation's input can
    be read exactly mid-run (``results/lp_encoder_probe.py``)."""
    language = backbone.language
    in_batch = config.objective == "in-batch"
    if language is None or (not in_batch and model.log_inverse_temperature is None):
        raise ValueError("training the encoder needs a setting with LM1 (lm, lm+g+m or jaket); the "
                         "contrastive objective needs the cosine metric")
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    length = config.description_max_length
    device = module_device(language)
    began, cpu_began = time.perf_counter(), time.process_time()
    memory = EntityContextMemory(graph.num_entities, graph.num_relations, int(language.hidden_size))
    memory.place(device)  # on LM1's device when it fits, else host memory (rows copied per step)
    record = {"refresh_seconds": [], "refresh_cpu_seconds": [], "refresh_at_step": []}

    def refresh(step: int) -> None:  # every row from the current LM1 (Eq. 11, no momentum), timed
        _refresh_all(memory, language, graph, config, record, step)

    refresh(0)  # the first fill: E^context of the (base or pre-trained) LM1
    tokens = _StepData(*memory.description_tokens(language, graph, length),
                       KnownTriples(train, graph.num_entities, graph.num_relations),
                       Neighbourhood(train, graph.num_entities) if config.hard_negatives > 0 else None)
    groups, optimizer, schedule = _optimizer(model, language, config)
    queue: list[tuple[torch.Tensor, np.ndarray]] = []
    next_refresh = config.refresh_initial if config.refresh_initial > 0 else None
    refreshes = 0
    losses = []

    def current_memory() -> FrozenMemory:
        rows = memory.relation_rows(device=device)
        return FrozenMemory(memory.entity_rows(torch.arange(graph.num_entities), device=device),
                            rows if config.relation_memory else torch.zeros_like(rows))

    if config.frozen_warmup_steps > 0:  # the frozen mode first: the KM and the relation map learn, then LM1
        began_warmup = time.process_time()
        warm = dataclasses.replace(config, steps=config.frozen_warmup_steps)
        record.update(frozen_warmup_losses=train_scorer(model, current_memory(), graph, train, warm, seed, progress),
                      frozen_warmup_cpu_seconds=time.process_time() - began_warmup)
    if on_refresh is not None:
        on_refresh(0, current_memory())
    language.train(config.encoder_dropout)  # without dropout the step's rows are the memory's (eval mode)
    model.train()
    for step in range(config.steps):
        rows = rng.integers(len(train), size=min(config.batch_size, len(train)))
        loss, embedded, entities = _step_loss(model, language, memory, graph, train, rows, queue, tokens, config, rng)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_([q for g in groups for q in g["params"]], 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if config.queue_batches > 0 and not in_batch:
            queue = ([(embedded.detach(), entities)] + queue)[: config.queue_batches]
        if next_refresh is not None and step + 1 == next_refresh and step + 1 < config.steps and \
                (not config.budget_cpu_seconds or time.process_time() - cpu_began < config.budget_cpu_seconds):
            refresh(step + 1)  # Eq. 11: the rows of every other entity, with the current LM1
            refreshes += 1
            if on_refresh is not None:
                on_refresh(step + 1, current_memory())
            next_refresh += refresh_interval(refreshes, initial=config.refresh_initial,
                                             growth=config.refresh_growth, every=1, maximum=10 ** 9)
        step_done(progress, losses[-1])
        if config.budget_cpu_seconds and time.process_time() - cpu_began >= config.budget_cpu_seconds:  # 0: none
            break
    steps = len(losses)
    train_seconds, train_cpu = time.perf_counter() - began, time.process_time() - cpu_began
    refresh(steps)  # the evaluation's memory: every row from the final LM1
    language.eval()
    _summarize(record, model, config, steps, train_seconds, train_cpu, refreshes)
    return losses, record, current_memory()
