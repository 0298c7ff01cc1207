"""Entity classification on an unseen KG (the paper's Table 3).

Protocol
--------
* ``KG'`` is a KG the model never saw in pre-training (for WordNet: a held-out set of synsets and
  the triples among them, ``KnowledgeGraph.induced_subgraph``). Labels are the entity categories
  (WordNet: the lexicographer file, e.g. ``noun.animal``); entities without one are not
  classified but still take part in the graph.
* Semi-supervised, transductive: the labelled entities of ``KG'`` are split 20% / 20% / 60%
  (train / dev / test); ``train_fraction`` keeps 100%, 20% or 5% of the training part. The whole
  graph (all entities and triples, no labels) is visible, as in the paper. A user's own split
  files (:mod:`jaket.tasks.splits`) replace the random split; they may also carry the labels.
* Predictions come from the knowledge module's output over ``KG'``: LM1 on the descriptions ->
  frozen memory -> KM (trained) -> linear head. The ``lm`` setting classifies the full encoder's
  description embedding instead (see :mod:`jaket.tasks.variants`).
* Each seed draws its own split and initialisation; the test accuracy at the best dev accuracy
  is reported as mean ± std over the seeds. With ``patience``, training stops once the dev
  accuracy has not improved for that many epochs (early stopping); the weights of the best dev
  epoch are the ones kept.
* ``jaket finetune`` saves the run of the first training fraction and the first seed as a
  fine-tuned folder (:class:`FinetunedEntityClassifier`, format in :mod:`jaket.tasks.finetuned`)
  that ``jaket predict entity-classification`` uses.
* :func:`label_leakage` checks that no entity description spells a category name (as whole words).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from jaket.kg.graph import KnowledgeGraph
from jaket.model.device import autocast
from jaket.tasks import report as rep
from jaket.tasks.grid import Cell, Grid, GridTask, RunOutcome, run_grid
from jaket.tasks.results import TaskResult
from jaket.tasks.training import step_done
from jaket.tasks.entity_classification.data import (Split, identical_fractions, load_data, make_split,  # noqa: F401
                                                    split_entities, subsample_train)
from jaket.tasks.entity_classification.finetuned import FinetunedEntityClassifier, predict_rows  # noqa: F401
from jaket.tasks.entity_classification.model import EntityClassifier, category_prior  # noqa: F401
from jaket.tasks.heldout import choose_heldout, label_leakage, split_pretraining, wordnet_protocol  # noqa: F401
from jaket.tasks.entity_classification.job import (TASK, EntityClassificationConfig,  # noqa: F401 (re-exported)
                                                   EntityClassificationJob)
from jaket.tasks.variants import VARIANT_LABELS, Backbone, SettingCache, full_graph
from jaket.model.memory import FrozenMemory
from jaket.tasks.settings import variant as variant_spec

logger = logging.getLogger(__name__)


def train_one(backbone: Backbone, memory: FrozenMemory, kg: KnowledgeGraph, split: Split,
              config: EntityClassificationConfig,
              seed: int, edges=None, progress: tqdm | None = None, keep_model: bool = False) -> dict:
    """Fine-tune the KM (when present) and the head on ``split.train``; select by dev accuracy,
    stop early after ``config.patience`` epochs without a better one. ``keep_model``: the result
    holds the classifier with the weights of the best dev epoch (``"model"``)."""
    torch.manual_seed(seed)
    device = memory.entities.device
    labels = torch.as_tensor(np.asarray(kg.entity_category), dtype=torch.long).to(device)
    num_classes = int(len(kg.category_names))
    edge_index, edge_type = (t.to(device) for t in (edges if edges is not None else full_graph(kg)))
    knowledge = backbone.knowledge
    if knowledge is not None:
        knowledge = _fresh_copy(knowledge)
    prior = category_prior(backbone, kg.category_names) if config.head_init == "category" else None
    model = EntityClassifier(knowledge, backbone.hidden_size, num_classes, config.dropout, prior).to(device)
    if prior is not None:  # start exactly at the pre-trained head's predictions
        nn.init.zeros_(model.head[-1].weight)
        nn.init.zeros_(model.head[-1].bias)
    groups = [{"params": model.head.parameters(), "lr": config.head_lr}]
    if prior is not None:
        groups.append({"params": prior.parameters(), "lr": config.head_lr})
    if knowledge is not None and config.km_lr > 0:
        groups.append({"params": knowledge.parameters(), "lr": config.km_lr})
    elif knowledge is not None:  # km_lr = 0: the KM stays as it was (a probe of its features)
        knowledge.requires_grad_(False)
    optimizer = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    train, dev, test = (torch.as_tensor(part, dtype=torch.long).to(device)
                        for part in (split.train, split.dev, split.test))
    history = {"train_loss": [], "dev_accuracy": []}
    best = (-1.0, None, 0, None)
    best_state = None
    stopped = None
    for epoch in range(config.epochs):
        model.train()
        with autocast(device, config.bf16):
            logits = model(memory, edge_index, edge_type)
        loss = nn.functional.cross_entropy(logits[train].float(), labels[train])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad(), autocast(device, config.bf16):
            predicted = model(memory, edge_index, edge_type).argmax(-1)
        dev_acc = float((predicted[dev] == labels[dev]).float().mean()) if len(dev) else 0.0
        history["train_loss"].append(loss.item())
        history["dev_accuracy"].append(dev_acc)
        if dev_acc > best[0]:
            test_acc = float((predicted[test] == labels[test]).float().mean()) if len(test) else None
            best = (dev_acc, test_acc, epoch, predicted[test].cpu().numpy().copy())
            if keep_model:
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        step_done(progress, history["train_loss"][-1])
        if config.patience is not None and epoch - best[2] >= config.patience:
            stopped = epoch
            if progress is not None:
                progress.update(config.epochs - epoch - 1)
            break
    run = {"dev_accuracy": best[0], "test_accuracy": best[1], "best_epoch": best[2],
           "stopped_early_at_epoch": stopped, "history": history, "test_predictions": best[3]}
    if keep_model:
        if best_state is not None:
            model.load_state_dict(best_state)
        run["model"] = model.eval()
    return run


def _fresh_copy(module: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(module)


def majority_baseline(kg: KnowledgeGraph, split: Split) -> float | None:
    labels = np.asarray(kg.entity_category)
    counts = np.bincount(labels[split.train], minlength=len(kg.category_names))
    return float((labels[split.test] == counts.argmax()).mean()) if len(split.test) else None


def present_categories(kg: KnowledgeGraph):
    """``(kg', dropped)``: ``kg`` with only the categories some entity has (indices remapped,
    names kept sorted), so the label space -- and with it the classifier's initialisation --
    is the same whether KG' was built in memory (which keeps every category name of the source
    KG) or saved and loaded again (which keeps only those in use)."""
    import dataclasses

    labels = np.asarray(kg.entity_category)
    present = np.unique(labels[labels >= 0])
    if len(present) == len(kg.category_names):
        return kg, []
    new_index = np.full(len(kg.category_names), -1, dtype=np.int64)
    new_index[present] = np.arange(len(present))
    remapped = np.where(labels >= 0, new_index[np.maximum(labels, 0)], -1)
    dropped = [kg.category_names[i] for i in range(len(kg.category_names)) if new_index[i] < 0]
    return dataclasses.replace(kg, entity_category=remapped,
                               category_names=[kg.category_names[i] for i in present]), dropped


@torch.no_grad()
def zero_shot_predictions(backbone: Backbone, memory: FrozenMemory, kg: KnowledgeGraph, edges) -> np.ndarray | None:
    """Every entity's category in ``kg`` (index into ``kg.category_names``; -1 = a category ``kg``
    lacks) from the *pre-trained* category head (pre-training task 1) over the pre-trained KM,
    with no label of ``kg`` seen: a category the head knows is matched by name. ``None`` when the
    backbone has no category head or shares no category name with ``kg``."""
    if backbone.category_head is None or backbone.knowledge is None:
        return None
    own = {name: i for i, name in enumerate(kg.category_names)}
    to_kg = torch.as_tensor([own.get(name, -1) for name in backbone.category_names], dtype=torch.long)
    if not (to_kg >= 0).any():
        return None
    knowledge, head = backbone.knowledge, backbone.category_head
    modes = (knowledge.training, head.training)
    knowledge.eval(), head.eval()
    device = memory.entities.device
    try:
        logits = head(knowledge(memory.entities, edges[0].to(device), edges[1].to(device), memory.relations))
    finally:
        knowledge.train(modes[0]), head.train(modes[1])
    return to_kg[logits.argmax(1).cpu()].numpy()


def zero_shot_accuracy(backbone: Backbone, memory: FrozenMemory, kg: KnowledgeGraph, entities: np.ndarray,
                       edges) -> float | None:
    """Accuracy on ``entities`` of :func:`zero_shot_predictions` (``None`` when there are none).

    This measures what joint pre-training put into LM1 + KM about categories of entities it never
    saw; the fine-tuned rows start a fresh head instead, as the paper does."""
    predicted = zero_shot_predictions(backbone, memory, kg, edges)
    if predicted is None:
        return None
    return float((predicted[entities] == np.asarray(kg.entity_category)[entities]).mean())


def _results_header(kg: KnowledgeGraph, config: EntityClassificationConfig, device, leakage: dict,
                    unused_categories, splits, fixed) -> dict:
    """What a run's ``metrics.json`` says before any setting runs: the task, KG, split and KMs."""
    return {"task": TASK, "device": str(torch.device(device)),
            "config": _jsonable(asdict(config)),
            "kg": {"entities": int(kg.num_entities), "relations": int(kg.num_relations),
                   "triples": int(len(kg.triples)), "categories": int(len(kg.category_names)),
                   "labelled": int((np.asarray(kg.entity_category) >= 0).sum()),
                   "unused_categories_dropped": unused_categories},
            "leakage": leakage, "runs": {}, "summary": {},
            "split": ({"files": splits.files, "labels": "files" if splits.labelled_by_files else "categories",
                       **{k: int(len(getattr(fixed, k))) for k in ("train", "dev", "test")}}
                      if splits is not None else {"random": list(config.split)}),
            "km": {v: config.variant_config(v).km_structure() for v in config.variants if variant_spec(v).has_km}}


@dataclass
class TrainedClassifier:
    """The kept run's trained parts (:attr:`jaket.tasks.grid.RunOutcome.trained`): the classifier
    head, the setting's backbone (LM1, the KM), the split it was trained on and its training share."""

    head: EntityClassifier
    backbone: Backbone
    split: Split
    fraction: float


class EntityClassificationRuns(GridTask):
    """The runs of one comparison on ``kg`` (:mod:`jaket.tasks.grid`): the budgets are the
    training fractions; a run is :func:`train_one` on the seed's split. Without ``kg`` (reading
    a finished run's results) only the tables and the report are available."""

    name = TASK
    title = "Entity classification on an unseen KG"
    progress_name = "entity classification"
    progress_unit = "epoch"
    curve_xlabel = "epoch"
    curve_ylabel = "cross-entropy"
    bars_file = "accuracy.png"

    def __init__(self, kg: KnowledgeGraph | None = None, config: EntityClassificationConfig | None = None, *,
                 fixed: Split | None = None, splits=None, device="cpu"):
        self.kg, self.config, self.fixed, self.splits = kg, config, fixed, splits
        if kg is not None:
            self.labels = np.asarray(kg.entity_category)
            self.edges = full_graph(kg)
            self.units_per_run = config.epochs
            self.fractions = {str(f): f for f in config.train_fractions}
            self.cache = SettingCache(config, kg, device, max_length=config.description_max_length,
                                      relation_memory=config.relation_memory)
        self.confusion = self.zero_shot = None

    def describe(self, cell: Cell) -> str:
        return f"{cell.variant} train {self.fractions[cell.budget]:g} seed {cell.seed}"  # names the run's curve

    def run(self, cell: Cell, progress, keep: bool) -> RunOutcome:
        config, fraction = self.config, self.fractions[cell.budget]
        backbone = self.cache.backbone(cell.variant, cell.seed)
        memory = self.cache.memory(cell.variant, cell.seed)
        split = make_split(self.labels, cell.seed, config, fraction, self.fixed)
        run = train_one(backbone, memory, self.kg, split, config, cell.seed, self.edges, progress, keep_model=keep)
        first = fraction == config.train_fractions[0] and cell.seed == config.seeds[0]
        if cell.variant == config.variants[-1] and first and len(split.test):
            self.confusion = rep.confusion_matrix(run["test_predictions"], self.labels[split.test],
                                                  len(self.kg.category_names))
        run.pop("test_predictions")
        run["train_size"] = int(len(split.train))
        model = run.pop("model", None)
        return RunOutcome(run, TrainedClassifier(model, backbone, split, fraction) if keep else None)

    def finetuned(self, cell: Cell, run: dict, trained: TrainedClassifier) -> FinetunedEntityClassifier:
        settings = _finetuned_settings(self.config, self.kg, cell.seed, trained.split, self.splits, run,
                                       trained.fraction)
        return FinetunedEntityClassifier(trained.backbone, trained.head, list(self.kg.category_names),
                                         self.config.variant_config(cell.variant), settings=settings)

    def after_seed(self, variant: str, seed: int, results: dict) -> None:
        """The pre-trained category head's accuracy without a label (``jaket`` only): the head and
        the KM do not depend on the seed, the test split does."""
        backbone, memory = self.cache.backbone(variant, seed), self.cache.memory(variant, seed)
        if seed == self.config.seeds[0]:
            self.zero_shot = zero_shot_predictions(backbone, memory, self.kg, self.edges)
        test = make_split(self.labels, seed, self.config, 1.0, self.fixed).test
        if self.zero_shot is not None and len(test):
            results.setdefault("zero_shot", {}).setdefault(variant, []).append(
                {"seed": seed, "test_accuracy": float((self.zero_shot[test] == self.labels[test]).mean())})

    def curve(self, run: dict) -> list[float]:
        return run["history"]["train_loss"]

    def scores(self, run: dict) -> dict[str, float]:
        if run.get("test_accuracy") is None:  # a user split without test entities: the dev figure
            return {"dev_accuracy": run["dev_accuracy"]}
        return {"test_accuracy": run["test_accuracy"]}

    def metrics(self, run: dict) -> dict[str, float]:
        return {"test_accuracy": run["test_accuracy"], "dev_accuracy": run["dev_accuracy"]}

    def header(self, budget: str | None, score: str) -> str:
        return f"{float(budget) * 100:g}%" + (" (dev)" if score == "dev_accuracy" else "")

    def extra_rows(self, results: dict, columns: list[str]) -> list[list[str]]:
        rows = []
        for variant, runs in results.get("zero_shot", {}).items():
            value = rep.format_mean_std([r["test_accuracy"] for r in runs])
            rows.append([f"{VARIANT_LABELS.get(variant, variant)}, zero-shot (pre-trained category head, no label)"]
                        + [value] * len(columns))
        majority = results.get("majority_baseline")
        if majority:
            rows.append(["(majority class)"] + [rep.format_mean_std(majority[c]["values"]) if c in majority
                                                else "-" for c in columns])
        return rows

    def intro(self, results: dict) -> list[str]:
        kg = results["kg"]
        seen = kg.get("in_pretraining")
        which = ("KG (the one the model was pre-trained on, so not a KG it never saw: this is not the paper's "
                 "Table 3 protocol)" if seen else "KG' (unseen in pre-training)" if seen is False else "KG")
        return [f"{which}: {kg.get('path', '')}{': ' if kg.get('path') else ''}{kg['entities']} entities, "
                f"{kg['relations']} relations, {kg['triples']} triples, "
                f"{kg['labelled']} labelled entities in {kg['categories']} categories. {_split_sentence(results)}; "
                f"seeds {results['config']['seeds']}; test accuracy (%) at the best dev epoch, mean ± std.", ""]

    def epilogue(self, results: dict) -> list[str]:
        leak = results["leakage"]
        return [*[f"Warning: {w}" for w in results.get("warnings", [])], *zero_shot_explained(results),
                f"Leakage check: {leak['descriptions_with_full_category_name']} of {leak['descriptions_checked']} "
                f"descriptions contain a category name; {leak['labelled_descriptions_containing_own_category_word']} "
                f"of {leak['labelled_entities']} labelled descriptions contain the last word of their "
                "category as an ordinary word.", ""]

    def plots(self, results: dict, out_dir: Path) -> list[str]:
        names = []
        dev_curves = {v: next(iter(b.values()))[0]["history"]["dev_accuracy"] for v, b in results["runs"].items()}
        rep.plot_curves(dev_curves, out_dir / "dev_accuracy.png", xlabel="epoch", ylabel="dev accuracy")
        names.append("dev_accuracy.png")
        if self.confusion is not None and self.kg is not None:
            rep.plot_confusion(self.confusion, list(self.kg.category_names), out_dir / "confusion.png")
            names.append("confusion.png")
        return names


def zero_shot_explained(results: dict) -> list[str]:
    """The report's word on a zero-shot row that reaches the fine-tuned one (within 1 point): why the
    pre-trained head knows the labels already, and what to do; nothing otherwise."""
    zero = {v: np.mean([r["test_accuracy"] for r in runs]) for v, runs in results.get("zero_shot", {}).items()}
    tuned = [b["test_accuracy"]["mean"] for v in zero for b in results.get("summary", {}).get(v, {}).values()
             if isinstance(b, dict) and isinstance(b.get("test_accuracy"), dict)]
    if not zero or not tuned or max(zero.values()) * 100 < min(tuned) - 1:
        return []
    leak, seen = results["leakage"], results["kg"].get("in_pretraining")
    why = []
    if seen:
        why.append("this KG is the one the model was pre-trained on, and its categories were the targets of "
                   "pre-training's entity category prediction: the head has seen these very labels")
    if leak["descriptions_with_full_category_name"]:
        why.append(f"label leakage: {leak['descriptions_with_full_category_name']} entity description(s) spell a "
                   f"category name ({', '.join(leak['categories_spelled'][:5])}; e.g. "
                   f"{', '.join(leak.get('entities_spelling_a_category', [])[:3])}), which the model reads")
    if not why:
        why.append("the pre-trained head's categories already separate this KG's entities")
    return [f"Note: the zero-shot row reaches the fine-tuned one because {'; and '.join(why)}. What to do: measure "
            "on a KG pre-training never saw (an unseen KG', e.g. entities held out of pre-training), and remove "
            "category names from the descriptions; only then does the table measure what fine-tuning learns.", ""]


def pretraining_kg(kg: KnowledgeGraph, model: Path | None) -> bool | None:
    """Whether ``kg`` is the KG the model at ``model`` was pre-trained on (its entity memory's KG
    fingerprint), None when there is no model or its memory does not say."""
    if model is None:
        return None
    meta = Path(model) / "memory" / "memory.json"
    try:
        fingerprint = json.loads(meta.read_text(encoding="utf-8")).get("kg_fingerprint")
    except (OSError, ValueError):
        return None
    return None if not fingerprint else fingerprint == kg.fingerprint()


def run_entity_classification(kg: KnowledgeGraph, config: EntityClassificationConfig, out_dir: Path | None = None,
                              splits=None, save_dir: Path | None = None, device="cpu", log_with=(),
                              keep_model: bool = False) -> TaskResult:
    """Every (variant, training fraction, seed) on ``kg``; writes the report when ``out_dir``.
    Categories no entity of ``kg`` has are not classes (:func:`present_categories`).

    ``splits``: the user's :class:`jaket.tasks.splits.EntitySplits` (used for every seed; with
    labels, they replace the KG's categories) instead of the random 20/20/60 split.
    ``save_dir``: write the classifier of the first (variant, training fraction, seed) there as a
    fine-tuned folder (:class:`FinetunedEntityClassifier`); ``keep_model``: the result's ``model`` is
    that classifier in memory. ``device``: where the backbone,
    the memory and the classifier run. ``log_with``: trackers of each epoch's loss
    (:mod:`jaket.tasks.tracking`)."""
    fixed = None
    if splits is not None:
        kg = splits.relabel(kg)
        fixed = Split(splits.train, splits.dev, splits.test)
    kg, unused_categories = present_categories(kg)
    leakage = label_leakage(kg)
    if leakage["descriptions_with_full_category_name"]:
        logger.warning("label leakage: %d entity description(s) spell a category name as whole words: %s",
                       leakage["descriptions_with_full_category_name"], leakage["categories_spelled"])
    labels = np.asarray(kg.entity_category)
    results = _results_header(kg, config, device, leakage, unused_categories, splits, fixed)
    results["kg"]["in_pretraining"] = pretraining_kg(kg, config.pretrained)
    if results["kg"]["in_pretraining"]:
        logger.warning("this KG is the one the model was pre-trained on: the report measures classification on a "
                       "seen KG, not the paper's unseen KG' (hold entities out of pre-training for that)")
    results["warnings"] = identical_fractions(labels, config, fixed)
    for warning in results["warnings"]:
        logger.warning(warning)
    majority = {str(f): [majority_baseline(kg, make_split(labels, s, config, f, fixed)) for s in config.seeds]
                for f in config.train_fractions}
    results["majority_baseline"] = {k: rep.summarize_seeds([{"acc": v} for v in vals])["acc"]
                                    for k, vals in majority.items() if None not in vals}
    task = EntityClassificationRuns(kg, config, fixed=fixed, splits=splits, device=device)
    if results["kg"]["in_pretraining"]:
        task.title = "Entity classification on the pre-training KG"
    grid = Grid(tuple(config.variants), tuple(config.seeds), tuple(str(f) for f in config.train_fractions))
    return run_grid(task, grid, results, out_dir=out_dir, save_dir=save_dir, log_with=log_with,
                    keep_model=keep_model)


def run_job(job: EntityClassificationJob, out_dir: Path | None = None, *, save_dir: Path | None = None,
            device="cpu", log_with=(), keep_model: bool = False, inputs: tuple | None = None) -> TaskResult:
    """The task of a resolved job (:func:`jaket.tasks.cli_common.resolve_job`): its data
    (``inputs``: ``(KG', user splits or None)`` as :func:`load_data` read them from ``job.data``;
    read here when None), then :func:`run_entity_classification`. ``jaket finetune|evaluate
    entity-classification`` and :func:`jaket.pipelines.pipeline` run this through the spec's runner
    (:func:`jaket.tasks.entity_classification.cli.run_job`), which reads the data before this
    module's model code is imported."""
    kg, splits = inputs if inputs is not None else load_data(job.data)
    return run_entity_classification(kg, job, out_dir, splits=splits, save_dir=save_dir, device=device,
                                     log_with=log_with, keep_model=keep_model)


def results_table(results) -> str:
    """Table 3's shape: one row per setting, one column per training size (test accuracy %), the
    zero-shot and majority-class rows below."""
    return EntityClassificationRuns().scores_table(results)


def paired_table(results) -> str:
    """Paired differences in points (mean [95% CI]) per training size."""
    return EntityClassificationRuns().paired_table(results)


def scores_and_paired_table(results) -> str:
    """The command's table: :func:`results_table`, then :func:`paired_table` when there is one."""
    paired = paired_table(results)
    return results_table(results) + ("\n\n" + paired if paired else "")


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _split_sentence(results: dict) -> str:
    split = results.get("split", {})
    if "files" in split:
        labels = "labels from the split files" if split.get("labels") == "files" else "labels = KG categories"
        return (f"User split files ({split['train']} train / {split['dev']} dev / {split['test']} test "
                f"entities, {labels})")
    return "Split {}/{}/{} (train/dev/test) per seed".format(*(f"{100 * f:g}" for f in split.get("random", (0.2, 0.2, 0.6))))


# ----------------------------------------------------------------------------- the fine-tuned model


def _finetuned_settings(config: EntityClassificationConfig, kg: KnowledgeGraph, seed: int, split: Split, splits,
                        run: dict,
                        fraction: float) -> dict:
    """The ``task.json`` fields of a classifier fine-tuned on ``kg`` (labels already final)."""
    labelled = np.flatnonzero(np.asarray(kg.entity_category) >= 0)
    return {
        "memory_seed": int(seed), "dropout": float(config.dropout),
        "description_max_length": int(config.description_max_length),
        "relation_memory": bool(config.relation_memory),
        "label_source": "files" if splits is not None and splits.labelled_by_files else "categories",
        "labelled_entity_ids": [kg.entity_ids[i] for i in labelled.tolist()],
        "kg": {"entities": int(kg.num_entities), "relations": int(kg.num_relations),
               "fingerprint": kg.fingerprint()},
        "training": {"seed": int(seed), "train_fraction": float(fraction), "train_size": int(len(split.train)),
                     "dev_size": int(len(split.dev)), "test_size": int(len(split.test)),
                     "dev_accuracy": run["dev_accuracy"], "test_accuracy": run["test_accuracy"],
                     "best_epoch": run["best_epoch"], "stopped_early_at_epoch": run["stopped_early_at_epoch"],
                     "config": _jsonable(asdict(config))},
    }
