"""Collect the figures of docs/results.md into docs/results.json (machine-readable).

    python -m results.collect [--runs runs] [--out docs/results.json]

Reads what the documented commands wrote under ``runs/`` (the reference run's ``summary.json``
and data report, ``runs/ec-reference/table/table.json`` of ``results.ec_compare``, and any
task ``metrics.json`` listed in :data:`TASK_RUNS`) and keeps the entries of an existing
``results.json`` whose source is absent on this machine, so a partial re-run does not erase
earlier figures.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaket.atomic import write_json
from jaket.tasks import report as rep

#: results.json key -> metrics file under --runs holding a downstream task's summary
TASK_RUNS = {
    "kgqa_metaqa": "kgqa-metaqa/metrics.json",
    "kgqa_metaqa_jaket": "metaqa-1hop-jaket/metrics.json",
    "relation_classification_fewrel": "fewrel-reference/metrics.json",
    "link_prediction_wn18rr": "lp-reference/metrics.json",
    "link_prediction_wn18rr_train_encoder": "lp-train-encoder/lmgm-1500/metrics.json",
    "link_prediction_wn18rr_frozen_1500_steps": "lp-frozen-long/metrics.json",
    "link_prediction_wn18rr_reference_seed2": "lp-reference-seed2/metrics.json",
    "link_prediction_wn18rr_train_encoder_3300": "lp-train-encoder/lmgm-3300/metrics.json",
    "link_prediction_wn18rr_train_encoder_jaket_3300": "lp-train-encoder/jaket-3300/metrics.json",
    "link_prediction_wn18rr_pykeen_rotate_3300": "lp-train-encoder/pykeen-3300.json",
    "link_prediction_wn18rr_train_encoder_bi_encoder_1500": "lp-train-encoder/lm-1500/metrics.json",
    "link_prediction_wn18rr_pykeen_rotate_3300_nan_fix": "lp-train-encoder/pykeen-3300-nanfix.json",
    "link_prediction_wn18rr_pykeen_rotate_1500": "lp-train-encoder/pykeen-1500.json",
    "link_prediction_wn18rr_reference_pykeen_300": "lp-reference/pykeen-300.json",
    "pretraining_memory_speedup_107659_entities_32_tokens": "bench-pretrain-107k-32.json",
    "pretraining_memory_speedup_107659_entities": "bench-pretrain-107k.json",
    "sense_linking_reference_wic": "sense-linking/reference-wic/metrics.json",
    "sense_linking_unseen_kg_sense_task_no_mlm": "sense-linking/unseen/metrics.json",
    "sense_linking_unseen_kg_unseen_candidates_only": "sense-linking/unseen-candidates-only-all/metrics.json",
    "word_sense_disambiguation_semeval2007": "wsd/semeval2007/metrics.json",
    "word_sense_disambiguation_semeval2007_levers": "wsd/levers.json",
    "word_sense_disambiguation_semeval2007_pretrained_2400_steps": "wsd/semeval2007-long-all/metrics.json",
    "word_sense_disambiguation_semeval2007_sense_texts": "wsd/semeval2007-text/metrics.json",
    "word_sense_disambiguation_semeval2007_neighbour_weight": "wsd/neighbour-weight.json",
    "word_sense_disambiguation_semeval2007_neighbour_weight_reference_encoder": "wsd/neighbour-weight-reference.json",
    "sense_linking_unseen_kg_sense_texts": "sense-linking/unseen-text/metrics.json",
    "word_in_context_wic_dev_jaket_5_seeds_one_invocation_2026_11_27": "wic/jaket-sense-nomlm-5/metrics.json",
    "word_in_context_wic_dev_jaket_seed0_after_probe_fix": "wic/jaket-seed0-after-fix/metrics.json",
    "word_in_context_wic_dev_lmgm_seeds_0_1_2026_11_27": "wic/lmgm/metrics.json",
    "word_in_context_wic_dev_lm_seed0_after_probe_fix": "wic/lm-seed0-after-fix/metrics.json",
    "sense_linking_reference_wic_homonyms": "sense-linking/homonyms/metrics.json",
    "sense_linking_reference_wic_homonyms_step_600": "sense-linking/homonyms-600/metrics.json",
    "sense_linking_reference_wic_lm_lr_2e-5": "sense-linking/lmlr2e5/metrics.json",
    "sense_linking_reference_wic_sense_task": "sense-linking/sense/metrics.json",
    "sense_linking_reference_wic_sense_task_no_mlm": "sense-linking/sense-nomlm/metrics.json",
}

#: results.json key -> metrics.json of a word-in-context run whose baselines (the frozen base
#: encoder + logistic regression, the majority class) are reported beside the table
WIC_BASELINES = {"word_in_context_wic_dev_baselines": "wic/lm/metrics.json"}

#: results.json key -> (pre-training run folder under --runs, its command); all on the reference data
PRETRAINING_RUNS = {
    "reference_pretraining": (
        "reference", "jaket pretrain --config configs/pretrain-wordnet.yaml --out runs/reference"),
    "pretraining_entity_off": (
        "reference-entity-off", "jaket pretrain --config configs/pretrain-wordnet.yaml "
        "--set tasks.weight_entity=0 --out runs/reference-entity-off"),
    "pretraining_entity_weight_025": (
        "reference-entity-025", "jaket pretrain --config configs/pretrain-wordnet.yaml "
        "--set tasks.weight_entity=0.25 --out runs/reference-entity-025"),
    "pretraining_wic_excluded": (
        "reference-wic", "jaket pretrain --config configs/pretrain-wordnet.yaml --exclude-texts "
        "../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt ../shared/data/wic/test.data.txt "
        "--out runs/reference-wic"),
    "pretraining_wic_excluded_homonyms": (
        "reference-wic-homonyms", "jaket pretrain --config configs/pretrain-wordnet.yaml --exclude-texts "
        "../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt ../shared/data/wic/test.data.txt "
        "--set tasks.entity_homonym_negatives=16 --out runs/reference-wic-homonyms"),
    "pretraining_sense_task_2400_steps": (
        "lever-long-2400", "jaket pretrain --config configs/pretrain-wordnet-senses.yaml --precision auto "
        "--set steps=2400 --out runs/lever-long-2400"),
    "pretraining_wic_excluded_lm_lr_2e-5": (
        "reference-wic-lmlr2e5", "jaket pretrain --config configs/pretrain-wordnet.yaml --exclude-texts "
        "../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt ../shared/data/wic/test.data.txt "
        "--set optim.lm_lr=2e-5 --precision bf16 --out runs/reference-wic-lmlr2e5"),
    "pretraining_wic_excluded_sense_task": (
        "reference-wic-sense", "jaket pretrain --config configs/pretrain-wordnet.yaml --exclude-texts "
        "../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt ../shared/data/wic/test.data.txt "
        "--set optim.lm_lr=2e-5 --set tasks.entity_mask_probability=0.8 --set tasks.entity_homonym_negatives=16 "
        "--precision auto --out runs/reference-wic-sense"),
    "pretraining_wic_excluded_sense_task_no_mlm": (
        "reference-wic-sense-nomlm", "jaket pretrain --config configs/pretrain-wordnet.yaml --exclude-texts "
        "../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt ../shared/data/wic/test.data.txt "
        "--set optim.lm_lr=2e-5 --set tasks.entity_mask_probability=0.8 --set tasks.entity_homonym_negatives=16 "
        "--set tasks.weight_mlm=0 --precision auto --out runs/reference-wic-sense-nomlm"),
}

#: results.json key -> table.json of ``results.seed_tables`` (per-seed runs joined and paired)
SEED_TABLES = {
    "kgqa_metaqa_table": "metaqa/table/table.json",
    "relation_classification_fewrel_nyt_table": "fewrel-nyt/table/table.json",
    "link_prediction_wn18rr_reference_table": "lp-reference/table/table.json",
    "link_prediction_wn18rr_entity_off_table": "lp-entity-off/table/table.json",
    "word_in_context_wic_dev_table": "wic/table/table.json",
    "word_in_context_wic_dev_table_against_lmgm": "wic/table-lmgm/table.json",
    "word_in_context_wic_dev_homonyms_table": "wic/table-homonyms/table.json",
    "word_in_context_wic_dev_sense_fusion_first_table": "wic/table-first/table.json",
    "word_in_context_wic_dev_lm_lr_2e-5_table": "wic/table-lmlr2e5/table.json",
    "word_in_context_wic_dev_sense_task_no_mlm_table": "wic/table-sense-nomlm/table.json",
    "word_in_context_wic_dev_sense_task_no_mlm_table_against_lmgm": "wic/table-sense-nomlm-lmgm/table.json",
    "word_in_context_wic_dev_sense_task_no_mlm_fusion_none_table": "wic/table-sense-nomlm-nofusion/table.json",
}


#: results.json key -> (metrics.json of one pre-training ablation's ``--variants jaket`` run, the rows
#: of ``entity_classification`` it is paired with per seed): a step-300 ablation with the
#: reference run's step-300 checkpoint, a full-length one with the full reference run
AT_300 = ("LM+G+M", "JAKET (300 steps)")
AT_1200 = ("LM+G+M", "JAKET (reference, 1,200 steps)", "JAKET, classifier from the pre-trained category head")
ABLATIONS = {
    "entity_classification_ablation_category_off_300": ("ec-reference/category-off-300/metrics.json", AT_300),
    "entity_classification_ablation_relation_off_300": ("ec-reference/relation-off-300/metrics.json", AT_300),
    "entity_classification_ablation_mlm_off_300": ("ec-reference/mlm-off-300/metrics.json", AT_300),
    "entity_classification_ablation_entity_off_300": ("ec-reference/entity-off-300/metrics.json", AT_300),
    "entity_classification_ablation_entity_off_1200": ("ec-reference/entity-off-1200/metrics.json", AT_1200),
    "entity_classification_ablation_entity_off_1200_category_head": (
        "ec-reference/entity-off-1200-category/metrics.json", AT_1200),
    "entity_classification_ablation_entity_weight_025_1200": ("ec-reference/entity-025-1200/metrics.json", AT_1200),
}


def _ablation(metrics: dict | None, table: dict | None, paired_with: tuple[str, ...]) -> dict | None:
    """Accuracy per training fraction, the zero-shot accuracy and the paired differences (95% CI)
    against the stored per-seed rows of the reference table (same KG', split seeds and evaluation)."""
    if metrics is None or table is None:
        return None
    row = metrics["summary"]["jaket"]
    out = {"accuracy": {f: v["test_accuracy"] for f, v in row.items()}, "paired": {}}
    zero_shot = [r["test_accuracy"] for r in (metrics.get("zero_shot") or {}).get("jaket", [])]
    if zero_shot:
        out["zero_shot"] = rep.mean_std(zero_shot)
    for name in paired_with:
        for fraction, values in out["accuracy"].items():
            other = table["accuracy"].get(name, {}).get(fraction)
            if other is not None and len(other["values"]) == len(values["values"]):
                d = rep.paired_difference(values["values"], other["values"])
                out["paired"].setdefault(name, {})[fraction] = {k: d[k] for k in ("mean", "ci_low", "ci_high")}
    return out


def _read(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collect(runs: Path, previous: dict) -> dict:
    out = dict(previous)
    data = _read(runs / "reference" / "data" / "report.json")
    for key, (folder, command) in PRETRAINING_RUNS.items():
        summary = _read(runs / folder / "summary.json")
        if summary is not None:
            out[key] = {
                "command": command, "steps": summary["steps"], "tasks": summary.get("tasks"),
                "train_seconds": summary["train_seconds"],
                "refresh_seconds": summary["refresh_seconds"], "refresh_count": summary["refresh_count"],
                "wall_seconds": summary["session"]["wall_seconds"], "cpu_seconds": summary["session"]["cpu_seconds"],
                "losses": summary["losses"], "masked_entity_before": summary["evaluation_start"],
                "masked_entity_after": summary["evaluation"],
                # every run reads the reference data: its report is kept once
                "data": data if key == "reference_pretraining" else "as reference_pretraining"}
            excluded = (_read(runs / folder / "data_report.json") or {}).get("excluded_texts")
            if excluded is not None:  # data.exclude_texts: what was kept out, and that nothing is left
                out[key]["excluded_texts"] = excluded
    table = _read(runs / "ec-reference" / "table" / "table.json")
    if table is not None:
        out["entity_classification"] = {
            "command": "see docs/results.md, 'Entity classification on the unseen KG''",
            "kg": table["kg"], "seeds": table["seeds"], "accuracy": table["accuracy"],
            "zero_shot": table["zero_shot"], "paired_against": table["paired_against"],
            "paired": table["paired"]}
    probe = _read(runs / "ec-reference" / "probe-table" / "table.json")
    if probe is not None:  # python -m results.ec_compare runs/ec-reference/probe/metrics.json --out ...
        out["entity_classification_linear_probe"] = {
            "command": "see docs/results.md, 'Ablations' (KM frozen downstream)",
            "accuracy": probe["accuracy"], "paired_against": probe["paired_against"],
            "paired": {name: {f: {k: d[k] for k in ("mean", "ci_low", "ci_high")} for f, d in by_fraction.items()}
                       for name, by_fraction in probe["paired"].items()}}
    for key, (relative, paired_with) in ABLATIONS.items():
        row = _ablation(_read(runs / relative), out.get("entity_classification"), paired_with)
        if row is not None:
            out[key] = {"source": str(runs / relative), **row}
    for key, relative in SEED_TABLES.items():
        table = _read(runs / relative)
        if table is not None:
            out[key] = {"source": str(runs / relative), "task": table["task"], "values": table["values"],
                        "paired_against": table["paired_against"],
                        "paired": {name: {c: {k: d[k] for k in ("mean", "ci_low", "ci_high", "values")}
                                          for c, d in by_column.items()} for name, by_column in table["paired"].items()}}
    for key, relative in TASK_RUNS.items():
        metrics = _read(runs / relative)
        if metrics is not None:
            for model in (metrics.get("models") or {}).values():  # results/pykeen_baseline.py output
                if model.pop("ranks", None) is None:  # written before the file-order fix (docs/results.md)
                    model["seen"] = model["unseen"] = None
                    model["note"] = ("seen/unseen rows omitted: this run paired ranks with other triples' "
                                     "seen flags (fixed since); its 'all' row is exact")
            out[key] = {"source": str(runs / relative), "summary": metrics.get("summary", metrics)}
    for key, relative in WIC_BASELINES.items():
        metrics = _read(runs / relative)
        if metrics is not None:
            out[key] = {"source": str(runs / relative), "frozen_features": metrics.get("frozen_features"),
                        "majority_class": metrics.get("majority_class")}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=Path("runs"))
    parser.add_argument("--out", type=Path, default=Path("docs/results.json"))
    args = parser.parse_args(argv)
    previous = _read(args.out) or {}
    write_json(args.out, collect(args.runs, previous))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
