"""One table out of per-seed runs of a task (KGQA, relation classification), with paired differences.

A long comparison is run seed by seed (``--seeds 1 --first-seed S``, one setting per invocation),
so that each finished run is kept on its own; this script joins their ``metrics.json`` files,
checks they are comparable (the same task, data and configuration apart from the seed and the
setting), and prints mean ± std per setting and column plus the paired difference of every
setting against one reference setting (same seed), with its 95% Student-t interval::

    python -m results.seed_tables runs/metaqa/*/metrics.json --against lm+g+m --out runs/metaqa/table

A ``LABEL=PATH`` argument names that file's setting ``LABEL`` (a row of the same variant on another
encoder, e.g. ``"LM+G+M, MLM-only encoder=runs/metaqa-kg/mlm-only-seed0/metrics.json"``; give
``--ignore encoder`` then).

Columns are the leaves of each file's ``summary`` (e.g. ``full 1-hop``, ``50% 2-hop`` for KGQA,
``5-1`` for relation classification). Writes ``table.md`` and ``table.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaket.tasks import report as rep
from jaket.tasks.grid import paired_differences
from jaket.tasks.variants import VARIANT_LABELS

#: configuration keys allowed to differ between the joined files
_PER_RUN_KEYS = {"seeds", "variants", "pretrained"}


def _leaves(summary: dict, prefix: str = "") -> dict[str, list[float]]:
    """``{"full 1-hop": [per-seed values], ...}`` of a nested summary."""
    if "values" in summary:
        return {prefix.strip(): list(summary["values"])}
    out: dict[str, list[float]] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix} {key}"))
    return out


def load(paths: list[Path], ignore: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """``(values, reference_config)``: ``values[setting][column][seed]`` = the figure. ``ignore``:
    configuration keys (and keys of the files' ``data``) allowed to differ too (e.g. a setting added after an earlier run, whose
    default leaves that run's computation unchanged: say so where the table is reported)."""
    values: dict = {}
    first: dict | None = None
    for path in paths:
        text = str(path)  # LABEL=PATH: the file's setting is that row
        rename, written = text.split("=", 1) if "=" in text and not Path(text).exists() else ("", text)
        path = Path(written)
        data = json.loads(path.read_text(encoding="utf-8"))
        config = {k: v for k, v in data["config"].items() if k not in _PER_RUN_KEYS and k not in ignore}
        info = data.get("data")
        if isinstance(info, dict):  # facts of one setting's run (e.g. word-in-context's candidates)
            info = {k: v for k, v in info.items() if k not in ignore}
        signature = {"task": data["task"], "config": config, "data": info}
        if first is None:
            first = signature
        elif signature != first:
            changed = sorted(k for k in set(config) | set(first["config"])
                             if config.get(k) != first["config"].get(k))
            raise SystemExit(f"{path}: not comparable with {paths[0]} (task, data or configuration differ"
                             f"{': ' + ', '.join(changed) if changed else ''})")
        seeds = data["config"]["seeds"]
        for setting, summary in data["summary"].items():
            setting = rename or setting
            if "/" in setting:  # link prediction before 2026-11-26: "lm+g+m/rotate" keys, now [setting][scorer]
                setting, scorer = setting.split("/", 1)
                summary = {scorer: summary}
            for column, per_seed in _leaves(summary).items():
                cell = values.setdefault(setting, {}).setdefault(column, {})
                for seed, value in zip(seeds, per_seed):
                    if seed in cell:
                        raise SystemExit(f"{path}: {setting} {column} seed {seed} appears twice")
                    cell[seed] = value
    return values, first or {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("metrics", nargs="+", help="metrics.json files of one task (LABEL=PATH renames the setting)")
    parser.add_argument("--against", required=True, help="setting the paired differences are taken against")
    parser.add_argument("--out", type=Path, help="folder for table.md and table.json")
    parser.add_argument("--scale", type=float, default=100.0, help="figures are multiplied by this (default %%)")
    parser.add_argument("--ignore", default="", metavar="KEY,...",
                        help="configuration keys that may differ between the files (settings added later)")
    args = parser.parse_args(argv)
    values, config = load(args.metrics, tuple(k for k in args.ignore.split(",") if k))
    args.against = args.against.split("/", 1)[0]  # the older "lm+g+m/rotate" spelling names the setting
    if args.against not in values:
        raise SystemExit(f"--against {args.against}: no such setting ({', '.join(values)})")
    columns = list(dict.fromkeys(c for by_column in values.values() for c in by_column))
    label = lambda setting: VARIANT_LABELS.get(setting, setting)  # noqa: E731
    scaled = {s: {c: {seed: args.scale * v for seed, v in cell.items()} for c, cell in by_column.items()}
              for s, by_column in values.items()}
    runs = {s: len(next(iter(by_column.values()))) for s, by_column in scaled.items()}
    rows = [[f"{label(s)} ({runs[s]} seed{'s' * (runs[s] != 1)})"] + [
        rep.format_mean_std(list(by_column[c].values()), scale=1.0) if c in by_column else "-" for c in columns]
        for s, by_column in scaled.items()]
    found = paired_differences(scaled, [(s, args.against) for s in scaled if s != args.against])
    paired = {name.split(" - ")[0]: {c: d for c, d in by_column.items() if len(d["seeds"]) >= 2}
              for name, by_column in found.items()}
    paired = {s: d for s, d in paired.items() if d}
    prow = [[f"{label(s)} − {label(args.against)}"] + [
        f"{d[c]['mean']:+.1f} [{d[c]['ci_low']:+.1f}, {d[c]['ci_high']:+.1f}]" if c in d else "-"
        for c in columns] for s, d in paired.items()]
    text = "\n".join([rep.markdown_table(["Setting"] + columns, rows), "",
                      rep.markdown_table(["Paired difference (points, 95% CI)"] + columns, prow), ""])
    print(text)
    if args.out:
        rep.write_text_atomic(args.out / "table.md", text)
        rep.write_json_atomic(args.out / "table.json", {
            "sources": [str(p) for p in args.metrics], "task": config.get("task"), "scale": args.scale,
            "values": {s: {c: dict(zip(("mean", "std"), rep.mean_std(list(cell.values()))),
                               seeds=sorted(cell), values=[cell[k] for k in sorted(cell)])
                           for c, cell in by_column.items()} for s, by_column in scaled.items()},
            "paired_against": args.against, "paired": paired})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
