"""Word-sense disambiguation: all-words WSD in the unified framework of Raganato et al. (EACL 2017).

Each target (:class:`jaket.tasks.wsd_data.WsdInstance`) is given the sense among its candidates --
the sense KG's entities named by its lemma, of its part of speech, in WordNet's sense order
(:class:`jaket.tasks.wic_data.SenseInventory`; the sense KG is all of WordNet by default) -- that
each scorer of :mod:`jaket.tasks.sense_scoring` prefers, all of them on the same targets in one
run: WordNet's first sense, random (its expectation), ``jaket link``'s rule (a simplified Lesk),
LM only, LM+G+M (a fresh KM per seed) and, with a pre-trained model, JAKET's masked-entity head
(pre-training task 4 restricted to the candidates) and its encoder's cosine. Nothing is trained.

**Scores**, as the framework's scorer counts them: a target without a candidate gets no answer;
precision = right / answered, recall = right / targets with a gold sense, F1 their harmonic mean
(F1 = accuracy when every target is answered); overall and per part of speech. A target whose gold
senses are not among its candidates is answered and wrong. The counts say how many targets there
are, how many have no candidate and how many have no gold among their candidates.

**Paired differences** (:data:`PAIRS`): between two scorers without seeds, a bootstrap over the
targets (the same resample for both, percentile 95% interval, :func:`jaket.tasks.report.paired_bootstrap`);
where one side has seeds (LM+G+M's fresh KM), a Student-t interval over the seeds
(:func:`jaket.tasks.report.paired_difference`). With ``first_sense_prior`` weights, each scorer with
logits is also scored with WordNet's sense order as a prior (:func:`jaket.tasks.sense_scoring.with_prior`),
in rows of their own named ``SCORER + prior W``.

Outputs: ``OUT/<scorer>.key.txt`` (``OUT/<scorer>.seed<N>.key.txt`` per seed) in the framework's key
format for its official scorer (none for random, an expectation), ``metrics.json`` and ``report.md``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np

from jaket.kg.graph import KnowledgeGraph
from jaket.model.device import cpu_description
from jaket.tasks import report as rep
from jaket.tasks.sense_scoring import (SCORER_LABELS, ScorerOutput, SenseExample, answers, correctness,
                                       score_senses, with_prior)
from jaket.tasks.settings import WordSenseConfig
from jaket.tasks.wic_data import SenseInventory
from jaket.tasks.wsd_data import FRAMEWORK_POS, WsdInstance, write_key_file

logger = logging.getLogger(__name__)

#: the paired differences reported when both scorers ran (``a - b``)
PAIRS = (("jaket", "first sense"), ("jaket", "lm"), ("jaket", "lm+g+m"), ("jaket", "lesk"),
         ("jaket (cosine)", "lm"), ("lm", "first sense"), ("lm+g+m", "lm"), ("lesk", "first sense"))
#: the scorers that always run (no encoder); ``variants`` add the others
RULE_SCORERS = ("first sense", "random", "lesk")
#: how many targets without a candidate the report names
NAMED_MISSING = 20


def wsd_examples(instances: list[WsdInstance], kg: KnowledgeGraph,
                 inventory: SenseInventory) -> tuple[list[SenseExample], dict]:
    """The instances as :class:`SenseExample` s (candidates and gold as entity indices of ``kg``) and
    the counts of the module docstring."""
    position = {entity_id: i for i, entity_id in enumerate(kg.entity_ids)}
    examples = []
    missing: list[str] = []
    counts = {"instances": len(instances), "with_gold": 0, "without_candidates": 0,
              "gold_not_among_candidates": 0, "gold_not_in_sense_kg": 0, "monosemous": 0}
    for instance in instances:
        candidates = tuple(inventory.candidates(instance.lemma, instance.pos))
        gold = frozenset(position[g] for g in instance.gold if g in position)
        examples.append(SenseExample(instance.text, instance.start, instance.end, gold, candidates, instance.lemma))
        counts["with_gold"] += bool(instance.gold)
        counts["gold_not_in_sense_kg"] += len(gold) < len(instance.gold)
        counts["monosemous"] += len(candidates) == 1
        if not candidates:
            counts["without_candidates"] += 1
            missing.append(f"{instance.id} {instance.lemma} ({instance.framework_pos})")
        elif instance.gold and not gold.intersection(candidates):
            counts["gold_not_among_candidates"] += 1
    if missing:
        logger.warning("%d target(s) have no candidate sense in the sense KG (no answer): %s%s", len(missing),
                       ", ".join(missing[:5]), " ..." if len(missing) > 5 else "")
    counts["by_pos"] = {name: sum(i.pos == code for i in instances) for name, code in FRAMEWORK_POS.items()}
    counts["without_candidates_named"] = missing[:NAMED_MISSING]
    return examples, counts


def f1_statistic(sample: np.ndarray) -> np.ndarray:
    """F1 of samples ``(k, n, 2)`` of (right, answered) per target: ``2 right / (answered + n)``,
    the harmonic mean of precision right / answered and recall right / n."""
    right, answered = sample[..., 0].sum(axis=-1), sample[..., 1].sum(axis=-1)
    return 2 * right / (answered + sample.shape[-2])


def scores_of(correct: np.ndarray, answered: np.ndarray) -> dict:
    """Precision, recall and F1 (module docstring) of per-target right / answered vectors."""
    n, right, given = len(correct), float(correct.sum()), float(answered.sum())
    if not n:
        return {"precision": float("nan"), "recall": float("nan"), "f1": float("nan"), "targets": 0}
    return {"precision": right / given if given else 0.0, "recall": right / n,
            "f1": float(f1_statistic(np.stack([correct, answered], axis=-1)[None])[0]), "targets": n,
            "answered": int(given), "right": right}


def _run_scores(instances, examples, output: ScorerOutput, run: int, scored: np.ndarray) -> dict:
    """The scores of one run of a scorer, overall and per part of speech (targets with gold only)."""
    correct, answered = correctness(examples, output, run)
    out = scores_of(correct[scored], answered[scored])
    pos = np.asarray([i.pos for i in instances])
    out["by_pos"] = {name: scores_of(correct[scored & (pos == code)], answered[scored & (pos == code)])
                     for name, code in FRAMEWORK_POS.items() if (scored & (pos == code)).any()}
    return out


def _summary(runs: list[dict], seeds) -> dict:
    """A scorer's entry of ``metrics.json``: its scores (the mean over seeds with their std and values)."""
    if seeds is None:
        return runs[0]
    out: dict = {"seeds": list(seeds), "runs": runs}
    for key in ("precision", "recall", "f1"):
        mean, std = rep.mean_std([r[key] for r in runs])
        out[key], out[f"{key}_std"] = mean, std
    out["by_pos"] = {name: {"f1": float(np.mean([r["by_pos"][name]["f1"] for r in runs]))}
                     for name in runs[0]["by_pos"]}
    return out


def key_file_name(scorer: str) -> str:
    """``first sense`` -> ``first-sense``, ``jaket (cosine)`` -> ``jaket-cosine``, ``lm + prior 1`` ->
    ``lm.prior-1``: a scorer's name as a file name."""
    name = re.sub(r"[^A-Za-z0-9+.]+", "-", scorer.replace(" + prior ", ".prior-"))
    return re.sub(r"-*\.-*", ".", name).strip("-")


def _write_keys(out_dir: Path, instances, examples, name: str, output: ScorerOutput, kg: KnowledgeGraph) -> list[str]:
    if output.expected:
        return []
    written = []
    for run, scores in enumerate(output.runs):
        suffix = f".seed{output.seeds[run]}" if output.seeds is not None else ""
        path = out_dir / f"{key_file_name(name)}{suffix}.key.txt"
        chosen = [kg.entity_ids[a] if a is not None else None for a in answers(examples, scores)]
        write_key_file(path, instances, chosen)
        written.append(path.name)
    return written


def _paired(pairs, examples, outputs: dict[str, ScorerOutput], scorers: dict, scored: np.ndarray,
            config: WordSenseConfig) -> dict:
    """The paired F1 differences of ``pairs`` (module docstring)."""
    out = {}
    for a, b in pairs:
        if a not in outputs or b not in outputs:
            continue
        if outputs[a].seeds is None and outputs[b].seeds is None:
            found = rep.paired_bootstrap(np.stack(correctness(examples, outputs[a]), axis=-1)[scored],
                                         np.stack(correctness(examples, outputs[b]), axis=-1)[scored],
                                         f1_statistic, config.bootstrap, config.bootstrap_seed)
            out[f"{a} - {b}"] = {**found, "over": "targets (bootstrap)"}
            continue
        seeds = list(outputs[a].seeds or outputs[b].seeds)
        found = rep.paired_difference(*[[r["f1"] for r in scorers[name]["runs"]] if "runs" in scorers[name]
                                        else [scorers[name]["f1"]] * len(seeds) for name in (a, b)])
        if len(seeds) < 2:
            found.update(ci_low=None, ci_high=None)
        out[f"{a} - {b}"] = {**found, "seeds": seeds, "over": "seeds (Student t)"}
    return out


def run_wsd(instances: list[WsdInstance], kg: KnowledgeGraph, config: WordSenseConfig, out_dir: Path, *,
            device="cpu", data_info: dict | None = None) -> dict:
    """Score every target with every scorer the config asks for, write the key files, ``metrics.json``
    and ``report.md`` into ``out_dir``; returns the results (``metrics.json``'s content)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    examples, counts = wsd_examples(instances, kg, SenseInventory.for_wordnet(kg))
    wanted = RULE_SCORERS + tuple(config.variants) + (("jaket (cosine)",) if "jaket" in config.variants else ())
    outputs = score_senses(examples, kg, scorers=wanted, pretrained=config.pretrained, encoder=config.encoder,
                           seeds=config.seeds, description_max_length=config.description_max_length,
                           max_length=config.max_length, km=config.variant_config("lm+g+m").km_structure(),
                           device=device)
    for weight in config.first_sense_prior:
        for name in [n for n, o in outputs.items() if o.temperature is not None and " + prior " not in n]:
            outputs[f"{name} + prior {weight:g}"] = with_prior(examples, outputs[name], weight)
    scored = np.asarray([bool(i.gold) for i in instances])
    results: dict = {"task": "word-sense-disambiguation", "config": asdict(config), "data": {**(data_info or {}), **counts},
                     "scorers": {}, "key_files": {}, "paired": {}, "cpu": cpu_description()}
    for name, output in outputs.items():
        results["key_files"][name] = _write_keys(out_dir, instances, examples, name, output, kg)
        if scored.any():
            runs = [_run_scores(instances, examples, output, run, scored) for run in range(len(output.runs))]
            results["scorers"][name] = _summary(runs, output.seeds)
    if scored.any():
        pairs = list(PAIRS) + [(name, other) for name in outputs if " + prior " in name
                               for other in (name.split(" + prior ")[0], "first sense")]
        results["paired"] = _paired(pairs, examples, outputs, results["scorers"], scored, config)
    else:
        logger.warning("no target has a gold sense: the key files are written, no score")
    write_report(results, out_dir)
    return results


# ----------------------------------------------------------------------------- the report


def _cell(entry: dict, key: str = "f1") -> str:
    value = entry.get(key)
    if value is None or np.isnan(value):
        return "-"
    std = entry.get(f"{key}_std")
    return f"{100 * value:.1f}" + (f" ± {100 * std:.1f}" if std is not None else "")


def _label(name: str) -> str:
    base, _, weight = name.partition(" + prior ")
    return SCORER_LABELS.get(base, base) + (f" + sense-order prior (w = {weight})" if weight else "")


def results_table(results: dict) -> str:
    """F1 (%) of every scorer without the prior, overall and per part of speech, with P and R."""
    names = [n for n in results["scorers"] if " + prior " not in n]
    pos = [p for p in FRAMEWORK_POS if any(p in results["scorers"][n]["by_pos"] for n in names)]
    rows = [[_label(n), _cell(results["scorers"][n]), _cell(results["scorers"][n], "precision"),
             _cell(results["scorers"][n], "recall"),
             *[_cell(results["scorers"][n]["by_pos"].get(p, {})) for p in pos]] for n in names]
    return rep.markdown_table(["Scorer", "F1 %", "P %", "R %", *[f"{p} F1" for p in pos]], rows)


def prior_table(results: dict) -> str:
    """F1 (%) of each scorer with logits alone and with each weight of the sense-order prior."""
    weights = sorted({n.split(" + prior ")[1] for n in results["scorers"] if " + prior " in n}, key=float)
    if not weights:
        return ""
    bases = [n for n in results["scorers"] if f"{n} + prior {weights[0]}" in results["scorers"]]
    rows = [[_label(b), _cell(results["scorers"][b]),
             *[_cell(results["scorers"][f"{b} + prior {w}"]) for w in weights]] for b in bases]
    return rep.markdown_table(["Scorer (F1 %)", "alone", *[f"prior w = {w}" for w in weights]], rows)


def paired_table(results: dict) -> str:
    rows = []
    for name, d in results["paired"].items():
        a, b = name.split(" - ", 1)
        interval = "" if d.get("ci_low") is None or np.isnan(d["ci_low"]) else \
            f" [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]"
        over = f"{d['items']} targets, {d['rounds']} resamples" if "items" in d else f"{len(d['seeds'])} seeds"
        rows.append([f"{_label(a)} − {_label(b)}", f"{100 * d['mean']:+.1f}{interval}", over])
    return rep.markdown_table(["Paired difference", "F1 points (95% CI)", "over"], rows) if rows else ""


def write_report(results: dict, out_dir: Path) -> None:
    """``metrics.json`` and ``report.md``."""
    rep.write_metrics(out_dir, results)
    d = results["data"]
    text = ["# Word-sense disambiguation", "",
            f"{d['instances']} targets from {d.get('data', 'the given data')} ({d['with_gold']} with a gold sense; "
            f"{', '.join(f'{k} {v}' for k, v in d['by_pos'].items() if v)}); {d['without_candidates']} without a "
            f"candidate sense (no answer), {d['gold_not_among_candidates']} whose gold sense is not among the "
            f"candidates, {d['monosemous']} with one candidate. Sense KG: {d.get('sense_kg', '?')}.", ""]
    if results["scorers"]:
        text += [f"{table}\n" for table in (results_table(results), prior_table(results), paired_table(results))
                 if table]
    names = [f for files in results["key_files"].values() for f in files]
    text += [f"Key files (the framework's format, for its scorer): {', '.join(names)}.", ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))
