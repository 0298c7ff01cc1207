"""``jaket kg import wikidata5m`` on a synthetic file set of the Wikidata5M layout.

    python -m benchmarks.wikidata5m_import [--entities 1000000] [--work DIR] [--keep]

Writes (once, kept in ``--work``) ``wikidata5m_entity.txt``, ``wikidata5m_relation.txt``,
``wikidata5m_text.txt`` and the transductive triple files with the release's shape scaled to
``--entities`` (Wikidata5M: 4.8M entities, 822 relations, 21M triples, so about 4.4 triples per
entity; about 85% of the entities with an *instance of* (P31) triple; here descriptions of 20-160
words and 0-4 aliases per entity), then runs the import in a fresh process and measures its wall
time and peak resident memory (``getrusage`` of the child), and then the first load of the
imported directory (``jaket kg stats``, which parses and compiles the cache). Prints JSON.
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
_WORDS = ("river city team album species film village painter politician football player station "
          "novel district church school company museum island mountain language family genus "
          "village located county province founded born known released published written "
          "directed member played moved studied served elected built named largest oldest").split()


def _lines(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for chunk_start in range(0, len(lines), 1 << 16):
            handle.write("".join(lines[chunk_start:chunk_start + (1 << 16)]))


def generate(out: Path, entities: int, seed: int = 0, triples_per_entity: float = 4.4,
             relations: int = 822, classes: int = 2000) -> dict:
    """Write the synthetic file set; returns its sizes."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    ids = [f"Q{i + 1}" for i in range(entities)]
    words = np.asarray(_WORDS, dtype=object)
    alias_counts = rng.integers(0, 5, entities)
    rows = []
    for i, entity in enumerate(ids):
        name = f"{_WORDS[i % len(_WORDS)].title()} {i + 1}"
        aliases = "".join(f"\t{name} {k}" for k in range(int(alias_counts[i])))
        rows.append(f"{entity}\t{name}{aliases}\n")
    _lines(out / "wikidata5m_entity.txt", rows)
    relation_ids = ["P31"] + [f"P{k}" for k in range(32, 32 + relations - 1)]
    _lines(out / "wikidata5m_relation.txt",
           [f"{r}\trelation {r}\t{r} alias\n" if r != "P31" else "P31\tinstance of\tis a\ttype\n"
            for r in relation_ids])
    lengths = rng.integers(20, 161, entities)
    rows = []
    for i, entity in enumerate(ids):
        body = " ".join(words[rng.integers(0, len(words), int(lengths[i]))])
        rows.append(f"{entity}\t{_WORDS[i % len(_WORDS)].title()} {i + 1} is a {body}.\n")
    _lines(out / "wikidata5m_text.txt", rows)
    # triples: power-law heads and tails, one P31 triple for 85% of the entities (tails: the
    # first `classes` entities), the rest over the other relations
    total = int(triples_per_entity * entities)
    typed = np.flatnonzero(rng.random(entities) < 0.85)
    popularity = 1.0 / np.arange(1, entities + 1) ** 0.7
    popularity /= popularity.sum()
    other = total - len(typed)
    heads = np.concatenate([typed, rng.choice(entities, other, p=popularity)])
    tails = np.concatenate([rng.integers(0, classes, len(typed)), rng.choice(entities, other, p=popularity)])
    rels = np.concatenate([np.zeros(len(typed), dtype=np.int64), rng.integers(1, relations, other)])
    order = rng.permutation(total)
    heads, rels, tails = heads[order], rels[order], tails[order]
    held = {"valid": slice(0, 5000), "test": slice(5000, 10000), "train": slice(10000, total)}
    id_array = np.asarray(ids, dtype=object)
    relation_array = np.asarray(relation_ids, dtype=object)
    for split, part in held.items():
        rows = [f"{h}\t{r}\t{t}\n" for h, r, t in zip(id_array[heads[part]], relation_array[rels[part]],
                                                      id_array[tails[part]])]
        _lines(out / f"wikidata5m_transductive_{split}.txt", rows)
    sizes = {p.name: p.stat().st_size for p in sorted(out.glob("wikidata5m_*.txt"))}
    return {"entities": entities, "relations": relations, "triples": total, "typed_entities": int(len(typed)),
            "file_bytes": sizes, "total_bytes": int(sum(sizes.values()))}


def _timed_child(argv: list[str]) -> dict:
    """Run ``argv`` and return its wall seconds and peak resident memory (the child's own)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    began = time.perf_counter()
    pid = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).pid
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - began
    if status != 0:
        raise RuntimeError(f"{' '.join(argv)} failed with status {status}")
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/jaket-wikidata5m-bench"))
    parser.add_argument("--keep", action="store_true", help="keep the imported KG directory")
    args = parser.parse_args(argv)
    source = args.work / f"source-{args.entities}"
    began = time.perf_counter()
    if not (source / "wikidata5m_transductive_train.txt").is_file():
        shutil.rmtree(source, ignore_errors=True)
        generated = generate(source, args.entities)
        (source / "sizes.json").write_text(json.dumps(generated))
    generated = json.loads((source / "sizes.json").read_text())
    generate_seconds = time.perf_counter() - began
    target = args.work / f"kg-{args.entities}"
    shutil.rmtree(target, ignore_errors=True)
    python = sys.executable
    imported = _timed_child([python, "-m", "jaket", "kg", "import", "wikidata5m", str(source), "--out", str(target)])
    report = json.loads((target / "build-report.json").read_text())
    first_load = _timed_child([python, "-m", "jaket", "kg", "stats", str(target), "--json"])
    cached_load = _timed_child([python, "-m", "jaket", "kg", "stats", str(target), "--json"])
    result = {"source": generated, "generate_seconds": round(generate_seconds, 1), "import": imported,
              "import_stage_seconds": report["seconds"], "imported": {
                  k: report[k] for k in ("entities", "relations", "triples", "categories", "entities_with_category",
                                         "category_triples_removed", "splits", "descriptions_truncated")},
              "first_load_parse_and_compile": first_load, "cached_load": cached_load,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "load_average": os.getloadavg()}}
    if not args.keep:
        shutil.rmtree(target, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
