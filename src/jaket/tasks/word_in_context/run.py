"""Word-in-context: does a target word mean the same in two texts? (WiC, a SuperGLUE task on WordNet)

The task where what the language module learned from the KG should show: JAKET's pre-training
corpus is WordNet's usage examples, each linked to its synset, and masked entity prediction
trains the language module to name the synset of a word from its context -- word-sense
disambiguation. Here the sense is exactly what is unknown, so the paper's fusion (a linked
entity's KM embedding added at the mention, Eq. 8-9) needs a design for the candidates:

1. **Candidates**: the target's senses in the KG (:class:`jaket.senses.inventory.SenseInventory`:
   its lemma and part of speech, WordNet's most frequent sense first), at most
   ``max_candidates``.
2. **Sense scores**: the pre-trained masked-entity head, restricted to the candidates: the text
   through LM1 and LM2 without fusion (the target is a removed mention, as in pre-training),
   ``q = g((Z_s + Z_o) / 2)`` at the target and ``p = softmax_k(q . E^context_k)`` over the
   candidates' memory rows. This is pre-training's own task, so JAKET starts with a sense scorer;
   LM+G+M's head starts fresh.
3. **Fusion**: the candidates' KM embeddings (Eq. 1-5 over their sampled neighbourhoods)
   averaged with ``p`` -- a soft linked entity, as KnowBert's entity attention -- added at the
   target (Eq. 8-9) before LM2 (Eq. 10). ``sense_fusion="first"`` fuses the most frequent sense
   instead (no scorer), ``"none"`` nothing.
4. **Head**: ``[t1, t2, |t1 - t2|, t1 * t2]`` of the two target representations (the usual WiC
   head, the same for every setting), plus, with a KM, the sense agreement ``p1 . p2``; an MLP gives
   the "same meaning" logit.

Why this design: a hard choice of one sense (argmax) would throw away the scorer's uncertainty and
give no gradient; fusing every candidate equally would add the same vector to both texts and
carry no information; the weighted average is differentiable, reduces to the linked entity when
the scorer is sure, and the agreement ``p1 . p2`` is the direct answer to WiC's question when the
scorer is good. ``lm`` (LM only) is the same encoder and head without the KG side.

The memory (E^context of the sense KG's descriptions by the setting's LM1) is computed once and
frozen, as in the paper's fine-tuning; the language module, KM, fusion, heads all train.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from jaket.kg.graph import KnowledgeGraph
from jaket.model.device import autocast, cpu_description
from jaket.model.heads import span_mean
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import length_sorted_batches
from jaket.tasks import report as rep
from jaket.tasks.settings import VARIANT_LABELS  # noqa: F401 (re-exported)
from jaket.tasks.word_in_context.job import TASK, WordInContextConfig, WordInContextJob
from jaket.tasks.settings import builtin_wordnet_notice, variant as variant_spec
from jaket.tasks.grid import Cell, Grid, GridTask, RunOutcome, run_grid
from jaket.tasks.epoch_checkpoint import EpochCheckpoint, checkpoints_of, remove_checkpoints, run_fingerprint
from jaket.tasks.results import TaskResult
from jaket.tasks.training import length_grouped_batches, step_done
from jaket.tasks.variants import load_backbone
from jaket.senses.inventory import SenseInventory
from jaket.tasks.word_in_context.data import WordPair, load_pairs, wordnet_pairs
from jaket.tasks.word_in_context.model import (SUPPORTED_VARIANTS, EncodedPairs, WordInContextModel, build_model,  # noqa: F401 (re-exported)
                                               encode_pairs, predict_probabilities, restrict_to_candidates,
                                               sense_graph)
from jaket.senses.graph import SenseGraph
from jaket.tasks.word_in_context.finetuned import FinetunedWordInContext, predict_rows  # noqa: F401
from jaket.senses.inventory import load_sense_kg
from jaket.train.optim import warmup_linear

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- inputs


# ----------------------------------------------------------------------------- model


# ----------------------------------------------------------------------------- training


def _optimizer(model: WordInContextModel, config: WordInContextConfig, steps: int):
    groups = [{"params": list(model.language.parameters()), "lr": config.lr},
              {"params": list(model.classifier.parameters()), "lr": config.head_lr}]
    kg_parts = [m for m in (model.knowledge, model.fusion, model.entity_head) if m is not None]
    if kg_parts:
        groups.append({"params": [p for m in kg_parts for p in m.parameters()], "lr": config.km_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    warmup = max(1, int(config.warmup_fraction * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_linear(warmup, steps))
    return optimizer, schedule


def accuracy_of(probability: np.ndarray, labels: np.ndarray) -> float:
    return rep.accuracy((probability >= 0.5).astype(int), labels.astype(int))


def fit(model: WordInContextModel, train: EncodedPairs, selection: EncodedPairs | None, graph: SenseGraph | None,
        config: WordInContextConfig, seed: int, progress=None, checkpoint: EpochCheckpoint | None = None) -> dict:
    """Fine-tune for ``config.epochs`` epochs; with ``selection`` the epoch of the best selection
    accuracy is kept (its weights restored). Returns the history (each epoch's loss, selection
    accuracy and seconds, the best epoch). ``checkpoint``: the state is saved there after every
    epoch, and a run that finds one there resumes after its epoch, exactly
    (:mod:`jaket.tasks.epoch_checkpoint`; the history says after which: ``resumed_after_epochs``)."""
    device = model.classifier[1].weight.device
    pad = int(model.language.tokenizer.pad_token_id)
    rng = np.random.default_rng(seed)
    generator = np.random.default_rng(1_000 + seed)
    per_epoch = math.ceil(len(train) / config.batch_size)
    optimizer, schedule = _optimizer(model, config, per_epoch * config.epochs)
    history: dict = {"train_loss": [], "selection_accuracy": [], "best_epoch": config.epochs}
    best, best_state, start = -1.0, None, 0
    generators = {"order": rng, "sampling": generator}
    lengths = train.pair_lengths() if config.group_by_length else None  # the same every epoch
    restored = checkpoint.restore(model, optimizer, schedule, generators) if checkpoint is not None else None
    if restored is not None:
        start, history, best, best_state = (restored[k] for k in ("epochs_done", "history", "best", "best_state"))
        history.setdefault("resumed_after_epochs", []).append(start)  # said in metrics.json, not only logged
        if progress is not None:
            progress.update(start * per_epoch)
    for epoch in range(start, config.epochs):
        began = time.perf_counter()
        model.train()
        order = rng.permutation(len(train))
        if config.group_by_length:
            batches = length_grouped_batches(order, lengths, config.batch_size, rng)
        else:
            batches = [order[begin:begin + config.batch_size] for begin in range(0, len(order), config.batch_size)]
        losses = []
        for pairs in batches:
            batch = train.batch(pairs, pad)
            with autocast(device, config.bf16):
                logits, _ = model(batch, graph, generator)
            loss = F.binary_cross_entropy_with_logits(logits.float(), batch["labels"].to(device))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            step_done(progress, losses[-1])
        history["train_loss"].append(float(np.mean(losses)))
        if selection is not None and len(selection):
            probability, _ = predict_probabilities(model, selection, graph, bf16=config.bf16, seed=seed)
            score = accuracy_of(probability, selection.labels)
            history["selection_accuracy"].append(score)
            if score > best:
                best, history["best_epoch"] = score, epoch + 1
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        history.setdefault("epoch_seconds", []).append(round(time.perf_counter() - began, 1))
        if checkpoint is not None:
            checkpoint.save(epoch + 1, model, optimizer, schedule, generators, history, best, best_state)
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


def selection_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train, selection)`` indices of ``n`` training pairs for ``seed``."""
    order = np.random.default_rng(seed).permutation(n)
    cut = int(round(fraction * n))
    return np.sort(order[cut:]), np.sort(order[:cut])


def _subset(data: EncodedPairs, pairs: np.ndarray) -> EncodedPairs:
    rows = np.concatenate([pairs, pairs + len(data)])
    return EncodedPairs([data.input_ids[r] for r in rows], data.start[rows], data.end[rows],
                        data.candidates[rows], None if data.labels is None else data.labels[pairs])


# ----------------------------------------------------------------------------- baselines


@torch.no_grad()
def target_features(language: SplitLanguageModel, data: EncodedPairs, batch_size: int = 64,
                    bf16: bool = False) -> np.ndarray:
    """``[t1, t2, |t1 - t2|, t1 * t2]`` of each pair from a frozen encoder (LM1 + LM2). The pairs are
    read as the memory refresh reads descriptions, in batches of like length
    (:func:`jaket.model.memory.length_sorted_batches`, each row put back at its pair's position), under
    the run's precision (``bf16``: autocast)."""
    language.eval()
    pad = int(language.tokenizer.pad_token_id)
    device = next(language.parameters()).device
    out = np.zeros((len(data), 4 * int(language.hidden_size)), dtype=np.float32)
    batches = length_sorted_batches(data.pair_lengths(), batch_size)
    with tqdm(total=len(data), desc="frozen encoder features", unit="pair", leave=False,
              disable=len(batches) <= 4) as bar:
        for pairs in batches:
            b = data.batch(pairs, pad)
            with autocast(device, bf16):
                hidden = language(b["input_ids"].to(device), b["attention_mask"].to(device))
            rows = torch.arange(hidden.shape[0], device=device)
            t = span_mean(hidden.float(), rows, b["start"].to(device), b["end"].to(device))
            t1, t2 = t[:len(pairs)], t[len(pairs):]
            out[pairs] = torch.cat([t1, t2, (t1 - t2).abs(), t1 * t2], dim=1).cpu().numpy()
            bar.update(len(pairs))
    return out


def frozen_feature_baseline(language: SplitLanguageModel, train: EncodedPairs, evaluation: EncodedPairs,
                            seed: int = 0, bf16: bool = False) -> dict:
    """The issue's floor for LM only: a logistic regression on the frozen base encoder's target-word
    features, its regularisation chosen on a selection part of the training pairs."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_eval = target_features(language, train, bf16=bf16), target_features(language, evaluation, bf16=bf16)
    fit_rows, select_rows = selection_split(len(train), 0.1, seed)
    best = None
    for c in (0.001, 0.01, 0.1, 1.0):
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
        clf.fit(x_train[fit_rows], train.labels[fit_rows])
        score = float((clf.predict(x_train[select_rows]) == train.labels[select_rows]).mean())
        if best is None or score > best[0]:
            best = (score, c)
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=best[1], max_iter=2000))
    clf.fit(x_train, train.labels)
    return {"accuracy": float((clf.predict(x_eval) == evaluation.labels).mean()), "C": best[1],
            "selection_accuracy": best[0]}


# ----------------------------------------------------------------------------- the comparison


def _finetuned_settings(config: WordInContextConfig, variant: str, uses_kg: bool, seed: int, pairs: int,
                        history: dict) -> dict:
    """The ``task.json`` settings of a saved run: what prediction needs to rebuild and read it."""
    return {"variant": variant, "max_length": config.max_length, "max_candidates": config.max_candidates,
            "fanouts": list(config.fanouts), "sense_fusion": config.sense_fusion,
            "description_max_length": config.description_max_length, "relation_memory": config.relation_memory,
            "dropout": config.dropout, "km": config.variant_config(variant).km_structure() if uses_kg else None,
            "training": {"seed": seed, "epochs": config.epochs, "pairs": pairs, "best_epoch": history["best_epoch"]}}


def _baselines(train_pairs: list[WordPair], eval_pairs: list[WordPair], config: WordInContextConfig, device,
               frozen_baseline: bool) -> dict:
    """The majority class of the training pairs and, with ``frozen_baseline``, a logistic regression
    on the frozen base encoder's target-word features (:func:`frozen_feature_baseline`)."""
    labels = np.asarray([p.label for p in eval_pairs], dtype=bool)
    majority = bool(np.mean([p.label for p in train_pairs]) >= 0.5)
    found = {"majority_class": float((labels == majority).mean())}
    if frozen_baseline:
        language = load_backbone(config.variant_config("lm"), 0, device=device).language
        tokenizer = language.tokenizer
        found["frozen_features"] = frozen_feature_baseline(
            language, encode_pairs(train_pairs, tokenizer, None, config.max_length, 1),
            encode_pairs(eval_pairs, tokenizer, None, config.max_length, 1), bf16=config.bf16)
    return found


class WordInContextRuns(GridTask):
    """The runs of one comparison (:mod:`jaket.tasks.grid`): no budget; a run fine-tunes one
    setting on the training pairs (epoch chosen on a held-out part of them) and scores the
    evaluation pairs. Without pairs (reading a finished run's results) only the tables and the
    report are available."""

    name = TASK
    title = "Word in context"
    progress_name = "word in context"
    curve_xlabel = "epoch"

    def __init__(self, train_pairs: list[WordPair] | None = None, eval_pairs: list[WordPair] | None = None,
                 config: WordInContextConfig | None = None, kg: KnowledgeGraph | None = None, *, device="cpu",
                 frozen_baseline: bool = True, checkpoints: dict[str, EpochCheckpoint] | None = None):
        self.train_pairs, self.eval_pairs, self.config, self.kg = train_pairs, eval_pairs, config, kg
        self.device, self.frozen_baseline = device, frozen_baseline
        #: each run's epoch checkpoint by :func:`run_name` (none: the runs are not resumable)
        self.checkpoints = checkpoints or {}
        self.inventory = SenseInventory.for_wordnet(kg) if kg is not None else None
        self.graph: SenseGraph | None = None
        self.graph_of: str | None = None
        #: what the KM settings read: the candidates per evaluation pair, the part of the KG read
        self.senses: dict = {}
        if config is not None:
            self.units_per_run = math.ceil(len(train_pairs) * (1 - config.selection_fraction)
                                           / config.batch_size) * config.epochs

    def run(self, cell: Cell, progress, keep: bool) -> RunOutcome:
        config, seed = self.config, cell.seed
        model = build_model(config, cell.variant, seed).to(self.device)
        tokenizer = model.language.tokenizer
        train_all = encode_pairs(self.train_pairs, tokenizer, self.inventory, config.max_length,
                                 config.max_candidates, "training pairs")
        evaluation = encode_pairs(self.eval_pairs, tokenizer, self.inventory, config.max_length,
                                  config.max_candidates, "evaluation pairs")
        if model.uses_kg and self.graph_of != cell.variant:  # the same LM1 every seed: one memory a setting
            sense_kg, index_of = restrict_to_candidates(self.kg, [train_all, evaluation], len(model.knowledge.layers))
            self.graph, self.graph_of = sense_graph(model, sense_kg, config, index_of), cell.variant
            self.senses["sense_kg_entities"] = {"kg": self.kg.num_entities, "read": sense_kg.num_entities}
        if model.uses_kg:  # this seed's pairs in the shared graph's numbering (a copy: nothing cached changes)
            train_all, evaluation = self.graph.localise(train_all), self.graph.localise(evaluation)
        if model.uses_kg and "candidates" not in self.senses:
            counts = [len(self.inventory.candidates(p.lemma, p.pos)) for p in self.eval_pairs]
            self.senses["candidates"] = {"evaluation_pairs_without_candidates": int(sum(c == 0 for c in counts)),
                                         "mean_candidates": float(np.mean(counts)), "max_candidates": int(max(counts))}
        graph = self.graph if model.uses_kg else None
        fit_rows, select_rows = selection_split(len(train_all), config.selection_fraction, seed)
        selection = _subset(train_all, select_rows) if len(select_rows) else None
        history = fit(model, _subset(train_all, fit_rows), selection, graph, config, seed, progress,
                      self.checkpoints.get(run_name(cell.variant, seed)))
        probability, _ = predict_probabilities(model, evaluation, graph, bf16=config.bf16, seed=seed)
        run = {"accuracy": accuracy_of(probability, evaluation.labels), **history}
        logger.info("%s seed %d: accuracy %.4f (epoch %d)", cell.variant, seed, run["accuracy"], history["best_epoch"])
        return RunOutcome(run, model if keep else None)

    def finetuned(self, cell: Cell, run: dict, model) -> FinetunedWordInContext:
        settings = _finetuned_settings(self.config, cell.variant, model.uses_kg, cell.seed, len(self.train_pairs), run)
        return FinetunedWordInContext(model, settings, self.kg)

    def scores(self, run: dict) -> dict[str, float]:
        return {"accuracy": run["accuracy"]}

    def header(self, budget: str | None, score: str) -> str:
        return "accuracy %"

    def after_grid(self, results: dict) -> None:
        results["senses"] = self.senses
        results.update(_baselines(self.train_pairs, self.eval_pairs, self.config, self.device, self.frozen_baseline))

    def extra_rows(self, results: dict, columns: list[str]) -> list[list[str]]:
        rows = []
        if "frozen_features" in results:
            rows.append(["(frozen base encoder + logistic regression)",
                         f"{100 * results['frozen_features']['accuracy']:.1f}"])
        if "majority_class" in results:
            rows.append(["(majority class)", f"{100 * results['majority_class']:.1f}"])
        return rows

    def intro(self, results: dict) -> list[str]:
        return [f"Accuracy on {results['data'].get('eval', 'the evaluation pairs')}, mean ± std over seeds "
                f"{results['config']['seeds']}; the epoch of each run chosen on "
                f"{results['config']['selection_fraction']:.0%} of the training pairs.", ""]


def run_word_in_context(train_pairs: list[WordPair], eval_pairs: list[WordPair], config: WordInContextConfig,
                        kg: KnowledgeGraph | None, out_dir: Path | None = None, *, save_dir: Path | None = None,
                        device="cpu", log_with=(), data_info: dict | None = None,
                        frozen_baseline: bool = True, keep_model: bool = False) -> TaskResult:
    """Fine-tune each setting of ``config.variants`` for each seed on ``train_pairs`` and measure
    accuracy on ``eval_pairs``; paired differences between settings (same seed, same selection
    split), the frozen-feature baseline and the majority class beside them. ``save_dir``: the
    first run's model is saved there (:class:`FinetunedWordInContext`); ``keep_model``: the result's
    ``model`` is that model in memory."""
    if any(p.label is None for p in train_pairs):
        raise ValueError("the training pairs need labels (WiC: the *.gold.txt beside the data file)")
    if not eval_pairs or any(p.label is None for p in eval_pairs):
        raise ValueError("the evaluation pairs need labels")
    if any(variant_spec(v).has_km for v in config.variants) and kg is None:
        raise ValueError("the KM settings need a sense KG")
    config_json = json.loads(json.dumps(asdict(config), default=str))
    results: dict = {"task": TASK, "device": str(torch.device(device)), "cpu": cpu_description(), "config": config_json,
                     "data": dict(data_info or {}), "senses": {}}
    grid = Grid(tuple(config.variants), tuple(config.seeds))
    run_settings = {key: value for key, value in config_json.items() if key not in ("variants", "seeds")}
    checkpoints = checkpoints_of(out_dir, {  # an earlier, stopped run's checkpoints: checked before any work
        run_name(cell.variant, cell.seed): run_fingerprint({"config": run_settings, "data": results["data"],
                                                            "variant": cell.variant, "seed": cell.seed})
        for cell in grid.cells()})
    task = WordInContextRuns(train_pairs, eval_pairs, config, kg, device=device, frozen_baseline=frozen_baseline,
                             checkpoints=checkpoints)
    result = run_grid(task, grid, results, out_dir=out_dir, save_dir=save_dir, log_with=log_with,
                      keep_model=keep_model)
    remove_checkpoints(out_dir)
    return result


def run_name(variant: str, seed: int) -> str:
    """The folder name of one run's checkpoint: ``lm+g+m-seed3``."""
    return f"{variant}-seed{seed}"


def run_job(job: WordInContextJob, out_dir: Path | None = None, *, save_dir: Path | None = None, device="cpu",
            log_with=(), keep_model: bool = False) -> TaskResult:
    """The task of a resolved job (:func:`jaket.tasks.cli_common.resolve_job`): the sense KG where a
    setting or the WordNet-derived pairs need it, the pairs (``job.data.train`` / ``eval``, else
    :func:`wordnet_pairs`), then :func:`run_word_in_context`. ``jaket finetune|evaluate
    word-in-context`` and :func:`jaket.pipelines.pipeline` run this."""
    needs_kg = any(v != "lm" for v in job.variants)
    kg = load_sense_kg(job.data.kg) if needs_kg or job.data.train is None else None
    if job.data.train is not None:
        train, evaluation = load_pairs(job.data.train), load_pairs(job.data.eval)
        info = {"train": str(job.data.train), "eval": str(job.data.eval)}
    else:
        builtin_wordnet_notice(logger, TASK, f"{job.data.wordnet_pairs} pairs derived from its usage "
                               "examples", "--train FILE with --test FILE (WiC format)")
        train, evaluation = wordnet_pairs(kg, job.data.wordnet_pairs, job.data.data_seed)
        info = {"train": f"{len(train)} WordNet-derived pairs", "eval": f"{len(evaluation)} WordNet-derived pairs"}
    info.update(train_pairs=len(train), eval_pairs=len(evaluation))
    return run_word_in_context(train, evaluation, job, kg if needs_kg else None, out_dir, save_dir=save_dir,
                               device=device, log_with=log_with, data_info=info, keep_model=keep_model)


def results_table(results) -> str:
    """Accuracy (%) per setting, mean ± std over seeds, the baselines below; the paired differences."""
    return WordInContextRuns().table(results)


# ----------------------------------------------------------------------------- the fine-tuned model


__all__ = ["EncodedPairs", "FinetunedWordInContext", "WordInContextConfig", "WordInContextModel",
           "encode_pairs", "fit", "frozen_feature_baseline", "load_sense_kg", "predict_rows",
           "run_word_in_context", "results_table"]
