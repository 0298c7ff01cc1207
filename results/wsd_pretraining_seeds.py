"""The word-sense task's scorers over several pre-training runs: their spread, and differences paired by run (research).

``jaket evaluate word-sense-disambiguation`` gives each pre-trained model's F1 with intervals from a
bootstrap over the targets: the noise of the evaluated set, not that of pre-training. Given the
``metrics.json`` of the same command on models pre-trained with different seeds (or on other
machines), this script reads each scorer's F1 (overall, nouns, verbs) per run, their mean ± std, and
the differences of :data:`PAIRS` paired by run (Student-t interval over the runs; a scorer that does
not depend on the model, such as the first sense, is the same in every run)::

    python -m results.wsd_pretraining_seeds runs/wsd/semeval2007-text runs/wsd/semeval2007-text-seed1 \\
        runs/wsd/semeval2007-text-seed2 --out runs/wsd/pretraining-seeds.json

Runs made with ``--variants jaket`` alone take the scorers that do not depend on the pre-trained
model (``lm``, ``lm (text)``, ``lm (text + kg)``) from ``--base``: the same task on the same data
with ``--variants lm`` and the base encoder (its output folder).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.jsonio import read_json
from jaket.tasks import report as rep

from results.wsd_levers import report, rounded

SCORERS = ("first sense", "lm (text + kg)", "jaket (text + kg)", "jaket (text)", "jaket", "jaket (cosine)")
PAIRS = (("jaket (text + kg)", "first sense"), ("jaket (text + kg)", "lm"), ("jaket (text + kg)", "lm (text + kg)"),
         ("jaket (text + kg)", "lm (text)"), ("jaket", "lm"))


def read_run(folder: Path) -> dict:
    """The F1 (%) of every scorer of one run's ``metrics.json``, overall and per part of speech."""
    metrics = read_json(folder / "metrics.json")
    out = {"model": metrics["config"].get("pretrained"), "machine": metrics.get("machine"),
           "data": metrics["config"].get("data"), "f1": {}}
    for name, found in metrics["scorers"].items():
        if "f1" in found:
            out["f1"][name] = {"f1": 100 * found["f1"],
                               **{pos.lower(): 100 * by["f1"] for pos, by in found.get("by_pos", {}).items()}}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+", help="output folders of the word-sense task, one per model")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument("--base", type=Path, help="the task's output folder with the base encoder (--variants lm): "
                                                  "its scorers fill in those a run lacks")
    args = parser.parse_args(argv)
    for folder in [*args.runs, *([args.base] if args.base else [])]:
        if not (folder / "metrics.json").is_file():
            parser.error(f"{folder}: no metrics.json (the --out folder of jaket evaluate word-sense-disambiguation)")
    runs = [read_run(folder) for folder in args.runs]
    if args.base is not None:
        base = read_run(args.base)
        if base["model"] is not None:
            parser.error(f"{args.base / 'metrics.json'}: made with --model {base['model']}; --base is the base "
                         f"encoder's run (--variants lm, no --model)")
        for folder, run in zip(args.runs, runs):
            if run["data"] != base["data"]:
                parser.error(f"{folder / 'metrics.json'}: evaluated on {run['data']}, --base on {base['data']}")
            for name, f1 in base["f1"].items():
                run["f1"].setdefault(name, f1)
    for folder, run in zip(args.runs, runs):
        missing = [name for name in SCORERS if name not in run["f1"]]
        if missing:
            parser.error(f"{folder / 'metrics.json'}: no {', '.join(missing)} scores (run the task with --model "
                         f"and its sense texts; a run of --variants jaket alone takes the lm scorers from --base)")
    found: dict = {"runs": {str(f): r for f, r in zip(args.runs, runs)}, "scorers": {}, "paired over runs": {}}
    for name in SCORERS:
        values = [r["f1"][name]["f1"] for r in runs]
        mean, std = rep.mean_std(values)
        found["scorers"][name] = {"mean": round(mean, 2), "std": round(std, 2), "values": [round(v, 1) for v in values]}
    for a, b in PAIRS:
        paired = rep.paired_difference([r["f1"][a]["f1"] for r in runs], [r["f1"][b]["f1"] for r in runs])
        found["paired over runs"][f"{a} - {b}"] = rounded(paired)
    return report(found, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
