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
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from jaket.kg.errors import KGFormatError
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import read_split  # noqa: F401  (the split reader of every task)
from jaket.tasks import report as rep
from jaket.tasks.tracking import task_progress
from jaket.tasks.link_predictor import FinetunedLinkPredictor
from jaket.tasks.link_scoring import LinkScorer, known_answers, train_scorer, train_view  # noqa: F401 (re-exported)
from jaket.tasks.link_training import train_with_encoder
from jaket.tasks.settings import (METRICS, SCORERS, TRAIN_ENCODER_DEFAULTS,  # noqa: F401 (re-exported)
                                  LinkPredictionConfig)
from jaket.tasks.variants import VARIANT_LABELS, full_graph, kg_memory, load_backbone
from jaket.tasks.settings import variant as variant_spec

logger = logging.getLogger(__name__)

SplitFormatError = KGFormatError  # a malformed split line: ``path:line: message`` (jaket.kg.readers)


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
                     "km": {v: config.variant_config(v).km_structure() for v in config.variants if variant_spec(v).has_km}}
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
                                                 need_language=variant_spec(variant).needs_encoder, device=device)
                    if not config.train_encoder and (memory is None or variant_spec(variant).random_memory):
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
                        settings = {"memory_seed": seed, "kg": {"entities": int(kg.num_entities),
                                                                "relations": int(kg.num_relations),
                                                                "fingerprint": kg.fingerprint()},
                                    "training": {k: v for k, v in run.items() if k != "train_loss"}}
                        FinetunedLinkPredictor(backbone, model, config, variant, settings).save_pretrained(save_dir)
                        results["saved_model"] = str(save_dir)
    results["summary"] = {key: _summary(runs, eval_sets) for key, runs in results["runs"].items()}
    results["data"]["eval_seen_triples"] = {
        name: int((seen[v[:, 0]] & seen[v[:, 2]]).sum()) for name, v in eval_sets.items()}
    if out_dir is not None:
        write_split(kg, train, eval_sets, Path(out_dir) / "split")
        write_report(results, Path(out_dir), histograms)
    return results


def _summary(runs: list[dict], eval_sets: dict) -> dict:
    """Mean and spread over seeds of each split's metrics, and of its seen / unseen triples apart
    when the split has both kinds."""
    metric_names = ("mrr", "hits@1", "hits@3", "hits@10")
    summary = {}
    for name in eval_sets:
        summary[name] = rep.summarize_seeds([{m: r[name][m] for m in metric_names} for r in runs])
        for part in ("seen", "unseen"):
            if all(part in r[name] and r[name][part]["count"] for r in runs) and \
                    all(r[name][part]["count"] < r[name]["count"] for r in runs):
                summary[f"{name} ({part})"] = rep.summarize_seeds(
                    [{m: r[name][part][m] for m in metric_names} for r in runs])
    return summary


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
    (``results/pykeen_baseline.py --train ... --eval ...``)."""
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
