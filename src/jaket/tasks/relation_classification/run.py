"""Few-shot relation classification with the PAIR framework (the paper's Table 1).

PAIR (Gao et al., 2019): each query is paired with each support instance as *one* sequence
(``query [SEP] support``, entity markers ``[ head ]`` and ``< tail >`` around the entities); the
encoder's [CLS] output goes through a linear layer to a binary "same relation" score; the query is
assigned to the relation whose supports have the highest mean score. Training: binary
cross-entropy over the pairs of episodes drawn from the *training* relations. Evaluation: N-way
K-shot episodes over the *evaluation* relations (disjoint from the training ones), accuracy over
``episodes`` (>= 1000 by default) episodes, one query each.

**Training and evaluation relations.** With separate training data (``--train-data FILE ...``,
e.g. FewRel 2.0's ``nyt_train.json``), every relation of the training files trains and every
relation of ``--data`` is evaluated; a relation in both is refused (an episode must never
evaluate a relation it trained on) unless ``drop_overlap`` (``--drop-overlap``) removes it from the
training side.
With one file, its relations are divided. FewRel data beside this repo has 8 relations. Default
split (relation ids in sorted order): the first 3 train (P177 crosses, P206 located next to body of water, P2094 competition class),
the other 5 evaluate (P26 spouse, P410 military rank, P412 voice type, P413 position played,
P641 sport). 5-way 1-shot and 5-way 5-shot run; **10-way 1-shot cannot**: it needs 10 evaluation
relations and only 8 exist in total (even with none left for training), so asking for it raises
a clear error instead of silently using fewer.

Settings: the paper uses the pre-training KG's entities for FewRel. Our default pre-training KG is
WordNet, which does not contain FewRel's Wikidata entities, so there is nothing to fuse: ``lm`` is
the base encoder and ``jaket`` is the jointly pre-trained language module (LM1 then LM2, no
fusion). ``gnn``, ``lm+g`` and ``lm+g+m`` need entity links into the KG and are rejected here
(as in the paper, which also does not use relation embeddings in this task).
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from jaket.model.device import autocast, module_device
from jaket.tasks.relation_classification.data import (FewRelData, FewRelInstance, kg_relation_instances,  # noqa: F401
                                                      load_fewrel, merge_fewrel)
from jaket.tasks.relation_classification.data import (RelationOverlapError, checked_relation_split,  # noqa: F401
                                                      load_relations, read_inputs, relation_split)
from jaket.tasks.relation_classification.model import SUPPORTED_VARIANTS, PairEncoder  # noqa: F401 (re-exported)
from jaket.tasks.relation_classification.finetuned import FinetunedPairClassifier
from jaket.tasks.settings import VARIANT_LABELS, VariantError, builtin_wordnet_notice  # noqa: F401
from jaket.tasks.relation_classification.job import (TASK, RelationClassificationConfig,  # noqa: F401 (re-exported)
                                                     RelationClassificationData, RelationClassificationJob)
from jaket.tasks.grid import Cell, Grid, GridTask, RunOutcome, run_grid
from jaket.tasks.results import TaskResult
from jaket.tasks.training import fine_tuning_step

logger = logging.getLogger(__name__)


def sample_episode(data: FewRelData, relations: list[str], way: int, shot: int, queries_per_class: int,
                   rng: np.random.Generator) -> tuple[list[str], list[list[FewRelInstance]], list[tuple[FewRelInstance, int]]]:
    """N relations, K supports each, and queries (instance, relation position) disjoint from them."""
    if way > len(relations):
        raise ValueError(f"{way}-way episodes need at least {way} relations; only {len(relations)} "
                         f"are available ({', '.join(relations)})")
    chosen = [relations[i] for i in rng.choice(len(relations), size=way, replace=False)]
    supports, queries = [], []
    for position, relation in enumerate(chosen):
        pool = data.instances[relation]
        picked = rng.choice(len(pool), size=shot + queries_per_class, replace=False)
        supports.append([pool[i] for i in picked[:shot]])
        queries += [(pool[i], position) for i in picked[shot:]]
    return chosen, supports, queries


def _episode_scores(model: PairEncoder, supports, query: FewRelInstance, max_length: int) -> torch.Tensor:
    flat = [s for group in supports for s in group]
    scores = model([query.marked_text()] * len(flat), [s.marked_text() for s in flat], max_length)
    return scores.view(len(supports), -1)  # (N, K)


def train_pair(model: PairEncoder, data: FewRelData, relations: list[str], config: RelationClassificationConfig,
               seed: int, progress: tqdm | None = None) -> list[float]:
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.AdamW([{"params": model.encoder_parameters(), "lr": config.lr},
                                   {"params": model.score.parameters(), "lr": config.head_lr}],
                                  weight_decay=0.01)
    way = min(config.train_way, len(relations))
    device = module_device(model)
    losses = []
    model.train()
    for _ in range(config.train_steps):
        _, supports, queries = sample_episode(data, relations, way, config.train_shot, 1, rng)
        pairs_q, pairs_s, targets = [], [], []
        for query, position in queries:
            for group_index, group in enumerate(supports):
                for support in group:
                    pairs_q.append(query.marked_text())
                    pairs_s.append(support.marked_text())
                    targets.append(float(group_index == position))
        with autocast(device, config.bf16):
            logits = model(pairs_q, pairs_s, config.max_length)
        target = torch.tensor(targets, device=device)
        # balance positives and negatives (1 positive per way-1 negatives)
        weight = torch.where(target > 0, float(way - 1), 1.0)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, target, weight=weight)
        fine_tuning_step(optimizer, loss, losses, progress)
    return losses


@torch.no_grad()
def evaluate_pair(model: PairEncoder, data: FewRelData, relations: list[str], way: int, shot: int,
                  episodes: int, seed: int, max_length: int, progress: tqdm | None = None,
                  bf16: bool = False) -> float:
    """Accuracy over ``episodes`` N-way K-shot episodes (one query each)."""
    if way > len(relations):
        raise ValueError(
            f"{way}-way {shot}-shot needs at least {way} evaluation relations, but only {len(relations)} "
            f"are held out ({', '.join(relations)}); FewRel here has {len(data.relations)} relations in all")
    rng = np.random.default_rng(1_000_003 + seed)
    device = module_device(model)
    model.eval()
    correct = 0
    for _ in range(episodes):
        _, supports, queries = sample_episode(data, relations, way, shot, 1, rng)
        query, position = queries[int(rng.integers(len(queries)))]
        with autocast(device, bf16):
            scores = _episode_scores(model, supports, query, max_length)
        correct += int(int(scores.mean(-1).argmax()) == position)
        if progress is not None:
            progress.update(1)
    return correct / max(1, episodes)


#: a run's entry for an N-way K-shot setting: ``"5-1"``
_SETTING_KEY = re.compile(r"\d+-\d+")


class RelationClassificationRuns(GridTask):
    """The runs of one comparison (:mod:`jaket.tasks.grid`): no budget; a run trains PAIR on the
    training relations and scores each N-way K-shot setting on the evaluation relations. Without
    ``data`` (reading a finished run's results) only the tables and the report are available."""

    name = TASK
    title = "Few-shot relation classification (FewRel, PAIR)"
    progress_name = "relation classification"
    curve_ylabel = "BCE"

    def __init__(self, data: FewRelData | None = None, config: RelationClassificationConfig | None = None, *,
                 train_source: FewRelData | None = None, relations: tuple[list[str], list[str]] = ([], []),
                 device="cpu"):
        self.data, self.config, self.train_source, self.device = data, config, train_source, device
        self.train_rel, self.eval_rel = relations
        if config is not None:
            self.units_per_run = config.train_steps + config.episodes * len(config.settings)

    def run(self, cell: Cell, progress, keep: bool) -> RunOutcome:
        config = self.config
        torch.manual_seed(cell.seed)
        model = PairEncoder(cell.variant, config.encoder, config.pretrained).to(self.device)
        run: dict = {"train_loss": train_pair(model, self.train_source, self.train_rel, config, cell.seed, progress)}
        for way, shot in config.settings:
            run[f"{way}-{shot}"] = evaluate_pair(model, self.data, self.eval_rel, way, shot, config.episodes,
                                                 cell.seed, config.max_length, progress, config.bf16)
        return RunOutcome(run, model if keep else None)

    def finetuned(self, cell: Cell, run: dict, model: PairEncoder) -> FinetunedPairClassifier:
        """The run's PAIR classifier in memory (``finetune`` saves it, ``keep_model`` returns it)."""
        config = self.config
        return FinetunedPairClassifier(model, {
            "variant": cell.variant, "max_length": config.max_length,
            "training": {"seed": cell.seed, "steps": config.train_steps, "way": config.train_way,
                         "shot": config.train_shot, "relations": self.train_rel}}, config)

    def scores(self, run: dict) -> dict[str, float]:
        """Accuracy of each N-way K-shot setting (``"5-1"``)."""
        return {k: v for k, v in run.items() if _SETTING_KEY.fullmatch(k)}

    def header(self, budget: str | None, score: str) -> str:
        way, shot = score.split("-")
        return f"{way}-way {shot}-shot"

    def intro(self, results: dict) -> list[str]:
        return ["Training relations: " + ", ".join(f"{k} ({v})" for k, v in results["train_relations"].items()),
                "", "Evaluation relations: " + ", ".join(f"{k} ({v})" for k, v in results["eval_relations"].items()),
                "", f"Accuracy (%) over {results['config']['episodes']} episodes per seed, mean ± std over "
                f"seeds {results['config']['seeds']}.", ""]


def run_relation_classification(data: FewRelData, config: RelationClassificationConfig,
                                out_dir: Path | None = None, *, train_data: FewRelData | None = None,
                                drop_overlap: bool = False, save_dir: Path | None = None, device="cpu",
                                log_with=(), keep_model: bool = False) -> TaskResult:
    """Train PAIR on the training relations and evaluate N-way K-shot episodes of the evaluation
    relations, per setting and seed. ``train_data``: separate training relations, without those
    of ``data`` with ``drop_overlap`` (module docstring). ``save_dir``: the first run's model is
    written there (FinetunedPairClassifier); ``keep_model``: the result's ``model`` is that model
    in memory. ``device``: where the encoder and every batch run. ``log_with``: trackers of each
    step's loss (:mod:`jaket.tasks.tracking`)."""
    train_rel, eval_rel = checked_relation_split(data, config, train_data, drop_overlap)
    train_source = train_data if train_data is not None else data
    results: dict = {"task": TASK, "device": str(torch.device(device)),
                     "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
                     "train_relations": {r: train_source.relation_names[r] for r in train_rel},
                     "eval_relations": {r: data.relation_names[r] for r in eval_rel}}
    task = RelationClassificationRuns(data, config, train_source=train_source, relations=(train_rel, eval_rel),
                                      device=device)
    return run_grid(task, Grid(tuple(config.variants), tuple(config.seeds)), results, out_dir=out_dir,
                    save_dir=save_dir, log_with=log_with, keep_model=keep_model)


def run_job(job: RelationClassificationJob, out_dir: Path | None = None, *, save_dir: Path | None = None,
            device="cpu", log_with=(), keep_model: bool = False, inputs: tuple | None = None) -> TaskResult:
    """The task of a resolved job (:func:`jaket.tasks.cli_common.resolve_job`): its relations
    (``inputs``: ``(evaluation data, training data or None)`` as :func:`read_inputs` read and checked
    them; done here when None), then :func:`run_relation_classification`. ``jaket finetune|evaluate
    relation-classification`` and :func:`jaket.pipelines.pipeline` run this through the spec's runner
    (:func:`jaket.tasks.relation_classification.cli.run_job`), which reads the data before this
    module's model code is imported."""
    data, train_data = inputs if inputs is not None else read_inputs(job)
    return run_relation_classification(data, job, out_dir, train_data=train_data, drop_overlap=job.data.drop_overlap,
                                       save_dir=save_dir, device=device, log_with=log_with, keep_model=keep_model)


def results_table(results) -> str:
    """Accuracy (%) per N-way K-shot setting, mean ± std over seeds; the paired differences below."""
    return RelationClassificationRuns().table(results)
