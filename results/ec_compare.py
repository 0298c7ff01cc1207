"""One entity-classification table out of several runs on the same KG', seeds and training sizes.

Each ``jaket evaluate entity-classification`` run writes ``metrics.json``; the reference
experiment runs the baselines once and every pre-trained model (the reference run and each
ablation) as its own ``--variants jaket`` run. This script joins them, checks they are paired
(same KG' counts, seeds, split and training fractions), and prints mean ± std per row plus the
paired difference of every row against one reference row (same split and seed), with its 95%
Student-t interval::

    python -m results.ec_compare runs/ec-reference/baselines/metrics.json \\
        "JAKET (reference)=runs/ec-reference/jaket/metrics.json" \\
        "JAKET, paper objective=runs/ec-reference/jaket-paper/metrics.json" \\
        --against lm+g+m --out runs/ec-reference/table

A bare path keeps its runs' own setting names; ``LABEL=PATH`` renames the ``jaket`` setting of
that file to ``LABEL``. Writes ``table.md`` and ``table.json`` (the figures of docs/results.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaket.tasks import report as rep
from jaket.tasks.variants import VARIANT_LABELS

#: what must agree between files; training fractions may differ (a row is paired per fraction it
#: shares with the reference row: each fraction's split depends only on the labels, seed and split)
_PAIRING_KEYS = ("seeds", "split", "epochs")


def load_runs(specs: list[str]) -> tuple[dict, dict, dict]:
    """``(runs, zero_shot, reference_config)``: ``runs[label][fraction]`` = per-seed rows."""
    runs: dict = {}
    zero_shot: dict = {}
    first: dict | None = None
    for spec in specs:
        label, _, path = spec.rpartition("=")
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        # the KG' itself (whether a model was pre-trained on it is the model's fact, not the KG's)
        kg = {k: v for k, v in data["kg"].items() if k != "in_pretraining"}
        signature = {"kg": kg, **{k: data["config"][k] for k in _PAIRING_KEYS}}
        if first is None:
            first = signature
        elif signature != first:
            raise SystemExit(f"{path}: not paired with the first file (KG', seeds, split or epochs "
                             f"differ): {signature} vs {first}")
        for variant, by_fraction in data["runs"].items():
            name = label if (label and variant == "jaket") else VARIANT_LABELS.get(variant, variant)
            if name in runs:
                raise SystemExit(f"{path}: the row {name!r} appears twice; give it a LABEL=")
            runs[name] = by_fraction
        for variant, rows in data.get("zero_shot", {}).items():
            name = label if (label and variant == "jaket") else VARIANT_LABELS.get(variant, variant)
            values = [r["test_accuracy"] for r in rows]
            if values not in zero_shot.values():  # the same model in two files: one zero-shot row
                zero_shot[name] = values
        if "majority_baseline" in data and "(majority class)" not in runs:
            runs["(majority class)"] = {f: [{"seed": s, "test_accuracy": v} for s, v in
                                            zip(first["seeds"], m["values"])]
                                        for f, m in data["majority_baseline"].items()}
    return runs, zero_shot, first or {}


def compare(runs: dict, against: str) -> dict:
    """Paired differences of every row against the row ``against``."""
    base = runs[against]
    out: dict = {}
    for name, by_fraction in runs.items():
        if name in (against, "(majority class)"):
            continue
        for fraction, rows in by_fraction.items():
            other = {r["seed"]: r["test_accuracy"] for r in base.get(fraction, [])}
            pairs = [(r["test_accuracy"], other[r["seed"]]) for r in rows if r["seed"] in other]
            if len(pairs) == len(rows) and pairs:
                out.setdefault(name, {})[fraction] = rep.paired_difference(
                    [p[0] for p in pairs], [p[1] for p in pairs])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("metrics", nargs="+", help="metrics.json files, optionally LABEL=PATH")
    parser.add_argument("--against", default="lm+g+m", help="the reference row of the paired differences")
    parser.add_argument("--out", type=Path, help="folder for table.md and table.json")
    args = parser.parse_args(argv)
    runs, zero_shot, config = load_runs(args.metrics)
    against = VARIANT_LABELS.get(args.against, args.against)
    if against not in runs:
        raise SystemExit(f"--against {args.against}: no such row (rows: {', '.join(runs)})")
    fractions = list(dict.fromkeys(f for by_fraction in runs.values() for f in by_fraction))
    heads = [f"{float(f) * 100:g}%" for f in fractions]
    rows = [[name] + [rep.format_mean_std([r["test_accuracy"] for r in by_fraction[f]])
                      if f in by_fraction else "-" for f in fractions] for name, by_fraction in runs.items()]
    rows += [[f"{name}, zero-shot (no KG' label)"] + [rep.format_mean_std(values)] * len(fractions)
             for name, values in zero_shot.items()]
    paired = compare(runs, against)
    prow = [[f"{name} − {against}"] + [
        f"{100 * d[f]['mean']:+.1f} [{100 * d[f]['ci_low']:+.1f}, {100 * d[f]['ci_high']:+.1f}]"
        if f in d else "-" for f in fractions] for name, d in paired.items()]
    text = "\n".join([rep.markdown_table(["Model"] + heads, rows), "",
                      rep.markdown_table(["Paired difference (points, 95% CI)"] + heads, prow), ""])
    print(text)
    if args.out:
        summary = {name: {f: rep.summarize_seeds([{"test_accuracy": r["test_accuracy"]} for r in rows_])
                          ["test_accuracy"] for f, rows_ in by_fraction.items()}
                   for name, by_fraction in runs.items()}
        rep.write_text_atomic(args.out / "table.md", text)
        rep.write_json_atomic(args.out / "table.json", {
            "sources": args.metrics, "kg": config.get("kg"), "seeds": config.get("seeds"),
            "accuracy": summary, "zero_shot": {k: rep.mean_std(v) for k, v in zero_shot.items()},
            "paired_against": against,
            "paired": {name: {f: {k: d[k] for k in ("mean", "ci_low", "ci_high", "values")}
                              for f, d in by_fraction.items()} for name, by_fraction in paired.items()}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
