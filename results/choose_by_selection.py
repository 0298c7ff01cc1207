"""Each setting's own value of a fine-tuning setting (the learning rate), chosen on the selection split.

A comparison where every setting gets its own learning rate with the same budget (WiC with the 110M
encoder: each of LM only, LM+G+M and JAKET tries the same rates on seed 0, docs/tasks.md) chooses,
for each setting, the value whose run reached the **higher selection accuracy** (the share of the
training pairs each run holds out to choose its epoch: ``selection_accuracy`` in its entry), never the
evaluation score, so that the evaluation split stays a measurement. Given the ``metrics.json`` of
those runs (one or more runs each)::

    python -m results.choose_by_selection runs/wic-mpnet/*-seed0/metrics.json --key lr

prints, per setting, every tried value with its best selection accuracy (mean over the seeds a value
was run with) and the chosen one; a tie goes to the smaller value. ``--out FILE`` writes it as JSON.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from jaket.atomic import write_json
from jaket.jsonio import read_json


def selection_scores(paths: list[Path], key: str) -> dict[str, dict[float, list[float]]]:
    """``{setting: {value of key: [each run's best selection accuracy]}}`` of the runs in ``paths``."""
    found: dict[str, dict[float, list[float]]] = {}
    for path in paths:
        metrics = read_json(path)
        config = metrics.get("config", {})
        if key not in config:
            raise ValueError(f"{path}: the run's config has no key {key!r}")
        for setting, runs in metrics.get("runs", {}).items():
            for run in runs:
                scores = run.get("selection_accuracy") or []
                if not scores:
                    raise ValueError(f"{path}: {setting} seed {run.get('seed')} has no selection accuracy "
                                     "(selection_fraction 0?)")
                found.setdefault(setting, {}).setdefault(float(config[key]), []).append(max(scores))
    return found


def choose(scores: dict[str, dict[float, list[float]]]) -> dict[str, dict]:
    """Per setting: each value's mean best selection accuracy and the chosen value (ties: the smaller)."""
    out = {}
    for setting, by_value in scores.items():
        means = {value: float(np.mean(values)) for value, values in sorted(by_value.items())}
        best = max(means.values())
        out[setting] = {"tried": {str(v): {"selection_accuracy": m, "runs": len(by_value[v])} for v, m in means.items()},
                        "chosen": min(v for v, m in means.items() if m == best)}
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("metrics", nargs="+", type=Path, help="metrics.json files of the tried runs")
    parser.add_argument("--key", default="lr", help="the config key whose value is chosen (default: lr)")
    parser.add_argument("--out", type=Path, help="write the choice as JSON here")
    args = parser.parse_args(argv)
    try:
        chosen = choose(selection_scores(args.metrics, args.key))
    except (OSError, ValueError) as error:
        parser.error(str(error))
    for setting, found in chosen.items():
        tried = ", ".join(f"{v}: {100 * t['selection_accuracy']:.1f}% ({t['runs']} run{'s' * (t['runs'] > 1)})"
                          for v, t in found["tried"].items())
        print(f"{setting}: {args.key} = {found['chosen']} (selection accuracy {tried})")
    if args.out:
        write_json(args.out, {"key": args.key, "settings": chosen})
    return chosen


if __name__ == "__main__":
    main()
