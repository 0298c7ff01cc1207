"""A pre-training step on a 10^6-entity synthetic KG with a memory-mapped float16 memory.

    python -m benchmarks.scale_step [--entities 1000000] [--triples 10000000] [--work DIR]

Builds (once, cached in ``--work``) a synthetic power-law KG in the directory format with a small
templated corpus ("entity 12 ... entity 99."), writes a float16 ``.npy`` memory of N x 384 filled
with random rows (a stand-in for the first LM1 fill, which on this CPU would take N / ~260 s:
about an hour for 10^6 descriptions; docs/performance.md measures that rate), then runs two
pre-training steps of the real loop with the bundled MiniLM reading that memory through
``np.memmap``. Prints JSON: load, step and peak-memory figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np


def _corpus(kg, texts: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = kg.triples[rng.integers(0, kg.num_triples, texts)]
    out = []
    for h, _, t in rows.tolist():
        a, b = kg.entity_names[h], kg.entity_names[t]
        text = f"{a} is linked to {b} in the graph."
        out.append({"text": text, "mentions": [
            {"start": 0, "end": len(a), "entity": kg.entity_ids[h]},
            {"start": len(a) + 14, "end": len(a) + 14 + len(b), "entity": kg.entity_ids[t]}]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--triples", type=int, default=10_000_000)
    parser.add_argument("--work", type=Path, default=Path("runs/scale-step"))
    args = parser.parse_args(argv)
    from jaket.paths import offline_environment, thread_environment

    offline_environment()
    thread_environment()
    from jaket.kg.io import load_kg, save_kg
    from jaket.kg.toy import synthetic_kg
    from jaket.train.config import load_config
    from jaket.train.pretrain import pretrain

    kg_dir = args.work / f"synthetic-{args.entities}"
    figures: dict = {"entities": args.entities, "triples": args.triples}
    if not (kg_dir / "corpus.jsonl").exists():
        began = time.perf_counter()
        kg = synthetic_kg(args.entities, args.triples, seed=0)
        save_kg(kg, kg_dir)
        lines = "".join(json.dumps(row) + "\n" for row in _corpus(kg, 2048, 0))
        (kg_dir / "corpus.jsonl").write_text(lines, encoding="utf-8")
        load_kg(kg_dir)  # compile the cache
        figures["build_seconds"] = time.perf_counter() - began
        del kg
    began = time.perf_counter()
    kg = load_kg(kg_dir)
    figures["load_seconds"] = time.perf_counter() - began
    memory_path = args.work / f"memory-{args.entities}-f16.npy"
    if not memory_path.exists():
        rows = np.lib.format.open_memmap(memory_path, mode="w+", dtype=np.float16, shape=(kg.num_entities, 384))
        rng = np.random.default_rng(0)
        for begin in range(0, kg.num_entities, 100_000):
            stop = min(kg.num_entities, begin + 100_000)
            rows[begin:stop] = rng.standard_normal((stop - begin, 384), dtype=np.float32) * 0.5
        rows.flush()
        del rows
    figures["memory_file_bytes"] = memory_path.stat().st_size
    del kg
    config = load_config(None, ["data.source=dir", f"data.path={kg_dir}", "steps=2", "text_batch_size=16",
                                "model.memory_dtype=float16", f"memory.path={memory_path}",
                                "checkpoint_every=0", "eval_texts=0", "tensorboard=false"])
    began = time.perf_counter()
    summary = pretrain(config, args.work / "run", progress=False)
    figures["pretrain_seconds_total"] = time.perf_counter() - began
    figures["train_seconds_2_steps"] = summary.get("train_seconds")
    figures["refresh_count"] = summary.get("refresh_count")
    figures["losses"] = summary.get("losses")
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
