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
filtered out. ``train_encoder`` trains LM1 too (:mod:`jaket.tasks.link_prediction.model`). Any split file in the WN18RR format
(``head<TAB>relation<TAB>tail``, ids of the KG) can be evaluated.

Inductive mode: entities of an evaluation file that occur in no training triple are still embedded
from their descriptions (memory + KM with no edges); their triples are also scored separately
(``unseen`` metrics). ``holdout_fraction`` makes an inductive split on purpose: it removes every
training triple touching a random share of the evaluation entities.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from jaket.kg.errors import KGFormatError
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import read_split  # noqa: F401  (the split reader of every task)
from jaket.tasks import report as rep
from jaket.tasks.grid import Cell, Grid, GridTask, RunOutcome, run_grid
from jaket.tasks.results import TaskResult
from jaket.tasks.link_prediction.finetuned import FinetunedLinkPredictor
from jaket.tasks.link_prediction.model import LinkScorer, known_answers, train_scorer, train_view  # noqa: F401 (re-exported)
from jaket.tasks.link_prediction.model import train_with_encoder
from jaket.tasks.link_prediction.data import load_data, read_inputs  # noqa: F401 (re-exported)
from jaket.tasks.link_prediction.job import (METRICS, SCORERS, TASK, TRAIN_ENCODER_DEFAULTS,  # noqa: F401 (re-exported)
                                             LinkPredictionConfig, LinkPredictionJob)
from jaket.tasks.variants import VARIANT_LABELS, Backbone, SettingCache, full_graph
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


#: the ranking metrics each split reports
RANKING_METRICS = ("mrr", "hits@1", "hits@3", "hits@10")


def _ranked_splits(run: dict) -> list[str]:
    """The evaluation splits of one run's entry (those holding ranking metrics)."""
    return [name for name, value in run.items() if isinstance(value, dict) and "mrr" in value]


@dataclass
class TrainedLinkScorer:
    """The kept run's trained parts (:attr:`jaket.tasks.grid.RunOutcome.trained`): the scorer (its
    KM, relation map and scoring function) and the setting's backbone (LM1, trained with
    ``train_encoder``)."""

    scorer: LinkScorer
    backbone: Backbone


class LinkPredictionRuns(GridTask):
    """The runs of one comparison (:mod:`jaket.tasks.grid`): the budgets are the scoring functions;
    a run trains a :class:`LinkScorer` on ``train`` and ranks each evaluation split. Without
    ``kg`` (reading a finished run's results) only the tables and the report are available."""

    name = TASK
    title = "Link prediction"
    progress_name = "link prediction"
    curve_ylabel = "cross-entropy"
    scale, digits = 1.0, 3
    bars_file = "mrr.png"
    bars_ylabel = "MRR"

    def __init__(self, kg: KnowledgeGraph | None = None, train: np.ndarray | None = None,
                 eval_sets: dict[str, np.ndarray] | None = None, config: LinkPredictionConfig | None = None, *,
                 all_true: np.ndarray | None = None, seen: np.ndarray | None = None, device="cpu"):
        self.kg, self.train, self.eval_sets, self.config = kg, train, eval_sets or {}, config
        self.all_true, self.seen, self.device = all_true, seen, torch.device(device)
        self.histograms: dict[str, np.ndarray] = {}
        if kg is not None:
            self.units_per_run = config.steps
            self.edges = tuple(t.to(self.device) for t in _edges(kg, train))
            self.graph = train_view(kg, train)
            self.cache = SettingCache(config, kg, self.device, max_length=config.description_max_length,
                                      relation_memory=config.relation_memory)

    def run(self, cell: Cell, progress, keep: bool) -> RunOutcome:
        config, seed = self.config, cell.seed
        backbone = self.cache.backbone(cell.variant, seed, fresh=config.train_encoder)  # a trained LM1 is not reused
        memory = None if config.train_encoder else self.cache.memory(cell.variant, seed)
        started, cpu_started = time.perf_counter(), time.process_time()
        torch.manual_seed(seed)
        model = LinkScorer(backbone, cell.budget, self.kg.num_relations, metric=config.metric,
                           temperature=config.temperature).to(self.device)  # built on the CPU: seeded alike
        run: dict = {}
        if config.train_encoder:
            losses, run["encoder_training"], memory = train_with_encoder(
                model, backbone, self.graph, self.train, config, seed, progress)
        else:
            losses = train_scorer(model, memory, self.graph, self.train, config, seed, progress)
        run.update(train_loss=losses, train_seconds=time.perf_counter() - started,
                   train_cpu_seconds=time.process_time() - cpu_started)
        model.eval()
        with torch.no_grad():
            entities = model.entities(memory, *self.edges)
            relations = model.relations(memory)
        for name, triples in self.eval_sets.items():
            run[name] = _evaluate(model, entities, relations, triples, self.all_true, self.seen, config)
            self.histograms[f"{cell.variant} {cell.budget}"] = run[name].pop("ranks")
        run["seconds"] = time.perf_counter() - started
        return RunOutcome(run, TrainedLinkScorer(model, backbone) if keep else None)

    def finetuned(self, cell: Cell, run: dict, trained: TrainedLinkScorer) -> FinetunedLinkPredictor:
        settings = {"memory_seed": cell.seed, "kg": {"entities": int(self.kg.num_entities),
                                                     "relations": int(self.kg.num_relations),
                                                     "fingerprint": self.kg.fingerprint()},
                    "training": {k: v for k, v in run.items() if k != "train_loss"}}
        return FinetunedLinkPredictor(trained.backbone, trained.scorer, self.config, cell.variant, settings)

    def scores(self, run: dict) -> dict[str, float]:
        """MRR of each evaluation split (the paired differences' figure)."""
        return {f"{name} MRR": run[name]["mrr"] for name in _ranked_splits(run)}

    def summarize(self, runs: list[dict]) -> dict:
        """Mean and spread over seeds of each split's metrics, and of its seen / unseen triples apart
        when the split has both kinds."""
        summary = {}
        for name in _ranked_splits(runs[0]):
            summary[name] = rep.summarize_seeds([{m: r[name][m] for m in RANKING_METRICS} for r in runs])
            for part in ("seen", "unseen"):
                if all(part in r[name] and r[name][part]["count"] for r in runs) and \
                        all(r[name][part]["count"] < r[name]["count"] for r in runs):
                    summary[f"{name} ({part})"] = rep.summarize_seeds(
                        [{m: r[name][part][m] for m in RANKING_METRICS} for r in runs])
        return summary

    def scores_table(self, results) -> str:
        """One row per (setting, scorer, split), the four ranking metrics as columns."""
        rows = []
        for variant, by_scorer in results["summary"].items():
            for scorer, by_split in by_scorer.items():
                for split, metrics in by_split.items():
                    rows.append([VARIANT_LABELS.get(variant, variant), scorer, split] + [
                        rep.format_mean_std(metrics[m]["values"], scale=1.0, digits=3) for m in RANKING_METRICS])
        return rep.markdown_table(["Model", "Scorer", "Split", "MRR", "Hits@1", "Hits@3", "Hits@10"], rows)

    def intro(self, results: dict) -> list[str]:
        d = results["data"]
        return [f"{d['entities']} entities, {d['relations']} relations, {d['train_triples']} training triples. "
                "Filtered ranking against every entity, head and tail prediction averaged; mean ± std over "
                f"seeds {results['config']['seeds']}.", ""]

    def plots(self, results: dict, out_dir: Path) -> list[str]:
        if not self.histograms:
            return []
        rep.plot_histogram(self.histograms, out_dir / "rank_histogram.png", title="filtered ranks (last seed)")
        return ["rank_histogram.png"]


def run_link_prediction(kg: KnowledgeGraph, train: np.ndarray, evaluation: dict[str, np.ndarray],
                        config: LinkPredictionConfig,
                        out_dir: Path | None = None, save_dir: Path | None = None, device="cpu",
                        log_with=(), keep_model: bool = False) -> TaskResult:
    """Train on ``train`` (indices of ``kg``), evaluate on each named split; with ``save_dir``
    the first run's model is saved there (a fine-tuned folder, :mod:`jaket.tasks.link_prediction.finetuned`);
    ``keep_model``: the result's ``model`` is that model in memory.
    ``device``: where the backbone, the memory, the scorer and every batch run. ``log_with``:
    trackers of each step's loss (:mod:`jaket.tasks.tracking`). ``runs[setting][scorer]`` holds
    one entry per seed (:mod:`jaket.tasks.grid`)."""
    if len(train) == 0:
        raise ValueError("no training triples")
    all_true = np.concatenate([train] + [v for v in evaluation.values()])
    eval_all = np.concatenate(list(evaluation.values())) if evaluation else np.zeros((0, 3), np.int64)
    train = _inductive_holdout(train, eval_all, config.holdout_fraction, 0)
    seen = np.zeros(kg.num_entities, dtype=bool)
    seen[train[:, 0]] = True
    seen[train[:, 2]] = True
    eval_sets = {k: (v[: config.max_eval_triples] if config.max_eval_triples else v) for k, v in evaluation.items()}
    results: dict = {"task": TASK, "device": str(torch.device(device)),
                     "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
                     "data": {"entities": int(kg.num_entities), "relations": int(kg.num_relations),
                              "train_triples": int(len(train)),
                              **{f"{k}_triples": int(len(v)) for k, v in evaluation.items()},
                              "eval_seen_triples": {name: int((seen[v[:, 0]] & seen[v[:, 2]]).sum())
                                                    for name, v in eval_sets.items()}},
                     "km": {v: config.variant_config(v).km_structure() for v in config.variants if variant_spec(v).has_km}}
    task = LinkPredictionRuns(kg, train, eval_sets, config, all_true=all_true, seen=seen, device=device)
    if out_dir is not None:
        write_split(kg, train, eval_sets, Path(out_dir) / "split")
    return run_grid(task, Grid(tuple(config.variants), tuple(config.seeds), tuple(config.scorers)), results,
                    out_dir=out_dir, save_dir=save_dir, log_with=log_with, keep_model=keep_model)


def run_job(job: LinkPredictionJob, out_dir: Path | None = None, *, save_dir: Path | None = None,
            device="cpu", log_with=(), keep_model: bool = False, inputs: tuple | None = None) -> TaskResult:
    """The task of a resolved job (:func:`jaket.tasks.cli_common.resolve_job`, which sets the
    mode's defaults): its data (``inputs``: ``(kg, train triples, {name: evaluation triples})`` as
    :func:`read_inputs` checked the job and read ``job.data``; done here when None), then
    :func:`run_link_prediction`. ``jaket finetune|evaluate link-prediction`` and
    :func:`jaket.pipelines.pipeline` run this through the spec's runner
    (:func:`jaket.tasks.link_prediction.cli.run_job`), which reads the data before this module's
    model code is imported."""
    kg, train, evaluation = inputs if inputs is not None else read_inputs(job)
    return run_link_prediction(kg, train, evaluation, job, out_dir, save_dir=save_dir, device=device,
                               log_with=log_with, keep_model=keep_model)


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


def results_table(results) -> str:
    """One row per (setting, scorer, split): MRR and Hits@k, mean ± std over seeds."""
    return LinkPredictionRuns().table(results)
