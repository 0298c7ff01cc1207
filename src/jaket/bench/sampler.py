"""Neighbour sampling speed (10x10 fan-out from 1,024 seeds) and compiled-KG load time / memory.

Sampled edges per second of :func:`jaket.kg.sampling.sample_neighbors` against a plain per-node
Python loop doing the same sampling (median of several repeats), on a KG directory (``--kg``), the
embedded full WordNet (``--wordnet``) or a synthetic power-law KG; with ``--load-entities N``, also
the time and peak memory of reloading a compiled synthetic KG of N entities and 5N triples in a
fresh process (kept in ``--load-dir`` / ``--cache-dir`` when given, so later runs reuse it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from jaket.errors import UsageError
from jaket.flags import positive_int
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import CACHE_DIR, load_kg, save_kg
from jaket.kg.sampling import sample_neighbors
from jaket.kg.sources.wordnet import full_wordnet_kg
from jaket.kg.toy import synthetic_kg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--kg", metavar="DIR", help="a KG directory (default: a synthetic KG)")
    source.add_argument("--wordnet", action="store_true",
                        help="the embedded full WordNet 3.0 (jaket.kg.sources.wordnet)")
    parser.add_argument("--entities", type=int, default=117_659,
                        help="entities of the synthetic KG (default: as many as WordNet synsets)")
    parser.add_argument("--triples-per-entity", type=int, default=10,
                        help="triples per entity of the synthetic KG")
    parser.add_argument("--triples", type=int, default=None, metavar="T",
                        help="triples of the synthetic KG (overrides --triples-per-entity)")
    parser.add_argument("--seeds", type=positive_int, default=1024, help="seed entities per sample")
    parser.add_argument("--fanouts", default="10,10", help="fan-out per hop, comma-separated")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats (median reported)")
    parser.add_argument("--loop-repeats", type=int, default=3, help="timed repeats of the Python loop")
    parser.add_argument("--load-entities", type=int, default=None, metavar="N",
                        help="also time reloading a compiled synthetic KG of N entities")
    parser.add_argument("--load-triples", type=int, default=None, metavar="T",
                        help="triples of that KG (default: 5N)")
    parser.add_argument("--load-dir", "--cache-dir", dest="load_dir", metavar="DIR",
                        help="where to write that KG (default: a temporary directory)")
    parser.add_argument("--random-seed", type=int, default=0)


def python_loop_sample(kg: KnowledgeGraph, seeds: np.ndarray, fanouts, generator: np.random.Generator):
    """The baseline: the same k-hop fixed fan-out sampling, one node at a time in Python."""
    adjacency = kg.adjacency
    indptr, neighbors = adjacency.indptr, adjacency.neighbors
    local: dict[int, int] = {}
    for s in seeds.tolist():
        local.setdefault(s, len(local))
    frontier = list(local)
    sources, targets, positions = [], [], []
    for fanout in fanouts:
        reached = []
        for v in frontier:
            start, end = int(indptr[v]), int(indptr[v + 1])
            degree = end - start
            if degree <= fanout:
                picks = range(start, end)
            else:
                picks = (start + generator.choice(degree, fanout, replace=False)).tolist()
            for position in picks:
                u = int(neighbors[position])
                if u not in local:
                    local[u] = len(local)
                    reached.append(u)
                sources.append(local[u])
                targets.append(local[v])
                positions.append(position)
        frontier = reached
    return len(positions), len(local)


def _median_rate(function, repeats: int) -> tuple[float, float, int]:
    rates, seconds, edges = [], [], 0
    for r in range(repeats):
        start = time.perf_counter()
        edges = function(r)
        elapsed = time.perf_counter() - start
        seconds.append(elapsed)
        rates.append(edges / elapsed)
    return statistics.median(rates), statistics.median(seconds), edges


_LOAD_PROBE = """
import json, resource, sys, time

def peak_rss_mb():
    # VmHWM is this process's own high-water mark; ru_maxrss would also count the parent's
    # memory at fork time (Linux keeps it across exec)
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

start = time.perf_counter()
import jaket.kg.io as io
imported = time.perf_counter()
baseline = peak_rss_mb()
kg = io.load_kg(sys.argv[1])
loaded = time.perf_counter()
_ = kg.adjacency.indptr[-1], kg.entity_ids[len(kg.entity_ids) - 1]
print(json.dumps({"import_seconds": imported - start, "load_seconds": loaded - imported,
                  "entities": kg.num_entities, "triples": kg.num_triples,
                  "rss_after_import_mb": baseline, "peak_rss_mb": peak_rss_mb()}))
"""


def measure_load(directory: Path) -> dict:
    """Reload a compiled KG in a fresh process: seconds and peak resident memory."""
    result = subprocess.run([sys.executable, "-c", _LOAD_PROBE, str(directory)], check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _load_figures(args: argparse.Namespace) -> dict:
    n = args.load_entities
    t = args.load_triples if args.load_triples is not None else 5 * n
    holder = None
    if args.load_dir:
        directory = Path(args.load_dir)
    else:
        holder = tempfile.TemporaryDirectory(prefix="jaket-bench-load-")
        directory = Path(holder.name)
    try:
        figures: dict = {}
        if not (directory / CACHE_DIR / "manifest.json").is_file():
            start = time.perf_counter()
            kg = synthetic_kg(n, t, seed=args.random_seed)
            save_kg(kg, directory)
            del kg
            figures["load_write_seconds"] = time.perf_counter() - start
            start = time.perf_counter()
            load_kg(directory)  # parse + validate + compile the cache
            figures["load_compile_seconds"] = time.perf_counter() - start
        probe = measure_load(directory)
        figures.update({
            "load_entities": probe["entities"], "load_triples": probe["triples"],
            "load_cached_seconds": probe["load_seconds"],
            "load_peak_rss_mb": probe["peak_rss_mb"],
            "load_rss_after_import_mb": probe["rss_after_import_mb"],
        })
        return figures
    finally:
        if holder is not None:
            holder.cleanup()


def run(args: argparse.Namespace) -> dict:
    if args.load_dir and Path(args.load_dir).exists() and not Path(args.load_dir).is_dir():
        raise UsageError(f"--load-dir {args.load_dir}: is a file; name the folder to write the KG to")
    fanouts = tuple(int(f) for f in str(args.fanouts).split(","))
    if args.kg:
        kg = load_kg(args.kg)
        source = str(args.kg)
    elif args.wordnet:
        kg = full_wordnet_kg()
        source = "WordNet 3.0 (embedded, all synsets)"
    else:
        triples = args.triples if args.triples is not None else args.entities * args.triples_per_entity
        kg = synthetic_kg(args.entities, triples, seed=args.random_seed)
        source = f"synthetic power-law KG ({args.entities} entities, {triples} triples)"
    kg.adjacency  # built once, outside the timing
    rng = np.random.default_rng(args.random_seed)
    seed_sets = [rng.integers(0, kg.num_entities, args.seeds) for _ in range(max(args.repeats,
                                                                                 args.loop_repeats))]

    def vectorised(r: int) -> int:
        return sample_neighbors(kg, seed_sets[r], fanouts, np.random.default_rng(r)).num_edges

    def loop(r: int) -> int:
        return python_loop_sample(kg, seed_sets[r], fanouts, np.random.default_rng(r))[0]

    vectorised(0)  # warm-up
    rate, seconds, edges = _median_rate(vectorised, args.repeats)
    loop_rate, loop_seconds, loop_edges = _median_rate(loop, args.loop_repeats)
    figures = {
        "kg": source, "entities": kg.num_entities, "triples": kg.num_triples,
        "seeds": args.seeds, "fanouts": "x".join(map(str, fanouts)),
        "sampled_edges": edges, "sample_seconds": round(seconds, 5),
        "edges_per_second": round(rate), "python_loop_edges_per_second": round(loop_rate),
        "python_loop_seconds": round(loop_seconds, 4),
        "speedup": round(rate / loop_rate, 1),
    }
    if args.load_entities:
        figures.update({k: round(v, 3) if isinstance(v, float) else v
                        for k, v in _load_figures(args).items()})
    return figures
