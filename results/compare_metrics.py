"""Two runs of the same command, number for number: the reproduction check of a refactoring.

    python -m results.compare_metrics BEFORE AFTER [...more pairs] [--ignore KEY ...]

BEFORE / AFTER: a ``metrics.json`` or the run folder holding one. ``--ignore KEY``: a key left out
as well (``--ignore data`` for a config section the refactoring added).

Walks both ``metrics.json`` files side by side and lists every number that differs (bit for bit:
no tolerance), every key one of them lacks and every list of another length. Timings, paths and
the machine (keys naming seconds, time, dates, paths, threads, the machine or the command) are
left out: they differ between any two runs. Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from jaket.jsonio import read_json

#: a key containing one of these is not compared
IGNORED = ("second", "time", "wall", "cpu", "date", "started", "finished", "elapsed", "machine", "host",
           "version", "command", "argv", "path", "out", "threads", "source", "root")


def differences(before, after, where: str = "", ignore: tuple[str, ...] = ()) -> tuple[list[str], int]:
    """``(differences, numbers compared)`` between two JSON values (keys in ``ignore`` left out)."""
    found: list[str] = []
    compared = 0
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            if any(part in key.lower() for part in IGNORED) or key in ignore:
                continue
            if key not in before or key not in after:
                found.append(f"{where}/{key}: only in the {'after' if key not in before else 'before'} run")
                continue
            more, count = differences(before[key], after[key], f"{where}/{key}", ignore)
            found += more
            compared += count
    elif isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [f"{where}: {len(before)} items before, {len(after)} after"], 0
        for i, (b, a) in enumerate(zip(before, after)):
            more, count = differences(b, a, f"{where}[{i}]", ignore)
            found += more
            compared += count
    elif _number(before) and _number(after):
        compared = 1
        if not (before == after or (math.isnan(before) and math.isnan(after))):
            found.append(f"{where}: {before!r} before, {after!r} after")
    elif before != after:
        found.append(f"{where}: {str(before)[:60]!r} before, {str(after)[:60]!r} after")
    return found, compared


def _read(path: Path):
    """A run's metrics: the file, or ``metrics.json`` in the folder."""
    return read_json(path / "metrics.json" if path.is_dir() else path)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path,
                        help="BEFORE AFTER [BEFORE AFTER ...]: metrics.json files or the run folders holding them")
    parser.add_argument("--ignore", action="append", default=[], metavar="KEY", help="also leave out this key")
    args = parser.parse_args(argv)
    if len(args.files) % 2:
        parser.error("give the files in pairs: BEFORE AFTER")
    status = 0
    for before, after in zip(args.files[::2], args.files[1::2]):
        found, compared = differences(_read(before), _read(after), ignore=tuple(args.ignore))
        print(f"{before} vs {after}: {compared} numbers compared, {len(found)} differences")
        for line in found[:20]:
            print(f"  {line}")
        status = status or int(bool(found))
    return status


if __name__ == "__main__":
    sys.exit(main())
