"""Paired differences of word-sense key files from different runs (research).

``jaket evaluate word-sense-disambiguation`` pairs the scorers of one run. Scorers of different runs
(another encoder, another pre-trained model) answer the same targets, so their key files pair just
as well: this script reads each key file against the framework's gold key, scores it as the
official scorer does (an answer is right when its sense key is among the target's gold keys;
F1 = 2 right / (answered + targets)) and gives each ``A:B`` pair's F1 difference with a paired
bootstrap over the gold file's targets (:func:`jaket.tasks.report.paired_bootstrap`, 10,000
resamples, seed 0: the intervals of the task's own report)::

    python -m results.wsd_compare_keys --gold ../shared/data/wsd/semeval2007.gold.key.txt \\
        runs/wsd/semeval2007-mpnet-jaket/jaket-text+kg.key.txt:runs/wsd/semeval2007-mpnet-base/first-sense.key.txt

A line of a key file that is not ``instance-id sense-key [...]``, an instance the gold file does not
name, or an instance given twice is an error naming the file and the line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from jaket.tasks.report import paired_bootstrap
from jaket.tasks.word_sense import f1_statistic

from results.wsd_levers import report, rounded


def read_keys(path: Path, known: dict[str, int] | None = None) -> dict[str, frozenset[str]]:
    """``instance id -> sense keys`` of a key file; ``known`` (the gold's ids) refuses any other id."""
    keys: dict[str, frozenset[str]] = {}
    first: dict[str, int] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            raise ValueError(f"{path}:{number}: expected 'instance-id sense-key [sense-key ...]', got {line.strip()!r}")
        if fields[0] in first:
            raise ValueError(f"{path}:{number}: instance {fields[0]} given twice (first at line {first[fields[0]]})")
        if known is not None and fields[0] not in known:
            raise ValueError(f"{path}:{number}: instance {fields[0]} is not in the gold key file")
        first[fields[0]] = number
        keys[fields[0]] = frozenset(fields[1:])
    return keys


def outcomes(answers: dict[str, frozenset[str]], gold: dict[str, frozenset[str]]) -> np.ndarray:
    """``(targets, 2)``: (right, answered) per gold target, in the gold file's order."""
    return np.asarray([[bool(answers.get(i, frozenset()) & keys), i in answers] for i, keys in gold.items()],
                      dtype=np.float64)


def compare(gold_path: Path, pairs: list[tuple[Path, Path]]) -> dict:
    gold = read_keys(gold_path)
    known = {i: n for n, i in enumerate(gold)}
    found: dict = {"gold": str(gold_path), "targets": len(gold), "f1": {}, "paired": {}}
    for a, b in pairs:
        sides = [outcomes(read_keys(p, known), gold) for p in (a, b)]
        for p, side in zip((a, b), sides):
            found["f1"][str(p)] = round(100 * float(f1_statistic(side[None])[0]), 1)
        difference = paired_bootstrap(sides[0], sides[1], f1_statistic)
        found["paired"][f"{a} - {b}"] = rounded({k: 100 * difference[k] for k in ("mean", "ci_low", "ci_high")})
    return found


def _pair(text: str) -> tuple[Path, Path]:
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"expected A.key.txt:B.key.txt, got {text!r}")
    return Path(a), Path(b)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", type=Path, required=True, help="the framework's gold key file")
    parser.add_argument("pairs", type=_pair, nargs="+", metavar="A:B", help="two key files, A - B is reported")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    try:
        found = compare(args.gold, args.pairs)
    except (OSError, ValueError) as error:
        parser.exit(1, f"error: {error}\n")
    return report(found, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
