"""Run every benchmark and write ``docs/performance.md`` plus the raw figures as JSON.

Each benchmark is a ``jaket bench NAME --json ...`` run in a fresh subprocess (so peak memory and
thread settings of one cannot leak into another), repeated ``--repeats`` times; every figure in the
report is the median over those runs with its min-max spread. Ratios are computed inside one run,
so both sides of a comparison see the same machine state.

    python -m benchmarks                 # the full suite (about 20-30 minutes on 2 cores)
    python -m benchmarks --quick         # smaller sizes, one repeat: a smoke run of the pipeline
    python -m benchmarks --only sampler  # a subset
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Spec:
    """One benchmark invocation: ``jaket bench {benchmark} {argv}``."""

    key: str  # unique name in the report
    benchmark: str
    argv: list[str]
    title: str
    scale: int | None = None  # number of entities, for the scaling fits
    repeats: int | None = None  # overrides the suite's --repeats (slow benchmarks)
    results: list[dict] = field(default_factory=list)


def suite(quick: bool, work: Path) -> list[Spec]:
    """The benchmarks, on the embedded default and on synthetic KGs of growing size."""
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    specs: list[Spec] = []
    for n in sizes:
        specs.append(
            Spec(
                f"sampler-synthetic-{n}",
                "sampler",
                ["--entities", str(n), "--load-entities", str(n), "--cache-dir", str(work / f"synthetic-{n}")],
                f"Synthetic KG, {n:,} entities, {10 * n:,} triples",
                scale=n,
            )
        )
    specs.append(Spec("sampler-wordnet", "sampler", ["--wordnet"], "WordNet 3.0 (embedded default)"))
    specs.append(Spec("model", "model", ["--quick"] if quick else [], "Model stages, bundled MiniLM"))
    specs.append(Spec("memory", "memory", ["--quick"] if quick else [], "Memory refresh, bundled MiniLM"))
    specs.append(
        Spec("pretrain", "pretrain", ["--quick"] if quick else [], "Pre-training steps, bundled MiniLM", repeats=1)
    )
    return specs


def run_spec(spec: Spec, repeats: int, log) -> None:
    for attempt in range(spec.repeats or repeats):
        command = [sys.executable, "-m", "jaket", "bench", spec.benchmark, "--json", *spec.argv]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            log(f"  {spec.key} run {attempt + 1} FAILED ({elapsed:.0f}s):\n{done.stderr[-2000:]}")
            spec.results.append({"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"})
            return
        spec.results.append(json.loads(done.stdout))
        log(f"  {spec.key} run {attempt + 1}: {elapsed:.0f}s")


def summarise(results: list[dict]) -> dict[str, dict]:
    """Per figure: median, min, max over the runs (numbers); the first value otherwise."""
    summary: dict[str, dict] = {}
    keys = [k for r in results for k in r]
    for key in dict.fromkeys(keys):
        values = [r[key] for r in results if key in r]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers and len(numbers) == len(values):
            summary[key] = {"median": statistics.median(numbers), "min": min(numbers), "max": max(numbers), "n": len(numbers)}
        else:
            summary[key] = {"value": values[0]}
    return summary


def fmt(entry: dict) -> str:
    if "value" in entry:
        return f"`{json.dumps(entry['value'])}`" if not isinstance(entry["value"], str) else entry["value"]
    med, lo, hi = entry["median"], entry["min"], entry["max"]

    def num(x: float) -> str:
        if x == 0:
            return "0"
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        if abs(x) >= 1:
            return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"
        return f"{x:.3g}"

    if entry["n"] > 1 and hi != lo:
        return f"{num(med)} ({num(lo)}–{num(hi)})"
    return num(med)


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y against log x: cost ~ N^slope."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pairs) < 2:
        return None
    mx = sum(p[0] for p in pairs) / len(pairs)
    my = sum(p[1] for p in pairs) / len(pairs)
    sxx = sum((p[0] - mx) ** 2 for p in pairs)
    return sum((p[0] - mx) * (p[1] - my) for p in pairs) / sxx if sxx else None


def scaling_section(specs: list[Spec], out_dir: Path) -> tuple[list[str], dict]:
    """Fit cost ~ N^k for every figure measured at several sizes and plot them on log-log axes."""
    scaled = [s for s in specs if s.scale and s.results and "error" not in s.results[0]]
    if len(scaled) < 2:
        return [], {}
    summaries = [(s.scale, summarise(s.results)) for s in scaled]
    keys = [k for k, v in summaries[0][1].items() if "median" in v]
    fits: dict[str, dict] = {}
    for key in keys:
        xs = [n for n, summ in summaries if key in summ and "median" in summ[key]]
        ys = [summ[key]["median"] for n, summ in summaries if key in summ and "median" in summ[key]]
        exponent = fit_exponent(xs, ys)
        if exponent is not None:
            fits[key] = {"exponent": exponent, "sizes": xs, "values": ys}
    lines = ["## How the costs grow with the number of entities", ""]
    lines.append("Fitted exponent k of `figure ~ N^k` over synthetic KGs (10 triples per entity). ")
    lines.append("k ≈ 1 is linear growth, k ≈ 0 means the figure does not depend on the KG size.")
    lines.append("")
    lines.append("| figure | " + " | ".join(f"N = {n:,}" for n, _ in summaries) + " | k |")
    lines.append("|---|" + "---|" * (len(summaries) + 1))
    for key, fit in fits.items():
        cells = [fmt(summ[key]) if key in summ else "–" for _, summ in summaries]
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {fit['exponent']:.2f} |")
    lines.append("")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plotted = {k: v for k, v in fits.items() if any(w in k for w in ("seconds", "_s", "mb", "bytes", "time"))}
        if plotted:
            fig, ax = plt.subplots(figsize=(6.5, 4.5))
            for key, fit in plotted.items():
                ax.plot(fit["sizes"], fit["values"], marker="o", label=f"{key} (k={fit['exponent']:.2f})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("entities")
            ax.set_title("cost against KG size (log-log)")
            ax.legend(fontsize=7)
            fig.tight_layout()
            fig.savefig(out_dir / "performance-scaling.png", dpi=120)
            plt.close(fig)
            lines += ["![scaling](performance-scaling.png)", ""]
    except ImportError:
        pass
    return lines, fits


def write_report(specs: list[Spec], out_dir: Path, started: float, quick: bool) -> None:
    raw = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "quick": quick,
        "wall_seconds": time.time() - started,
        "benchmarks": {s.key: {"command": f"jaket bench {s.benchmark} --json {' '.join(s.argv)}".strip(), "runs": s.results, "summary": summarise(s.results)} for s in specs},
    }
    lines = [
        "# Performance",
        "",
        "Generated by `python -m benchmarks` (`make bench`); do not edit by hand. Raw figures: "
        "[performance.json](performance.json). Every figure is the median over repeated runs, "
        "each in a fresh process, with the min–max spread in brackets. Ratios are measured within one run.",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}. "
        f"Suite wall time: {raw['wall_seconds'] / 60:.1f} min{' (quick mode)' if quick else ''}.",
        "",
    ]
    notes_path = ROOT / "benchmarks" / "notes.md"
    if notes_path.exists():
        lines += [notes_path.read_text().strip(), ""]
    for spec in specs:
        lines.append(f"## {spec.title}")
        lines.append("")
        lines.append(f"`jaket bench {spec.benchmark} --json {' '.join(spec.argv)}`".replace("  ", " "))
        lines.append("")
        if not spec.results:
            lines += ["(not run)", ""]
            continue
        if "error" in spec.results[0]:
            lines += [f"FAILED: {spec.results[0]['error']}", ""]
            continue
        lines += ["| figure | value |", "|---|---|"]
        for key, entry in summarise(spec.results).items():
            lines.append(f"| {key} | {fmt(entry)} |")
        lines.append("")
    scaling_lines, fits = scaling_section(specs, out_dir)
    lines += scaling_lines
    raw["scaling_fits"] = fits
    (out_dir / "performance.json").write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    (out_dir / "performance.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--only", default="", help="comma-separated benchmark keys or names")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args(argv)
    started = time.time()
    repeats = 1 if args.quick else args.repeats
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="jaket-bench-") as tmp:
        specs = suite(args.quick, Path(tmp))
        if args.only:
            wanted = set(args.only.split(","))
            specs = [s for s in specs if s.key in wanted or s.benchmark in wanted]
        for spec in specs:
            print(f"[{time.strftime('%H:%M:%S')}] {spec.key}", flush=True)
            run_spec(spec, repeats, lambda m: print(m, flush=True))
    write_report(specs, args.out, started, args.quick)
    print(f"wrote {args.out / 'performance.md'} in {(time.time() - started) / 60:.1f} min")
    failed = [s.key for s in specs if s.results and "error" in s.results[0]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
