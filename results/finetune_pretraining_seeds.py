"""A fine-tuning task's gain over several pre-training runs: the spread pre-training adds (research).

A task's table (``jaket evaluate word-in-context``, ...) pairs JAKET with its baseline by
fine-tuning seed, for *one* pre-trained model: its interval is fine-tuning's noise, not
pre-training's. Given the ``metrics.json`` of the same command on models pre-trained with
different seeds (``--runs``, each holding ``--variant``) and a run holding the baseline setting
(``--baseline``, holding ``--against``; it does not depend on the pre-trained model), this script
gives, with the same fine-tuning seeds everywhere:

* per pre-training run: the variant's mean ± std over the fine-tuning seeds, and its difference
  from the baseline paired by fine-tuning seed (Student-t interval over those seeds);
* over the runs: the mean of the per-run means ± their std (pre-training's spread), and the
  per-run paired differences' mean with a Student-t interval over the runs (each run's difference
  is itself the mean over the fine-tuning seeds, so this interval carries both noises)::

    python -m results.finetune_pretraining_seeds --baseline runs/wic/fp32-seed0-lm-jaket \\
        --runs runs/wic/fp32-seed0-lm-jaket runs/wic/fp32-pretrain-seed1 runs/wic/fp32-pretrain-seed2 \\
        --out runs/wic/pretraining-seeds.json

A run given as several folders joined by commas (``runs/a-seed0,runs/a-seed1,runs/a-seed2``) is
the union of their fine-tuning seeds, for cells run one seed per folder; a seed found twice is
an error, not a choice.

Scores are in % (``--score``, a key of each run's entry: ``accuracy`` by default).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.jsonio import read_json
from jaket.tasks import report as rep

from results.wsd_levers import report, rounded


def per_seed(folder: Path, variant: str, score: str) -> dict[int, float]:
    """``{fine-tuning seed: score in %}`` of ``variant`` in the run of ``folder``."""
    metrics = read_json(folder / "metrics.json")
    runs = metrics.get("runs", {}).get(variant)
    if not runs:
        raise ValueError(f"{folder / 'metrics.json'}: no {variant!r} runs (it has {sorted(metrics.get('runs', {}))})")
    return {int(run["seed"]): 100 * float(run[score]) for run in runs}


def folders(run: str) -> list[Path]:
    """The folders of one run as given on the command line: one, or several joined by commas."""
    return [Path(part) for part in run.split(",") if part]


def joined_per_seed(run: str, variant: str, score: str) -> dict[int, float]:
    """:func:`per_seed` over every folder of ``run`` (see :func:`folders`), each seed from exactly one of them."""
    scores: dict[int, float] = {}
    for folder in folders(run):
        for seed, value in per_seed(folder, variant, score).items():
            if seed in scores:
                raise ValueError(f"{folder / 'metrics.json'}: {variant!r} seed {seed} is also in an earlier folder "
                                 f"of {run}")
            scores[seed] = value
    return scores


def measure(baseline: dict[int, float], runs: dict[str, dict[int, float]]) -> dict:
    """The module docstring's figures for ``baseline`` (seed -> score) and ``runs`` (name -> seed -> score)."""
    seeds = sorted(baseline)
    for name, scores in runs.items():
        if sorted(scores) != seeds:
            raise ValueError(f"{name}: fine-tuning seeds {sorted(scores)}, the baseline's are {seeds}")
    mean, std = rep.mean_std([baseline[s] for s in seeds])
    found: dict = {"seeds": seeds, "baseline": {"mean": round(mean, 2), "std": round(std, 2)}, "runs": {}}
    differences = []
    for name, scores in runs.items():
        mean, std = rep.mean_std([scores[s] for s in seeds])
        paired = rep.paired_difference([scores[s] for s in seeds], [baseline[s] for s in seeds])
        differences.append(paired["mean"])
        found["runs"][name] = {"mean": round(mean, 2), "std": round(std, 2),
                               "values": [round(scores[s], 2) for s in seeds], "minus baseline": rounded(paired, 2)}
    means = [r["mean"] for r in found["runs"].values()]
    mean, std = rep.mean_std(means)
    found["over runs"] = {"mean": round(mean, 2), "std": round(std, 2),
                          "minus baseline": rounded(rep.paired_difference(differences, [0.0] * len(differences)), 2)}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True,
                        help="a run folder holding the --against setting (or several, joined by commas)")
    parser.add_argument("--runs", nargs="+", required=True,
                        help="run folders of the same command, one per pre-trained model, holding --variant "
                             "(a model's folders joined by commas where its seeds were run apart)")
    parser.add_argument("--variant", default="jaket")
    parser.add_argument("--against", default="lm")
    parser.add_argument("--score", default="accuracy")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    for run in (args.baseline, *args.runs):
        for folder in folders(run):
            if not (folder / "metrics.json").is_file():
                parser.error(f"{folder}: no metrics.json (the --out folder of a finished jaket evaluate run)")
    try:
        baseline = joined_per_seed(args.baseline, args.against, args.score)
        runs = {run: joined_per_seed(run, args.variant, args.score) for run in args.runs}
        found = measure(baseline, runs)
    except (ValueError, KeyError) as error:
        parser.error(str(error))
    found.update(variant=args.variant, against=args.against, score=args.score)
    return report(found, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
