"""Link prediction, the paper's KG-only use of the model.

Entity embeddings come from LM1 + KM over the entity descriptions (memory from LM1, Eq. 7, then
the KM over the *training* triples, Eq. 1-5); relation embeddings are a learned linear map of the
relation-description memory (so a relation is also known by its text). A scoring function turns
(h, r, t) into a score:

* ``distmult``: ``<h, r, t>`` (scaled by 1/sqrt(F));
* ``transe``:   ``-||h + r - t||_2``;
* ``rotate``:   ``-||h o e^{i theta_r} - t||_2`` with h, t read as complex vectors (first half real,
  second half imaginary) and the phase ``theta_r`` from the relation embedding.

Training (:func:`train_scorer`): mini-batches of training triples with ``negatives`` uniformly
drawn entities shared by the batch as corrupted tails and heads, softmax cross-entropy with the
positive first; the KM reads a sampled neighbourhood (``fanouts``) of the step's entities in the
training graph with the batch's own triples hidden (a positive is never an edge of its own
input, as an evaluation triple is not). Evaluation: the KM over the whole training graph, filtered MRR and
Hits@1/3/10, averaged over head and tail prediction, realistic ranks (a tie counts half, as
PyKEEN's) against every entity with all known true triples (training + every evaluation file)
filtered out. ``train_encoder`` trains LM1 too (:mod:`jaket.tasks.link_training`). Any split file in the WN18RR format
(``head<TAB>relation<TAB>tail``, ids of the KG) can be evaluated.

Inductive mode: entities of an evaluation file that occur in no training triple are still embedded
from their descriptions (memory + KM with no edges); their triples are also scored separately
(``unseen`` metrics). ``holdout_fraction`` makes an inductive split on purpose: it removes every
training triple touching a random share of the evaluation entities.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from jaket.kg.errors import KGFormatError
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import read_split  # noqa: F401  (the split reader of every task)
from jaket.kg.sampling import sample_neighbors
from jaket.tasks import report as rep
from jaket.tasks.tracking import task_progress
from jaket.tasks.training import fine_tuning_step
from jaket.tasks.link_training import train_with_encoder
from jaket.tasks.settings import (METRICS, SCORERS, TRAIN_ENCODER_DEFAULTS,  # noqa: F401 (re-exported)
                                  LinkPredictionConfig)
from jaket.tasks.variants import VARIANT_LABELS, Backbone, FrozenMemory, full_graph, kg_memory, load_backbone

logger = logging.getLogger(__name__)

SplitFormatError = KGFormatError  # a malformed split line: ``path:line: message`` (jaket.kg.readers)


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


def realistic_ranks(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """1-based realistic ranks of ``scores[i, target[i]]`` in each row (PyKEEN's realistic rank):
    the mean of the optimistic rank ``1 + #{score > true}`` and the pessimistic rank
    ``1 + #{score >= true}`` over the *other* candidates, i.e. a tie counts half. Filtered
    candidates are set to ``-inf`` by the caller; ``scores`` is modified (the target set to NaN).
    A NaN score counts as ``-inf``: a true answer whose score is NaN ranks behind every finite
    candidate instead of first (every comparison with NaN is false)."""
    scores.masked_fill_(scores.isnan(), -torch.inf)
    rows = torch.arange(len(target), device=scores.device)
    true = scores[rows, target].clone()
    scores[rows, target] = torch.nan  # compares false with everything: the target never counts itself
    greater = (scores > true[:, None]).sum(-1)
    equal = (scores == true[:, None]).sum(-1)
    return 1.0 + greater.double() + equal.double() / 2.0


@torch.no_grad()
def filtered_ranks(model: LinkScorer, entities: torch.Tensor, relations: torch.Tensor, triples: np.ndarray,
                   all_true: np.ndarray, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Filtered realistic ranks (:func:`realistic_ranks`) of the true tail and the true head of
    every triple against every entity, the other known true answers (``all_true``) removed.
    The scores stay on ``entities``' device; the filters are built from the CPU triples."""
    tails, heads = known_answers(all_true)
    device = entities.device
    tail_ranks, head_ranks = [], []
    for begin in range(0, len(triples), batch_size):
        part = np.asarray(triples[begin:begin + batch_size], dtype=np.int64)
        batch = torch.from_numpy(part).to(device)
        h, r, t = batch[:, 0], batch[:, 1], batch[:, 2]
        rows = torch.arange(len(batch), device=device)
        for side in ("tail", "head"):
            if side == "tail":
                scores = model.tail_scores(entities, relations, h, r)
                target = t
                filters = [tails.get((a, b), ()) for a, b in part[:, [0, 1]].tolist()]
            else:
                scores = model.head_scores(entities, relations, r, t)
                target = h
                filters = [heads.get((b, c), ()) for b, c in part[:, [1, 2]].tolist()]
            fr = [i for i, f in enumerate(filters) for _ in f]
            fc = [c for f in filters for c in f]
            true_score = scores[rows, target].clone()
            if fr:
                scores[torch.tensor(fr, device=device), torch.tensor(fc, device=device)] = -torch.inf
            scores[rows, target] = true_score
            ranks = realistic_ranks(scores, target)
            (tail_ranks if side == "tail" else head_ranks).append(ranks.cpu().numpy())
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, dtype=np.float64)  # noqa: E731
    return cat(tail_ranks), cat(head_ranks)


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


def _inductive_holdout(train: np.ndarray, evaluation: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    if fraction <= 0:
        return train
    rng = np.random.default_rng(seed)
    candidates = np.unique(evaluation[:, [0, 2]])
    held = rng.choice(candidates, size=max(1, int(round(fraction * len(candidates)))), replace=False)
    touches = np.isin(train[:, 0], held) | np.isin(train[:, 2], held)
    return train[~touches]


def run_link_prediction(kg: KnowledgeGraph, train: np.ndarray, evaluation: dict[str, np.ndarray],
                        config: LinkPredictionConfig,
                        out_dir: Path | None = None, save_dir: Path | None = None, device="cpu",
                        log_with=()) -> dict:
    """Train on ``train`` (indices of ``kg``), evaluate on each named split; with ``save_dir``
    the first run's model is saved there (a fine-tuned folder, :mod:`jaket.tasks.link_predictor`).
    ``device``: where the backbone, the memory, the scorer and every batch run. ``log_with``:
    trackers of each step's loss (:mod:`jaket.tasks.tracking`)."""
    if len(train) == 0:
        raise ValueError("no training triples")
    all_true = np.concatenate([train] + [v for v in evaluation.values()])
    eval_all = np.concatenate(list(evaluation.values())) if evaluation else np.zeros((0, 3), np.int64)
    train = _inductive_holdout(train, eval_all, config.holdout_fraction, 0)
    seen = np.zeros(kg.num_entities, dtype=bool)
    seen[train[:, 0]] = True
    seen[train[:, 2]] = True
    device = torch.device(device)
    edges = tuple(t.to(device) for t in _edges(kg, train))
    graph = train_view(kg, train)
    results: dict = {"task": "link-prediction", "device": str(device),
                     "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
                     "data": {"entities": int(kg.num_entities), "relations": int(kg.num_relations),
                              "train_triples": int(len(train)),
                              **{f"{k}_triples": int(len(v)) for k, v in evaluation.items()}},
                     "runs": {}, "summary": {},
                     "km": {v: config.variant_config(v).km_structure() for v in config.variants if v != "lm"}}
    eval_sets = {k: (v[: config.max_eval_triples] if config.max_eval_triples else v) for k, v in evaluation.items()}
    total = len(config.variants) * len(config.scorers) * len(config.seeds) * config.steps
    histograms: dict[str, np.ndarray] = {}
    with task_progress(total, "link prediction", "step", log_with, out_dir, results["config"]) as progress:
        for variant in config.variants:
            memory = None
            for seed in config.seeds:
                backbone = None
                for scorer in config.scorers:
                    if backbone is None or config.train_encoder:  # a trained LM1 is not reused
                        backbone = load_backbone(config.variant_config(variant), seed=seed,
                                                 need_language=variant in ("lm", "lm+g+m", "jaket"), device=device)
                    if not config.train_encoder and (memory is None or variant in ("gnn", "lm+g")):
                        memory = kg_memory(backbone, kg, seed, max_length=config.description_max_length,
                                           relation_memory=config.relation_memory)
                    progress.set_postfix_str(f"{variant} {scorer} seed {seed}")
                    started, cpu_started = time.perf_counter(), time.process_time()
                    torch.manual_seed(seed)
                    model = LinkScorer(backbone, scorer, kg.num_relations,
                                       metric=config.metric,
                                       temperature=config.temperature).to(device)  # built on the CPU: seeded alike
                    run: dict = {"seed": seed}
                    if config.train_encoder:
                        losses, run["encoder_training"], memory = train_with_encoder(
                            model, backbone, graph, train, config, seed, progress)
                    else:
                        losses = train_scorer(model, memory, graph, train, config, seed, progress)
                    run.update(train_loss=losses, train_seconds=time.perf_counter() - started,
                               train_cpu_seconds=time.process_time() - cpu_started)
                    model.eval()
                    with torch.no_grad():
                        entities = model.entities(memory, *edges)
                        relations = model.relations(memory)
                    for name, triples in eval_sets.items():
                        run[name] = _evaluate(model, entities, relations, triples, all_true, seen, config)
                        histograms[f"{variant} {scorer}"] = run[name].pop("ranks")
                    run["seconds"] = time.perf_counter() - started
                    results["runs"].setdefault(f"{variant}/{scorer}", []).append(run)
                    if save_dir is not None and "saved_model" not in results:
                        # cycle: link_predictor imports LinkScorer and the scorer names from here
                        from jaket.tasks.link_predictor import FinetunedLinkPredictor

                        settings = {"memory_seed": seed, "kg": {"entities": int(kg.num_entities),
                                                                "relations": int(kg.num_relations),
                                                                "fingerprint": kg.fingerprint()},
                                    "training": {k: v for k, v in run.items() if k != "train_loss"}}
                        FinetunedLinkPredictor(backbone, model, config, variant, settings).save_pretrained(save_dir)
                        results["saved_model"] = str(save_dir)
    metric_names = ("mrr", "hits@1", "hits@3", "hits@10")
    for key, runs in results["runs"].items():
        summary = {}
        for name in eval_sets:
            summary[name] = rep.summarize_seeds([{m: r[name][m] for m in metric_names} for r in runs])
            for part in ("seen", "unseen"):  # only when the split has both kinds of triples
                if all(part in r[name] and r[name][part]["count"] for r in runs) and \
                        all(r[name][part]["count"] < r[name]["count"] for r in runs):
                    summary[f"{name} ({part})"] = rep.summarize_seeds(
                        [{m: r[name][part][m] for m in metric_names} for r in runs])
        results["summary"][key] = summary
    results["data"]["eval_seen_triples"] = {
        name: int((seen[v[:, 0]] & seen[v[:, 2]]).sum()) for name, v in eval_sets.items()}
    if out_dir is not None:
        write_split(kg, train, eval_sets, Path(out_dir) / "split")
        write_report(results, Path(out_dir), histograms)
    return results


def _evaluate(model: LinkScorer, entities, relations, triples: np.ndarray, all_true: np.ndarray,
              seen: np.ndarray, config: LinkPredictionConfig) -> dict:
    """Metrics of one split: all triples, tail / head side, and the ``seen`` / ``unseen`` rows
    ("seen": both entities occur in a training triple, the triples a transductive baseline such as
    PyKEEN can score; "unseen": the others, embedded from their descriptions only); ``ranks``
    holds every rank (for the histogram)."""
    tails, heads = filtered_ranks(model, entities, relations, triples, all_true, config.eval_batch_size)
    ranks = np.concatenate([tails, heads])
    out = {**rep.ranking_metrics(ranks), "tail": rep.ranking_metrics(tails), "head": rep.ranking_metrics(heads)}
    unseen = ~(seen[triples[:, 0]] & seen[triples[:, 2]])
    out["seen"] = rep.ranking_metrics(np.concatenate([tails[~unseen], heads[~unseen]]))
    if unseen.any():
        out["unseen"] = rep.ranking_metrics(np.concatenate([tails[unseen], heads[unseen]]))
    out["ranks"] = ranks
    return out


def write_split(kg: KnowledgeGraph, train: np.ndarray, evaluation: dict[str, np.ndarray], folder: Path) -> None:
    """The exact triples a run trained and evaluated on, in the WN18RR format with the KG's ids
    (``folder/train.txt``, ``folder/<name>.txt``), so a baseline can use the same split
    (``benchmarks/pykeen_baseline.py --train ... --eval ...``)."""
    folder.mkdir(parents=True, exist_ok=True)
    entity, relation = list(kg.entity_ids), list(kg.relation_ids)
    for name, triples in {"train": train, **evaluation}.items():
        lines = [f"{entity[h]}\t{relation[r]}\t{entity[t]}\n" for h, r, t in np.asarray(triples).tolist()]
        rep.write_text_atomic(folder / f"{name}.txt", "".join(lines))


def _edges(kg: KnowledgeGraph, train: np.ndarray):
    from types import SimpleNamespace

    view = SimpleNamespace(triples=train, num_relations=kg.num_relations)
    return full_graph(view)


def results_table(results: dict) -> str:
    rows = []
    for key, by_split in results["summary"].items():
        variant, scorer = key.split("/")
        for split, metrics in by_split.items():
            rows.append([VARIANT_LABELS.get(variant, variant), scorer, split] + [
                rep.format_mean_std(metrics[m]["values"], scale=1.0, digits=3)
                for m in ("mrr", "hits@1", "hits@3", "hits@10")])
    return rep.markdown_table(["Model", "Scorer", "Split", "MRR", "Hits@1", "Hits@3", "Hits@10"], rows)


def write_report(results: dict, out_dir: Path, histograms: dict | None = None) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_metrics(out_dir, results)
    curves = {key: runs[0]["train_loss"] for key, runs in results["runs"].items()}
    rep.plot_curves(curves, out_dir / "learning_curves.png", title="link prediction training loss",
                    ylabel="cross-entropy")
    if histograms:
        rep.plot_histogram(histograms, out_dir / "rank_histogram.png", title="filtered ranks (last seed)")
    d = results["data"]
    text = ["# Link prediction", "",
            f"{d['entities']} entities, {d['relations']} relations, {d['train_triples']} training triples. "
            "Filtered ranking against every entity, head and tail prediction averaged; mean ± std over "
            f"seeds {results['config']['seeds']}.", "", results_table(results), "",
            "![learning curves](learning_curves.png)", "", "![ranks](rank_histogram.png)", ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))
