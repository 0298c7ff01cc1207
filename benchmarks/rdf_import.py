"""``jaket kg import rdf`` of a large synthetic N-Triples dump: the streamed reader against rdflib's.

    python -m benchmarks.rdf_import [--triples 10000000] [--entities 1000000] [--old-triples 1000000]
                                    [--work DIR] [--keep]

Writes (once, kept in ``--work``) a dump shaped like an entity graph export: every entity with an
English ``rdfs:label``, an ``rdf:type`` (one of 200 classes) and, for one in four, an
``rdfs:comment``; then edge triples between entities drawn with power-law popularity over 50
relations, so that ``--triples`` lines in all. Each import runs in a fresh process (``jaket kg import
rdf FILE --out DIR --reader R``); its wall time, its peak resident memory (``getrusage`` of the child)
and its throughput (triples read a second of wall time, process start included) are printed as JSON.
The rdflib path (the importer before issue 65) runs on the first ``--old-triples`` lines only: it
holds the whole graph in memory (4.3 GB at 2 million triples).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EX, LABEL, COMMENT = "http://example.org/", "http://www.w3.org/2000/01/rdf-schema#label", \
    "http://www.w3.org/2000/01/rdf-schema#comment"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def generate(path: Path, triples: int, entities: int, seed: int = 0) -> int:
    """Write the dump (module docstring); returns its number of lines."""
    rng = np.random.default_rng(seed)
    written = 0
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        chunk = 100_000
        for start in range(0, entities, chunk):
            rows = []
            for i in range(start, min(entities, start + chunk)):
                rows.append(f'<{EX}e{i}> <{LABEL}> "entity number {i}"@en .\n'
                            f"<{EX}e{i}> <{TYPE}> <{EX}Class{i % 200}> .\n")
                written += 2
                if i % 4 == 0:
                    rows.append(f'<{EX}e{i}> <{COMMENT}> "The entity {i}, a thing of class {i % 200}."@en .\n')
                    written += 1
            handle.write("".join(rows))
        edges = max(0, triples - written)
        popularity = 1.0 / np.arange(1, entities + 1) ** 0.7
        popularity /= popularity.sum()
        for start in range(0, edges, 1_000_000):
            n = min(1_000_000, edges - start)
            heads = rng.choice(entities, n, p=popularity)
            tails = rng.choice(entities, n, p=popularity)
            relations = rng.integers(0, 50, n)
            handle.write("".join(f"<{EX}e{h}> <{EX}relation{r}> <{EX}e{t}> .\n"
                                 for h, r, t in zip(heads.tolist(), relations.tolist(), tails.tolist())))
            written += n
    return written


_CHILD = ("import resource, sys\nfrom jaket.cli import main\nstatus = main(sys.argv[1:])\n"
          "print('peak_rss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
          "sys.exit(status)")


def run_import(dump: Path, out: Path, reader: str) -> dict:
    """One import in a fresh process: wall seconds, the child's own peak RSS, the KG's size."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, "kg", "import", "rdf", str(dump), "--out", str(out),
                           "--reader", reader], capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"import failed ({reader}): {done.stderr.strip()[-2000:]}")
    peak_kb = int(done.stderr.strip().splitlines()[-1].split()[-1])
    report = json.loads((out / "build-report.json").read_text(encoding="utf-8"))
    return {"reader": reader, "file_triples": report["rdf_triples"], "wall_seconds": round(wall, 1),
            "build_seconds": report["total_seconds"], "triples_per_second": round(report["rdf_triples"] / wall),
            "peak_rss_mb": round(peak_kb / 1024), "entities": report["entities"], "kg_triples": report["triples"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=10_000_000)
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--old-triples", type=int, default=1_000_000, help="lines given to the rdflib path (0: skip)")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bench-rdf-import")
    parser.add_argument("--keep", action="store_true", help="keep the imported KG folders")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    dump = args.work / f"dump-{args.triples}-{args.entities}.nt"
    if not dump.exists():
        began = time.perf_counter()
        partial = dump.with_suffix(".partial")
        generate(partial, args.triples, args.entities)
        partial.replace(dump)
        print(f"generated {dump} in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    results = {"cpu": platform.processor() or platform.machine(), "dump": str(dump),
               "dump_bytes": dump.stat().st_size, "runs": []}
    results["runs"].append(run_import(dump, args.work / "kg-stream", "stream"))
    if args.old_triples:
        head = args.work / f"head-{args.old_triples}.nt"
        if not head.exists():
            with open(dump, encoding="utf-8") as source, open(head, "w", encoding="utf-8") as target:
                for k, line in enumerate(source):
                    if k >= args.old_triples:
                        break
                    target.write(line)
        results["runs"].append(run_import(head, args.work / "kg-stream-head", "stream"))
        results["runs"].append(run_import(head, args.work / "kg-rdflib-head", "rdflib"))
    if not args.keep:
        for name in ("kg-stream", "kg-stream-head", "kg-rdflib-head"):
            shutil.rmtree(args.work / name, ignore_errors=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
