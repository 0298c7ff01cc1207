"""Run every benchmark and write ``docs/performance.md``, ``docs/performance.json`` and the plots.

Each benchmark is a ``jaket bench NAME --json ...`` run in a fresh subprocess (so peak memory and
thread settings of one cannot leak into another), repeated as its spec says; every figure in the
report is the median over those runs with its min-max spread, and the benchmarks themselves
report medians over their own repeats. Ratios are computed inside one run (interleaved), so both
sides of a comparison see the same machine state.

    python -m benchmarks                 # the full suite (under 30 minutes on 2 cores)
    python -m benchmarks --quick         # smaller sizes, one repeat: a smoke run of the pipeline
    python -m benchmarks --only model    # a subset (by key or benchmark name)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
SCALING_SIZES = (10_000, 100_000, 1_000_000)


@dataclass
class Spec:
    """One benchmark invocation: ``jaket bench {benchmark} --json {argv}``, ``repeats`` times."""

    key: str  # unique name in the report
    benchmark: str
    argv: list[str]
    title: str
    scale: int | None = None  # number of entities, for the scaling fits
    repeats: int = 1
    prepare: Callable[[], None] | None = None  # run once before the first repeat
    results: list[dict] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def command(self) -> str:
        """The command line, with the suite's temporary directory shown as ``$TMP``."""
        line = f"jaket bench {self.benchmark} --json {' '.join(self.argv)}".strip()
        return re.sub(r"\S*/jaket-bench-[^/\s]+", "$TMP", line)


def _write_wordnet(directory: Path) -> Callable[[], None]:
    def prepare() -> None:
        if (directory / "triples.tsv").exists():
            return
        from jaket.kg.io import save_kg
        from jaket.kg.sources.wordnet import full_wordnet_kg

        save_kg(full_wordnet_kg(), directory)

    return prepare


def suite(quick: bool, work: Path) -> list[Spec]:
    """The benchmarks: model stages, memory, pre-training, data layer, scaling with KG size."""
    sizes = SCALING_SIZES[:2] if quick else SCALING_SIZES
    q = ["--quick"] if quick else []
    one = ["--threads", "1"]  # one thread per process: CPU time is stable on a shared machine
    specs = [
        Spec("model", "model", [*q, *one, *([] if quick else ["--repeats", "5"])],
             "Model stages, bundled MiniLM, r = 10", repeats=3),
        Spec("model-r5", "model", [*q, *one, "--fanout", "5", "--km-variant", "full",
                                   *([] if quick else ["--repeats", "5"])],
             "Model stages, bundled MiniLM, r = 5", repeats=2),
        Spec("model-threads2", "model", [*q, "--threads", "2", "--km-variant", "full",
                                         *([] if quick else ["--repeats", "5"])],
             "Model stages, bundled MiniLM, r = 10, two threads"),
        Spec("model-paper-shape", "model",
             [*one, "--shape", "paper", "--batch", "4" if quick else "8", "--repeats", "2",
              *(["--entities", "20000"] if quick else [])],
             "Model stages, RoBERTa-base-shaped encoder (random weights), r = 10", repeats=2),
        Spec("memory", "memory", [*(q if quick else ["--entities", "1500"]), *one],
             "Entity context memory refresh, WordNet descriptions", repeats=2),
        Spec("pretrain", "pretrain", [*(q if quick else ["--entities", "2000", "--steps", "6"]), *one],
             "Pre-training steps, bundled MiniLM, WordNet subset", repeats=2),
        # float32 against bf16 here (a CPU without native bf16 takes minutes on the bf16 step: few repeats)
        Spec("precision", "precision", [*one, "--repeats", "1" if quick else "3"],
             "float32 vs bf16: a 512x384 @ 384x1536 product and a fine-tuning step (bundled MiniLM, "
             "32 x 64 tokens); what --precision auto chooses"),
        # the sense-text pass of WSD and `jaket link --scorer text+kg`: before (unsorted) beside after
        # (length-sorted), other batch sizes and the warm text-vector cache, interleaved
        Spec("sense-texts", "sense-texts", [*one, *(q if quick else ["--texts", "2000", "--repeats", "3"])],
             "Sense-text pass (WSD, text+kg linking), WordNet sense texts, bundled MiniLM"),
        # the data layer's figures (sampler speed on a WordNet-size synthetic KG and on WordNet,
        # compiled 1M-entity load); the scaling specs below use 10 triples per entity
        Spec("sampler-default", "sampler",
             ["--entities", "20000", "--load-entities", "100000"] if quick else
             ["--load-entities", "1000000", "--load-dir", str(work / "load-1m-5m")],
             "Sampler and compiled-KG load (data layer defaults)"),
        Spec("sampler-wordnet", "sampler", ["--kg", str(work / "wordnet"), "--repeats", "5"],
             "Sampler on WordNet 3.0 (embedded default)", prepare=_write_wordnet(work / "wordnet")),
    ]
    for n in sizes:
        specs.append(Spec(
            f"sampler-{n}", "sampler",
            ["--entities", str(n), "--load-entities", str(n), "--load-triples", str(10 * n),
             "--load-dir", str(work / f"synthetic-{n}"), "--repeats", "5", "--loop-repeats", "1"],
            f"Sampler and load, synthetic KG of {n:,} entities", scale=n,
            repeats=1 if quick or n >= 1_000_000 else 2))
        specs.append(Spec(
            f"km-{n}", "model",
            ["--km-only", "--entities", str(n), "--km-variant", "full", "--no-backward", *one,
             "--batch", "8" if quick else "32", "--repeats", "3"],
            f"Knowledge module per sampled entity, synthetic KG of {n:,} entities", scale=n))
        specs.append(Spec(
            f"refresh-{n}", "memory",
            ["--source", "synthetic", "--entities", str(n), "--subset", "256" if quick else "1024",
             "--repeats", "1" if quick else "2", *one],
            f"Memory refresh cost, synthetic KG of {n:,} entities", scale=n))
    return specs


def run_spec(spec: Spec, repeats: int | None, log) -> None:
    if spec.prepare is not None:
        try:
            spec.prepare()
        except Exception as error:  # reported in the document, the suite goes on
            spec.results.append({"error": f"preparation failed: {error}"})
            log(f"  {spec.key} preparation FAILED: {error}")
            return
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for attempt in range(repeats or spec.repeats):
        command = [sys.executable, "-m", "jaket", "bench", spec.benchmark, "--json", *spec.argv]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            log(f"  {spec.key} run {attempt + 1} FAILED ({elapsed:.0f}s):\n{done.stderr[-2000:]}")
            lines = done.stderr.strip().splitlines()
            spec.results.append({"error": lines[-1] if lines else "failed"})
            return
        spec.results.append(json.loads(done.stdout[done.stdout.index("{"):]))
        spec.seconds.append(elapsed)
        log(f"  {spec.key} run {attempt + 1}: {elapsed:.0f}s")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.report import write_report
    from benchmarks.scaling import write_scaling

    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None,
                        help="runs per benchmark (default: each spec's own, 1-2)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--only", default="", help="comma-separated benchmark keys or names")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--render-only", action="store_true",
                        help="run nothing: rewrite the documents from OUT/performance.json")
    args = parser.parse_args(argv)
    started = time.time()
    load_before = os.getloadavg()
    repeats = 1 if args.quick else args.repeats
    args.out.mkdir(parents=True, exist_ok=True)
    if args.render_only:
        previous = json.loads((args.out / "performance.json").read_text())
        specs = suite(bool(previous.get("quick")), Path(tempfile.gettempdir()) / "jaket-bench-x")
        load_before = tuple(previous["machine"].get("load_average_before", (0.0, 0.0, 0.0)))
        load_after = tuple(previous["machine"].get("load_average_after", (0.0, 0.0, 0.0)))
        # the suite's own wall time, not the suite's plus this rendering's
        write_report(specs, args.out, previous.get("wall_seconds", 0.0), bool(previous.get("quick")),
                     load_before, load_after)
        write_scaling(json.loads((args.out / "performance.json").read_text()), args.out / "scaling.md")
        print(f"rewrote {args.out / 'performance.md'} and {args.out / 'scaling.md'}")
        return 0
    full = True
    with tempfile.TemporaryDirectory(prefix="jaket-bench-") as tmp:
        specs = suite(args.quick, Path(tmp))
        all_keys = {s.key for s in specs}
        if args.only:
            wanted = set(args.only.split(","))
            specs = [s for s in specs if s.key in wanted or s.benchmark in wanted]
            full = {s.key for s in specs} == all_keys
        for spec in specs:
            print(f"[{time.strftime('%H:%M:%S')}] {spec.key}: {spec.command}", flush=True)
            run_spec(spec, repeats, lambda m: print(m, flush=True))
        if not full:  # keep the other benchmarks' figures from the last run
            specs = [next((s for s in specs if s.key == o.key), o) for o in suite(args.quick, Path(tmp))]
    write_report(specs, args.out, time.time() - started, args.quick, load_before, os.getloadavg(), merge=not full)
    write_scaling(json.loads((args.out / "performance.json").read_text()), args.out / "scaling.md")
    print(f"wrote {args.out / 'performance.md'} and scaling.md in {(time.time() - started) / 60:.1f} min")
    failed = [s.key for s in specs if s.results and "error" in s.results[0]]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
