"""Word-sense disambiguation: all-words WSD in the unified framework of Raganato et al. (EACL 2017).

Each target (:class:`jaket.tasks.word_sense.data.WsdInstance`) is given the sense among its candidates --
the sense KG's entities named by its lemma, of its part of speech, in WordNet's sense order
(:class:`jaket.senses.inventory.SenseInventory`; the sense KG is all of WordNet by default) -- that
each scorer of :mod:`jaket.senses.scorers` prefers, all of them on the same targets in one
run: WordNet's first sense, random (its expectation), ``jaket link``'s rule (a simplified Lesk),
LM only, LM+G+M (a fresh KM per seed) and, with a pre-trained model, JAKET's masked-entity head
(pre-training task 4 restricted to the candidates) and its encoder's cosine; with either encoder,
the word in context against the candidates' texts alone (``(text)``) and with their KG neighbours'
(``(text + kg)``). Nothing is trained.

**The senses' texts** (:func:`usage_examples`): a WordNet sense's text holds its usage examples
(``usage_examples``) unless one is a sentence of the evaluated file (compared as
:func:`jaket.kg.exclusion.normalise_text` does): those are dropped and counted
(``usage_examples_dropped``), so no target's own sentence is sense evidence.

**Scores**, as the framework's scorer counts them: a target without a candidate gets no answer;
precision = right / answered, recall = right / targets with a gold sense, F1 their harmonic mean
(F1 = accuracy when every target is answered); overall and per part of speech. A target whose gold
senses are not among its candidates is answered and wrong. The counts say how many targets there
are, how many have no candidate and how many have no gold among their candidates.

**Paired differences** (:data:`PAIRS`): between two scorers without seeds, a bootstrap over the
targets (the same resample for both, percentile 95% interval, :func:`jaket.tasks.report.paired_bootstrap`);
where one side has seeds (LM+G+M's fresh KM), a Student-t interval over the seeds
(:func:`jaket.tasks.report.paired_difference`). With ``first_sense_prior`` weights, each scorer with
logits is also scored with WordNet's sense order as a prior (:func:`jaket.senses.scorers.with_prior`),
in rows of their own named ``SCORER + prior W``.

Outputs: ``OUT/<scorer>.key.txt`` (``OUT/<scorer>.seed<N>.key.txt`` per seed) in the framework's key
format for its official scorer (none for random, an expectation), ``metrics.json`` and ``report.md``
(:func:`run_job` runs a :class:`~jaket.tasks.word_sense.job.WordSenseJob`: ``jaket evaluate
word-sense-disambiguation`` and :func:`jaket.pipelines.pipeline`).

Sense linking: which of its lemma's senses does a word in context name? (WordNet WSD)

The intrinsic measure of what the language module learned from the KG: on linked texts that
pre-training never saw -- the held-out share of a pre-training run's corpus
(:func:`heldout_examples`, rebuilt from the run's ``config.yaml``: the same exclusion, the same
seeded split), so no WiC sentence either when the run excluded them; or the texts of the unseen
KG' (:func:`unseen_examples`), whose synsets pre-training never saw at all -- each mention's synset is
chosen among the candidate senses of the word as written (its lemma and part of speech in
WordNet, :class:`jaket.senses.inventory.SenseInventory`) by each scorer of
:mod:`jaket.senses.scorers` (first sense, random, ``jaket link``'s Lesk rule, ``lm``,
``lm+g+m`` over fresh KMs, the ``jaket`` masked-entity head and ``jaket (cosine)``).

Accuracy is over every mention whose synset is among its candidates, and over the ambiguous ones
(two or more candidates), where the first-sense baseline is not trivially right
(:func:`run_sense_linking_job` runs a :class:`~jaket.tasks.word_sense.job.SenseLinkingJob`: ``jaket
evaluate sense-linking`` and :func:`jaket.pipelines.pipeline`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.sources.registry import build_source
from jaket.kg.sources.wordnet import lemma_forms, load_wordnet_data
from jaket.model.device import autocast, cpu_description
from jaket.tasks import report as rep
from jaket.tasks.results import TaskResult
from jaket.stages import StageTimes, stage_line
from jaket.tasks.word_sense.job import SENSE_LINKING, TASK, SenseLinkingJob, WordSenseConfig, WordSenseJob
from jaket.kg.sources.wordnet_forms import POS_CODES
from jaket.senses.inventory import SenseInventory, lemma_key
from jaket.senses.texts import usage_examples
from jaket.tasks.word_sense.data import (FRAMEWORK_POS, WsdInstance, key_path_of, load_wsd, past_limit_line,
                                        refuse_past_window, write_key_file)
from jaket.train.config import load_config

if TYPE_CHECKING:
    from jaket.kg.corpus import MentionCorpus
    from jaket.senses.scorers import ScorerOutput, SenseExample
# the scorers' modules (the encoders, the KM) are imported where used: a runner reads its inputs first

logger = logging.getLogger(__name__)

#: the paired differences reported when both scorers ran (``a - b``)
PAIRS = (("jaket", "first sense"), ("jaket", "lm"), ("jaket", "lm+g+m"), ("jaket", "lesk"),
         ("jaket (cosine)", "lm"), ("lm", "first sense"), ("lm+g+m", "lm"), ("lesk", "first sense"),
         ("jaket (text + kg)", "first sense"), ("jaket (text + kg)", "lm (text)"),
         ("jaket (text + kg)", "lm (text + kg)"), ("jaket (text + kg)", "lesk"), ("jaket (text + kg)", "jaket"),
         ("jaket (text)", "lm (text)"), ("lm (text + kg)", "lm (text)"), ("lm (text + kg)", "first sense"))
#: the scorers that always run (no encoder); ``variants`` add the others
RULE_SCORERS = ("first sense", "random", "lesk")
#: how many targets without a candidate the report names
NAMED_MISSING = 20


def wsd_examples(instances: list[WsdInstance], kg: KnowledgeGraph,
                 inventory: SenseInventory) -> tuple[list[SenseExample], dict]:
    """The instances as :class:`SenseExample` s (candidates and gold as entity indices of ``kg``) and
    the counts of the module docstring. A gold sense that is not an entity of ``kg`` is a warning
    (how many targets name one, the first of them); where no target's gold sense is in ``kg``,
    :class:`GoldNotInSenseKG` (nothing could be scored: the wrong sense KG, or gold of other ids)."""
    from jaket.senses.scorers import SenseExample  # inputs first: model code after the data
    position = {entity_id: i for i, entity_id in enumerate(kg.entity_ids)}
    examples = []
    missing: list[str] = []
    absent: list[str] = []  # targets naming a gold sense that is not in the KG
    counts = {"instances": len(instances), "with_gold": 0, "without_candidates": 0,
              "gold_not_among_candidates": 0, "gold_not_in_sense_kg": 0, "monosemous": 0}
    for instance in instances:
        candidates = tuple(inventory.candidates(instance.lemma, instance.pos))
        gold = frozenset(position[g] for g in instance.gold if g in position)
        examples.append(SenseExample(instance.text, instance.start, instance.end, gold, candidates, instance.lemma))
        counts["with_gold"] += bool(instance.gold)
        if len(gold) < len(instance.gold):
            counts["gold_not_in_sense_kg"] += 1
            absent.append(f"{instance.id} ({', '.join(g for g in instance.gold if g not in position)})")
        counts["monosemous"] += len(candidates) == 1
        if not candidates:
            counts["without_candidates"] += 1
            missing.append(f"{instance.id} {instance.lemma} ({instance.framework_pos})")
        elif instance.gold and not gold.intersection(candidates):
            counts["gold_not_among_candidates"] += 1
    if missing:
        logger.warning("%d target(s) have no candidate sense in the sense KG (no answer): %s%s", len(missing),
                       ", ".join(missing[:5]), " ..." if len(missing) > 5 else "")
    scored = sum(bool(e.gold) for e in examples)
    if counts["with_gold"] and not scored:
        raise GoldNotInSenseKG(f"none of the gold senses of the {counts['with_gold']} target(s) with one is an entity "
                               f"of the sense KG, e.g. {absent[0]}: is it the sense KG the gold names?")
    if absent:
        logger.warning("%d of %d target(s) with a gold sense name one that is not in the sense KG (where none of a "
                       "target's is, it is scored wrong), e.g. %s", len(absent), counts["with_gold"], absent[0])
    counts["by_pos"] = {name: sum(i.pos == code for i in instances) for name, code in FRAMEWORK_POS.items()}
    counts["without_candidates_named"] = missing[:NAMED_MISSING]
    counts["gold_not_in_sense_kg_named"] = absent[:NAMED_MISSING]
    return examples, counts


class GoldNotInSenseKG(ValueError):
    """No gold sense of the data is an entity of the sense KG (:func:`wsd_examples`)."""


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
    from jaket.senses.scorers import correctness  # inputs first: model code after the data
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
    ``lm.prior-1``, ``lm (text + kg)`` -> ``lm-text+kg``: a scorer's name as a file name."""
    name = re.sub(r"[^A-Za-z0-9+.]+", "-", scorer.replace(" + prior ", ".prior-").replace(" + ", "+"))
    return re.sub(r"-*\.-*", ".", name).strip("-")


def _write_keys(out_dir: Path | None, instances, examples, name: str, output: ScorerOutput,
                kg: KnowledgeGraph) -> list[str]:
    """A scorer's key files (one per seed) in ``out_dir``, their names returned (None: named, not written)."""
    from jaket.senses.scorers import answers  # inputs first: model code after the data
    if output.expected:
        return []
    written = []
    for run, scores in enumerate(output.runs):
        suffix = f".seed{output.seeds[run]}" if output.seeds is not None else ""
        path = Path(f"{key_file_name(name)}{suffix}.key.txt")
        if out_dir is not None:
            chosen = [kg.entity_ids[a] if a is not None else None for a in answers(examples, scores)]
            write_key_file(out_dir / path, instances, chosen)
        written.append(path.name)
    return written


def _paired(pairs, examples, outputs: dict[str, ScorerOutput], scorers: dict, scored: np.ndarray,
            config: WordSenseConfig) -> dict:
    """The paired F1 differences of ``pairs`` (module docstring)."""
    from jaket.senses.scorers import correctness  # inputs first: model code after the data
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


def run_wsd(instances: list[WsdInstance], kg: KnowledgeGraph, config: WordSenseConfig, out_dir: Path | None, *,
            device="cpu", data_info: dict | None = None, stages: StageTimes | None = None) -> dict:
    """Score every target with every scorer the config asks for, write the key files, ``metrics.json``
    and ``report.md`` into ``out_dir`` (None: nothing written); returns the results (``metrics.json``'s
    content: beside ``scorers``, their runs as :class:`~jaket.tasks.results.TaskResult` reads them,
    ``runs``, and ``--json``'s ``summary``: each scorer's F1, the paired differences and the data;
    ``stages``: each stage's seconds, :class:`jaket.stages.StageTimes`, with the caller's)."""
    from jaket.senses.scorers import (TEXT_SCORERS, SenseTexts, TargetPastLimit, score_senses, with_prior)  # inputs first: model code after the data
    stages = stages or StageTimes()

    try:
        examples, counts = wsd_examples(instances, kg, SenseInventory.for_wordnet(kg))
    except GoldNotInSenseKG as error:  # named with the files when known
        info = data_info or {}
        raise GoldNotInSenseKG(f"{info.get('gold') or info.get('data', 'gold')}: {error} (sense KG: "
                               f"{info.get('sense_kg', '?')})") from None
    wanted = RULE_SCORERS + tuple(config.variants) + (("jaket (cosine)",) if "jaket" in config.variants else ())
    wanted += tuple(s for s in TEXT_SCORERS if s.split(" ")[0] in config.variants)
    # WordNet's usage examples are read only for a text scorer
    with stages("usage examples"):
        usage, usage_counts = usage_examples(kg, instances, config.usage_examples and any(s in TEXT_SCORERS
                                                                                          for s in wanted))
    counts.update(usage_counts)
    texts = SenseTexts(usage, config.neighbour_weight, config.text_max_length)
    try:
        with autocast(device, config.bf16):
            outputs = score_senses(examples, kg, scorers=wanted, pretrained=config.pretrained, encoder=config.encoder,
                                   seeds=config.seeds, description_max_length=config.description_max_length,
                                   max_length=config.max_length, km=config.variant_config("lm+g+m").km_structure(),
                                   texts=texts, device=device, stages=stages)
    except TargetPastLimit as error:  # found before any text is encoded: named by the file and the instance id
        line = past_limit_line(instances[error.index], error.count - 1, error.limit, (data_info or {}).get("data"))
        raise TargetPastLimit(line, error.index, error.count, error.limit) from None
    for weight in config.first_sense_prior:
        for name in [n for n, o in outputs.items() if o.temperature is not None and " + prior " not in n]:
            outputs[f"{name} + prior {weight:g}"] = with_prior(examples, outputs[name], weight)
    scored = np.asarray([bool(i.gold) for i in instances])
    results: dict = {"task": TASK, "config": asdict(config), "data": {**(data_info or {}), **counts},
                     "scorers": {}, "key_files": {}, "paired": {}, "cpu": cpu_description()}
    if out_dir is not None:  # made once the scorers ran: a run that fails leaves no folder
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    for name, output in outputs.items():
        results["key_files"][name] = _write_keys(out_dir, instances, examples, name, output, kg)
        if scored.any():
            runs = [_run_scores(instances, examples, output, run, scored) for run in range(len(output.runs))]
            results["scorers"][name] = _summary(runs, output.seeds)
    if scored.any():
        pairs = list(PAIRS) + [(name, other) for name in outputs if " + prior " in name
                               for other in (name.split(" + prior ")[0], "first sense")]
        with stages("paired differences"):
            results["paired"] = _paired(pairs, examples, outputs, results["scorers"], scored, config)
    else:
        logger.warning("no target has a gold sense: the key files are written, no score")
    results["runs"] = {name: [{"seed": seed, **run} for seed, run in zip(entry["seeds"], entry["runs"])]
                       if "runs" in entry else [entry] for name, entry in results["scorers"].items()}
    results["summary"] = {"scorers": {name: entry["f1"] for name, entry in results["scorers"].items()},
                          "paired": results["paired"], "data": results["data"]}
    results["stages"] = stages.as_dict()  # seconds of each stage (the report's last line)
    if out_dir is not None:
        write_report(results, out_dir)
    return results


def run_job(job: WordSenseJob, out_dir: Path | None = None, *, save_dir: Path | None = None, device="cpu",
            log_with=(), keep_model: bool = False) -> TaskResult:
    """The task of a resolved job (:func:`jaket.tasks.cli_common.resolve_job`): the targets of
    ``job.data.path`` (gold senses from ``job.data.gold`` or the key file beside it), the sense KG
    (``job.data.kg``, else all of WordNet), then :func:`run_wsd`. Nothing is fine-tuned, so there
    is no model to save or keep (``save_dir``, ``keep_model`` and ``log_with`` have nothing to do).
    ``jaket evaluate word-sense-disambiguation`` and :func:`jaket.pipelines.pipeline` run this."""
    instances = load_wsd(job.data.path, job.data.gold)  # the inputs first: bad data is refused before any KG or model
    refuse_past_window(instances, job.max_length, job.data.path)
    from jaket.senses.inventory import load_sense_kg  # inputs first: model code after the data

    kg = load_sense_kg(job.data.kg)
    beside = key_path_of(job.data.path)
    gold = job.data.gold or (beside if job.data.path.suffix != ".jsonl" and beside.is_file() else None)
    info = {"data": str(job.data.path), "gold": str(gold) if gold else None,
            "sense_kg": str(job.data.kg) if job.data.kg else "WordNet 3.0 (all synsets)"}
    return TaskResult.from_metrics(run_wsd(instances, kg, job, out_dir, device=device, data_info=info))


# ----------------------------------------------------------------------------- the report


def _cell(entry: dict, key: str = "f1") -> str:
    value = entry.get(key)
    if value is None or np.isnan(value):
        return "-"
    std = entry.get(f"{key}_std")
    return f"{100 * value:.1f}" + (f" ± {100 * std:.1f}" if std is not None else "")


def _label(name: str) -> str:
    from jaket.senses.scorers import SCORER_LABELS  # inputs first: model code after the data
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


def scores_table(results) -> str:
    """The command's table: :func:`results_table`, or a line saying there is no score (no gold)."""
    return results_table(results) if results["scorers"] else "(no gold: no score)"


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
    """``metrics.json`` and ``report.md`` (:func:`jaket.tasks.report.write_run_report`)."""
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
    if results.get("stages"):
        text += [f"Stages (wall-clock seconds): {stage_line(results['stages'])}.", ""]
    rep.write_run_report(out_dir, results, text)


def heldout_texts(run_dir: str | Path) -> tuple[KnowledgeGraph, MentionCorpus, dict]:
    """``(the run's KG, its held-out linked texts, what they are)`` of a pre-training run, rebuilt
    from ``RUN/config.yaml``; a ``ValueError`` naming the run when it has no held-out text."""
    config = load_config(Path(run_dir) / "config.yaml")  # read before the pre-training code is imported
    from jaket.train.build import load_kg_and_corpus  # inputs first: model code after the data

    kg, corpus, report = load_kg_and_corpus(config)
    if corpus is None:
        raise ValueError(f"{run_dir}: the run had no corpus, so no held-out text")
    heldout, _ = corpus.split(config.data.heldout_fraction, seed=config.seed)
    if not len(heldout):
        raise ValueError(f"{run_dir}: its held-out share of {len(corpus)} texts is empty (data.heldout_fraction "
                         f"{config.data.heldout_fraction:g}): no text to link")
    return kg, heldout, {"run": str(run_dir), "heldout_texts": len(heldout),
                         "excluded_texts": report.get("excluded_texts", {}).get("texts_dropped")}


def heldout_examples(run_dir: str | Path, sense_kg: KnowledgeGraph, inventory: SenseInventory,
                     max_examples: int | None = None, texts: tuple | None = None) -> tuple[list[SenseExample], dict]:
    """The held-out linked texts of a pre-training run (never trained on), as sense examples
    (``texts``: :func:`heldout_texts` of the run, when read already)."""
    kg, heldout, about = texts if texts is not None else heldout_texts(run_dir)
    examples, info = sense_examples(heldout, kg, sense_kg, inventory)
    info.update(about)
    if max_examples is not None:
        examples = examples[:max_examples]
    return examples, info


def unseen_entities(data_dir: str | Path) -> set[str]:
    """The entity ids of the unseen KG' of a ``jaket prepare wordnet-reference`` folder
    (``DATA/kg-unseen``; :func:`jaket.kg.io.load_kg` refuses a KG without entities)."""
    return set(load_kg(Path(data_dir) / "kg-unseen").entity_ids)


def unseen_examples(data_dir: str | Path, sense_kg: KnowledgeGraph, inventory: SenseInventory,
                    max_examples: int | None = None, unseen_candidates_only: bool = False,
                    unseen: set[str] | None = None) -> tuple[list[SenseExample], dict]:
    """The linked texts of the unseen KG' of ``jaket prepare wordnet-reference`` (``data_dir``): every
    WordNet usage example that mentions a synset of ``data_dir/kg-unseen`` -- exactly the texts the
    preparation dropped from pre-training (``texts_dropped_mentioning_heldout``), so the gold sense
    of each is an entity pre-training never saw, neither in a triple nor in a text. Candidates are
    the word's senses in ``sense_kg`` (seen and unseen alike); ``unseen_candidates_only`` keeps only
    those of KG' (the case of a KG the model never saw at all); ``unseen``: :func:`unseen_entities`
    of ``data_dir``, when read already."""
    from jaket.senses.scorers import SenseExample  # inputs first: model code after the data
    unseen = unseen if unseen is not None else unseen_entities(data_dir)
    bundle = build_source("wordnet", max_entities=None, seed=0)
    kg, corpus = bundle.kg, bundle.corpus
    keep = [i for i, mentions in enumerate(corpus.mentions) if any(kg.entity_ids[m.entity] in unseen for m in mentions)]
    texts = corpus.subset(np.asarray(keep, dtype=np.int64))
    examples, info = sense_examples(texts, kg, sense_kg, inventory)
    examples = [e for e in examples if sense_kg.entity_ids[next(iter(e.gold))] in unseen]
    if unseen_candidates_only:
        examples = [SenseExample(e.text, e.start, e.end, e.gold,
                                 tuple(c for c in e.candidates if sense_kg.entity_ids[c] in unseen), e.lemma)
                    for e in examples]
    info.update(examples=len(examples), ambiguous=int(sum(len(e.candidates) > 1 for e in examples)),
                run=f"the unseen KG' of {data_dir}", unseen_entities=len(unseen), texts_mentioning_unseen=len(keep),
                candidates="unseen (KG') senses only" if unseen_candidates_only else "every sense of the word")
    if max_examples is not None:
        examples = examples[:max_examples]
    return examples, info


def sense_examples(corpus: MentionCorpus, kg: KnowledgeGraph, sense_kg: KnowledgeGraph,
                   inventory: SenseInventory) -> tuple[list[SenseExample], dict]:
    """Every mention of ``corpus`` (entities of ``kg``) whose written form is one of its synset's
    lemmas (inflections resolved by WordNet's rules) and whose synset is in ``sense_kg``."""
    from jaket.senses.scorers import SenseExample  # inputs first: model code after the data
    wordnet = load_wordnet_data()
    by_id = {e: i for i, e in enumerate(wordnet.ids)}
    position = {e: i for i, e in enumerate(sense_kg.entity_ids)}
    examples, skipped = [], {"not_in_sense_kg": 0, "lemma_not_found": 0, "gold_not_a_candidate": 0}
    for text, mentions in zip(corpus.texts, corpus.mentions):
        for m in mentions:
            entity_id = kg.entity_ids[m.entity]
            if entity_id not in position or entity_id not in by_id:
                skipped["not_in_sense_kg"] += 1
                continue
            w = by_id[entity_id]
            kind = wordnet.synset_type[w]
            pos = POS_CODES[kind]
            written = lemma_key(text[m.start:m.end].replace("-", " "))
            table = wordnet.exceptions["a" if kind == "s" else kind]
            lemma = next((lemma for lemma in wordnet.lemmas[w]
                          if written in lemma_forms(lemma, kind, table)), None)
            if lemma is None:
                skipped["lemma_not_found"] += 1
                continue
            candidates = tuple(inventory.candidates(lemma, pos))
            gold = position[entity_id]
            if gold not in candidates:
                skipped["gold_not_a_candidate"] += 1
                continue
            examples.append(SenseExample(text, m.start, m.end, frozenset({gold}), candidates, lemma))
    return examples, {"examples": len(examples), "skipped": skipped,
                      "ambiguous": int(sum(len(e.candidates) > 1 for e in examples))}


def _accuracy(examples: list[SenseExample], correct: np.ndarray) -> dict:
    ambiguous = np.asarray([len(e.candidates) > 1 for e in examples])
    return {"accuracy": float(correct.mean()) if len(correct) else float("nan"),
            "accuracy_ambiguous": float(correct[ambiguous].mean()) if ambiguous.any() else float("nan")}


def evaluate_sense_linking(examples: list[SenseExample], sense_kg: KnowledgeGraph, *,
                           pretrained: Path | None = None, encoder: Path | None = None,
                           seeds: tuple[int, ...] = (0, 1, 2), description_max_length: int = 32,
                           device="cpu", baselines: bool = True, bf16: bool = False,
                           neighbour_weight: float = 1.0, stages: StageTimes | None = None) -> dict:
    """Accuracy of every scorer on ``examples`` (``lm+g+m``: the mean over ``seeds``; the ``(text)``
    scorers read names, aliases and descriptions, no usage example, ``(text + kg)`` with
    ``neighbour_weight``);
    ``baselines=False`` keeps the first-sense and random figures and the ``jaket`` scorers only (to
    compare pre-trained models); ``bf16``: the encoder scorers' passes under bf16 autocast;
    ``stages``: each stage's seconds (``results["stages"]``), with the caller's."""
    from jaket.senses.scorers import (PRETRAINED_SCORERS, SCORERS, SenseTexts, correctness, score_senses)  # inputs first: model code after the data
    stages = stages or StageTimes()

    # the (text) scorers read no usage example: sense linking's texts are WordNet's usage examples
    scorers = SCORERS if baselines else ("first sense", "random", *PRETRAINED_SCORERS)
    with autocast(device, bf16):
        outputs = score_senses(examples, sense_kg, scorers=scorers, pretrained=pretrained, encoder=encoder,
                               seeds=seeds, description_max_length=description_max_length,
                               texts=SenseTexts({}, neighbour_weight), device=device, stages=stages)
    results: dict = {"scorers": {}, "runs": {}, "cpu": cpu_description(), "stages": stages.as_dict()}
    for name, output in outputs.items():
        per_run = [_accuracy(examples, correctness(examples, output, run)[0]) for run in range(len(output.runs))]
        results["scorers"][name] = {k: float(np.mean([r[k] for r in per_run])) for k in per_run[0]}
        results["runs"][name] = per_run  # TaskResult's rows (a scorer without seeds: seed 0)
        if output.seeds is not None:
            results["scorers"][name]["seeds"] = len(output.seeds)
            results["runs"][name] = [{"seed": seed, **run} for seed, run in zip(output.seeds, per_run)]
    return results


def run_sense_linking_job(job: SenseLinkingJob, out_dir: Path | None = None, *, save_dir: Path | None = None,
                          device="cpu", log_with=(), keep_model: bool = False) -> TaskResult:
    """Sense linking of a checked job: the sense KG (``job.data.kg``, else all of WordNet), the
    examples (:func:`unseen_examples` of ``job.data.unseen_of`` or :func:`heldout_examples` of
    ``job.data.heldout_of``, read before the sense KG), then :func:`evaluate_sense_linking`; ``metrics.json`` and
    ``report.md`` into ``out_dir`` (None: nothing written). Nothing is fine-tuned (``save_dir``,
    ``keep_model`` and ``log_with`` have nothing to do). ``jaket evaluate sense-linking`` and
    :func:`jaket.pipelines.pipeline` run this; ``--json`` prints the result's ``summary``, the scorers."""
    data = job.data
    # the examples' files first (the run's config, KG and corpus, or KG'), then the sense KG
    unseen = unseen_entities(data.unseen_of) if data.unseen_of is not None else None
    texts = heldout_texts(data.heldout_of) if data.unseen_of is None else None
    from jaket.senses.inventory import load_sense_kg  # inputs first: model code after the data

    kg = load_sense_kg(data.kg)
    inventory = SenseInventory.for_wordnet(kg)
    if data.unseen_of is not None:
        examples, info = unseen_examples(data.unseen_of, kg, inventory, data.max_examples,
                                         data.unseen_candidates_only, unseen=unseen)
    else:
        examples, info = heldout_examples(data.heldout_of, kg, inventory, data.max_examples, texts=texts)
    if not examples:
        skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in info.get("skipped", {}).items() if n)
        found = (f"its {info['heldout_texts']} held-out texts" if data.unseen_of is None else
                 f"the {info['texts_mentioning_unseen']} texts mentioning its {info['unseen_entities']} entities")
        raise ValueError(f"{data.heldout_of or data.unseen_of}: no mention of {found} could be linked to a sense of "
                         f"{data.kg or 'WordNet'}{f' (mentions skipped: {skipped})' if skipped else ''}")
    results = evaluate_sense_linking(examples, kg, pretrained=job.pretrained, encoder=job.encoder,
                                     seeds=tuple(job.seeds), device=device, baselines=job.baselines, bf16=job.bf16,
                                     neighbour_weight=job.neighbour_weight)
    results["data"] = {**info, "examples_used": len(examples)}
    results.update(task=SENSE_LINKING, summary=results["scorers"])
    if out_dir is not None:
        write_sense_linking_report(results, Path(out_dir))
    return TaskResult.from_metrics(results)


def sense_linking_table(results: dict) -> str:
    from jaket.senses.scorers import SCORER_LABELS  # inputs first: model code after the data
    rows = [[SCORER_LABELS.get(k, k), f"{100 * v['accuracy']:.1f}", f"{100 * v['accuracy_ambiguous']:.1f}"]
            for k, v in results["scorers"].items()]
    return rep.markdown_table(["Scorer", "accuracy %", "ambiguous only %"], rows)


def write_sense_linking_report(results: dict, out_dir: Path) -> None:
    info = results.get("data", {})
    text = ["# Sense linking", "", f"{info.get('examples', '?')} linked mentions ({info.get('ambiguous', '?')} "
            f"ambiguous) from {info.get('run', 'the given texts')}.", "", sense_linking_table(results), ""]
    if results.get("stages"):
        text += [f"Stages (wall-clock seconds): {stage_line(results['stages'])}.", ""]
    rep.write_run_report(out_dir, results, text)
