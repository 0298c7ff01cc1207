"""Word-in-context: does a target word mean the same in two texts? (WiC, a SuperGLUE task on WordNet)

The task where what the language module learned from the KG should show: JAKET's pre-training
corpus is WordNet's usage examples, each linked to its synset, and masked entity prediction
trains the language module to name the synset of a word from its context -- word-sense
disambiguation. Here the sense is exactly what is unknown, so the paper's fusion (a linked
entity's KM embedding added at the mention, Eq. 8-9) needs a design for the candidates:

1. **Candidates**: the target's senses in the KG (:class:`jaket.tasks.wic_data.SenseInventory`:
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

from jaket.kg.graph import KnowledgeGraph
from jaket.model.device import autocast, cpu_description
from jaket.model.heads import span_mean
from jaket.model.language import SplitLanguageModel
from jaket.tasks import report as rep
from jaket.tasks.settings import VARIANT_LABELS, WordInContextConfig  # noqa: F401 (re-exported)
from jaket.tasks.settings import variant as variant_spec
from jaket.tasks.tracking import task_progress
from jaket.tasks.training import step_done
from jaket.tasks.variants import load_backbone
from jaket.tasks.wic_data import SenseInventory, WordPair
from jaket.tasks.word_in_context_model import (SUPPORTED_VARIANTS, TASK, EncodedPairs,  # noqa: F401 (re-exported)
                                               SenseGraph, WordInContextModel, build_model, encode_pairs,
                                               predict_probabilities, restrict_to_candidates, sense_graph)
from jaket.tasks.word_in_context_predict import FinetunedWordInContext, load_sense_kg, predict_rows  # noqa: F401
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
        config: WordInContextConfig, seed: int, progress=None) -> dict:
    """Fine-tune for ``config.epochs`` epochs; with ``selection`` the epoch of the best selection
    accuracy is kept (its weights restored). Returns the history."""
    device = model.classifier[1].weight.device
    pad = int(model.language.tokenizer.pad_token_id)
    rng = np.random.default_rng(seed)
    generator = np.random.default_rng(1_000 + seed)
    per_epoch = math.ceil(len(train) / config.batch_size)
    optimizer, schedule = _optimizer(model, config, per_epoch * config.epochs)
    history: dict = {"train_loss": [], "selection_accuracy": [], "best_epoch": config.epochs}
    best, best_state = -1.0, None
    for epoch in range(config.epochs):
        model.train()
        order = rng.permutation(len(train))
        losses = []
        for begin in range(0, len(order), config.batch_size):
            batch = train.batch(order[begin:begin + config.batch_size], pad)
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
def target_features(language: SplitLanguageModel, data: EncodedPairs, batch_size: int = 64) -> np.ndarray:
    """``[t1, t2, |t1 - t2|, t1 * t2]`` of each pair from a frozen encoder (LM1 + LM2)."""
    language.eval()
    pad = int(language.tokenizer.pad_token_id)
    device = next(language.parameters()).device
    out = []
    for begin in range(0, len(data), batch_size):
        pairs = np.arange(begin, min(begin + batch_size, len(data)))
        b = data.batch(pairs, pad)
        hidden = language(b["input_ids"].to(device), b["attention_mask"].to(device))
        rows = torch.arange(hidden.shape[0], device=device)
        t = span_mean(hidden.float(), rows, b["start"].to(device), b["end"].to(device))
        t1, t2 = t[:len(pairs)], t[len(pairs):]
        out.append(torch.cat([t1, t2, (t1 - t2).abs(), t1 * t2], dim=1).cpu().numpy())
    return np.concatenate(out)


def frozen_feature_baseline(language: SplitLanguageModel, train: EncodedPairs, evaluation: EncodedPairs,
                            seed: int = 0) -> dict:
    """The issue's floor for LM only: a logistic regression on the frozen base encoder's target-word
    features, its regularisation chosen on a selection part of the training pairs."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_eval = target_features(language, train), target_features(language, evaluation)
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
            encode_pairs(eval_pairs, tokenizer, None, config.max_length, 1))
    return found


def run_word_in_context(train_pairs: list[WordPair], eval_pairs: list[WordPair], config: WordInContextConfig,
                        kg: KnowledgeGraph | None, out_dir: Path | None = None, *, save_dir: Path | None = None,
                        device="cpu", log_with=(), data_info: dict | None = None,
                        frozen_baseline: bool = True) -> dict:
    """Fine-tune each setting of ``config.variants`` for each seed on ``train_pairs`` and measure
    accuracy on ``eval_pairs``; paired differences between settings (same seed, same selection
    split), the frozen-feature baseline and the majority class beside them. ``save_dir``: the
    first run's model is saved there (:class:`FinetunedWordInContext`)."""
    if any(p.label is None for p in train_pairs):
        raise ValueError("the training pairs need labels (WiC: the *.gold.txt beside the data file)")
    if not eval_pairs or any(p.label is None for p in eval_pairs):
        raise ValueError("the evaluation pairs need labels")
    uses_kg = any(variant_spec(v).has_km for v in config.variants)
    if uses_kg and kg is None:
        raise ValueError("the KM settings need a sense KG")
    inventory = SenseInventory.for_wordnet(kg) if kg is not None else None
    config_json = json.loads(json.dumps(asdict(config), default=str))
    results: dict = {"task": TASK, "device": str(torch.device(device)), "cpu": cpu_description(), "config": config_json,
                     "data": dict(data_info or {}), "senses": {}, "runs": {}, "summary": {}, "paired": {}}
    steps = math.ceil(len(train_pairs) * (1 - config.selection_fraction) / config.batch_size) * config.epochs
    total = len(config.variants) * len(config.seeds) * steps
    with task_progress(total, "word in context", "step", log_with, out_dir, config_json) as progress:
        for variant in config.variants:
            graph = None
            for seed in config.seeds:
                started = time.perf_counter()
                progress.set_postfix_str(f"{variant} seed {seed}")
                model = build_model(config, variant, seed).to(device)
                tokenizer = model.language.tokenizer
                train_all = encode_pairs(train_pairs, tokenizer, inventory, config.max_length,
                                         config.max_candidates, "training pairs")
                evaluation = encode_pairs(eval_pairs, tokenizer, inventory, config.max_length,
                                          config.max_candidates, "evaluation pairs")
                if model.uses_kg:  # the KM reads the candidates' neighbourhoods only
                    sense_kg = restrict_to_candidates(kg, [train_all, evaluation], len(model.knowledge.layers))
                if "candidates" not in results["senses"] and model.uses_kg:
                    counts = [len(inventory.candidates(p.lemma, p.pos)) for p in eval_pairs]
                    results["senses"]["candidates"] = {
                        "evaluation_pairs_without_candidates": int(sum(c == 0 for c in counts)),
                        "mean_candidates": float(np.mean(counts)), "max_candidates": int(max(counts))}
                if model.uses_kg and graph is None:  # the same LM1 every seed: one memory a setting
                    graph = sense_graph(model, sense_kg, config)
                    results["senses"]["sense_kg_entities"] = {"kg": kg.num_entities, "read": sense_kg.num_entities}
                fit_rows, select_rows = selection_split(len(train_all), config.selection_fraction, seed)
                train = _subset(train_all, fit_rows)
                selection = _subset(train_all, select_rows) if len(select_rows) else None
                history = fit(model, train, selection, graph if model.uses_kg else None, config, seed, progress)
                probability, _ = predict_probabilities(model, evaluation, graph if model.uses_kg else None,
                                                       bf16=config.bf16, seed=seed)
                run = {"seed": seed, "accuracy": accuracy_of(probability, evaluation.labels), **history,
                       "seconds": round(time.perf_counter() - started, 1)}
                logger.info("%s seed %d: accuracy %.4f (epoch %d)", variant, seed, run["accuracy"],
                            history["best_epoch"])
                results["runs"].setdefault(variant, []).append(run)
                if save_dir is not None and "saved_model" not in results:
                    settings = _finetuned_settings(config, variant, model.uses_kg, seed, len(train_pairs), history)
                    results["saved_model"] = str(FinetunedWordInContext(model, settings, kg).save_pretrained(save_dir))
                del model
            results["summary"][variant] = rep.summarize_seeds(
                [{"accuracy": r["accuracy"]} for r in results["runs"][variant]])
    runs = results["runs"]
    for a, b in (("jaket", "lm"), ("jaket", "lm+g+m"), ("lm+g+m", "lm")):
        if a in runs and b in runs and len(runs[a]) == len(runs[b]):
            results["paired"][f"{a} - {b}"] = rep.paired_difference(
                [r["accuracy"] for r in runs[a]], [r["accuracy"] for r in runs[b]])
    results.update(_baselines(train_pairs, eval_pairs, config, device, frozen_baseline))
    if out_dir is not None:
        write_report(results, Path(out_dir))
    return results


def results_table(results: dict) -> str:
    rows = [[VARIANT_LABELS.get(v, v), rep.format_mean_std(s["accuracy"]["values"])]
            for v, s in results["summary"].items()]
    if "frozen_features" in results:
        rows.append(["(frozen base encoder + logistic regression)", f"{100 * results['frozen_features']['accuracy']:.1f}"])
    rows.append(["(majority class)", f"{100 * results['majority_class']:.1f}"])
    table = rep.markdown_table(["Model", "accuracy %"], rows)
    if results["paired"]:
        diff_rows = [[name.replace("jaket", "JAKET").replace("lm+g+m", "LM+G+M").replace("lm", "LM only"),
                      f"{100 * d['mean']:+.1f}",
                      f"[{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]" if not math.isnan(d["ci_low"]) else "-"]
                     for name, d in results["paired"].items()]
        table += "\n\n" + rep.markdown_table(["Paired difference", "points", "95% CI"], diff_rows)
    return table


def write_report(results: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_metrics(out_dir, results)
    text = ["# Word in context", "", f"Accuracy on {results['data'].get('eval', 'the evaluation pairs')}, "
            f"mean ± std over seeds {results['config']['seeds']}; the epoch of each run chosen on "
            f"{results['config']['selection_fraction']:.0%} of the training pairs.", "", results_table(results), ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))
    curves = {f"{VARIANT_LABELS.get(v, v)} seed {r['seed']}": r["train_loss"]
              for v, rs in results["runs"].items() for r in rs[:1]}
    if curves:
        rep.plot_curves(curves, out_dir / "train_loss.png", title="word in context: training loss per epoch",
                        xlabel="epoch", ylabel="loss")


# ----------------------------------------------------------------------------- the fine-tuned model


__all__ = ["EncodedPairs", "FinetunedWordInContext", "WordInContextConfig", "WordInContextModel",
           "encode_pairs", "fit", "frozen_feature_baseline", "load_sense_kg", "predict_rows",
           "run_word_in_context", "results_table"]
