"""``jaket link --model --scorer text+kg`` end to end: texts per second, from an empty cache and warm.

The command (:mod:`jaket.tasks.link_cli`) runs in this process as a user runs it: ``jaket link --kg
KG --texts T --out OUT --model M --scorer text+kg --precision P``, on the first ``--limit`` texts of
``--texts`` (one a line, or JSONL, read as ``jaket link`` reads them; default: a seeded sample of
the KG's own corpus texts, which are then left out of the usage examples, as the command does). The
KG is ``--kg`` or, by default, the built-in WordNet 3.0 written once to a temporary folder as ``jaket
kg build wordnet`` writes it (its corpus is WordNet's usage examples, which the scorer reads); the
model is ``--model`` (a pre-trained jaket folder) or, by default, the bundled MiniLM saved as a jaket
folder (a fresh knowledge module and heads, which the text+kg scorer does not read: the encoder's
passes are the same). Two runs of the command:

- ``cold``: an empty text-vector cache (``JAKET_CACHE`` a new folder): every candidate's and KG
  neighbour's sense text is encoded;
- ``warm``: the same command again over the filled cache: what ``jaket link`` on new text with the
  same model and KG pays (only the texts' own mentions are read by the encoder).

For each: the command's wall and CPU seconds and texts / s, the linking alone (the summary's stages:
candidates, sense texts, mentions) in texts / s, the stages and the sense texts read and found in the
cache, and the 1-minute load average before and after; and whether both runs wrote the same corpus.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import torch

from jaket.bench.common import apply_threads_and_seed, jaket_cache
from jaket.flags import positive_int
from jaket.kg.io import load_corpus, load_kg, save_kg
from jaket.kg.readers import refuse_empty
from jaket.kg.text_input import read_texts
from jaket.model.config import read_model_config
from jaket.paths import default_model_path
from jaket.tasks import link_cli

#: the stages of the command's summary (``model.seconds``) that are the linking itself
LINKING_STAGES = ("candidates", "sense texts", "mentions")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run (50 texts)")
    parser.add_argument("--texts", default=None, metavar="FILE",
                        help="texts to link, one a line or JSONL (default: a sample of the KG's corpus texts)")
    parser.add_argument("--limit", type=positive_int, default=None, help="texts linked (default 2,000; quick: 50)")
    parser.add_argument("--kg", default=None, metavar="DIR", help="a KG folder (default: the built-in WordNet 3.0)")
    parser.add_argument("--model", default=None, metavar="DIR",
                        help="a pre-trained jaket folder (default: the bundled MiniLM as a jaket folder)")
    parser.add_argument("--precision", choices=["fp32", "bf16", "auto"], default="fp32")
    parser.add_argument("--batch-size", type=int, default=None, help="jaket link's --batch-size (default its own)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads")
    parser.add_argument("--random-seed", type=int, default=0)


def builtin_wordnet(folder: Path) -> Path:
    """The built-in WordNet 3.0 (every synset) with its usage examples as the corpus, written to
    ``folder`` as ``jaket kg build wordnet`` writes it."""
    # the KG sources load the source registry (jaket --help registers this benchmark)
    from jaket.kg.sources.registry import build_source  # --help: the sources

    bundle = build_source("wordnet", max_entities=None, seed=0)
    save_kg(bundle.kg, folder, corpus=bundle.corpus)
    return folder


def bundled_model(folder: Path) -> Path:
    """The bundled MiniLM saved as a jaket folder: the text+kg scorer reads its encoder only."""
    from jaket.model.jaket import JaketConfig, JaketModel  # --help: the model modules

    JaketModel(JaketConfig(encoder=str(default_model_path()))).save_pretrained(folder, save_memory=False)
    return folder


def chosen_texts(path: str | None, kg_dir: Path, limit: int, seed: int) -> list[str]:
    """The first ``limit`` texts of ``path``, or a seeded sample of ``limit`` of the KG's corpus texts."""
    if path is not None:
        return read_texts(path).texts[:limit]
    texts = list(dict.fromkeys(load_corpus(kg_dir, load_kg(kg_dir)).texts))
    if not texts:
        raise ValueError(f"{kg_dir}: the KG has no corpus texts to link; give --texts FILE")
    chosen = np.random.default_rng(seed).choice(len(texts), size=min(limit, len(texts)), replace=False)
    return [texts[i] for i in sorted(chosen)]


def link_once(argv: list[str], cache: Path) -> tuple[dict, float, float]:
    """``jaket link ARGV`` in this process with ``JAKET_CACHE=cache``: its JSON summary, wall and CPU seconds."""
    parser = argparse.ArgumentParser(prog="jaket")
    link_cli.register(parser.add_subparsers())
    args = parser.parse_args(["link", *argv])
    with jaket_cache(cache), redirect_stdout(io.StringIO()) as printed:
        began, cpu = time.perf_counter(), time.process_time()
        status = args.func(args)
        wall, spent = time.perf_counter() - began, time.process_time() - cpu
    if status != 0:
        raise RuntimeError(f"jaket link {' '.join(argv)} exited with status {status}")
    return json.loads(printed.getvalue()), wall, spent


def _run_figures(name: str, summary: dict, wall: float, spent: float, texts: int, load: tuple[float, float]) -> dict:
    model = summary["model"]
    stages = model["seconds"]
    linking = sum(stages.get(stage, 0.0) for stage in LINKING_STAGES)
    return {f"{name}_seconds": wall, f"{name}_cpu_seconds": spent, f"{name}_texts_per_second": texts / wall,
            f"{name}_linking_seconds": linking,
            f"{name}_linking_texts_per_second": texts / linking if linking else None,
            f"{name}_stages": stages, f"{name}_sense_texts_read": model["sense_texts_read"],
            f"{name}_sense_texts_cached": model["sense_texts_cached"],
            f"{name}_load_average": {"before": load[0], "after": load[1]}}


def run(args: argparse.Namespace) -> dict:
    apply_threads_and_seed(args)
    limit = args.limit or (50 if args.quick else 2000)
    # the user's inputs first, named as given, before WordNet or a model is built or loaded (issue 69)
    given_texts = None
    if args.texts is not None:
        refuse_empty(Path(args.texts), "--texts", "link")
        given_texts = read_texts(args.texts).texts[:limit]
    if args.kg:
        load_kg(args.kg)
    if args.model:
        read_model_config(args.model)
    with tempfile.TemporaryDirectory(prefix="jaket-bench-link-") as scratch:
        scratch = Path(scratch)
        kg_dir = Path(args.kg) if args.kg else builtin_wordnet(scratch / "wordnet")
        model_dir = Path(args.model) if args.model else bundled_model(scratch / "model")
        texts = given_texts if given_texts is not None else chosen_texts(None, kg_dir, limit, args.random_seed)
        given = scratch / "texts.jsonl"
        given.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
        figures: dict = {"texts": len(texts), "kg": str(args.kg or "built-in WordNet 3.0"),
                         "model": str(args.model or "bundled MiniLM (as a jaket folder)"),
                         "precision": args.precision, "threads": torch.get_num_threads()}
        written = {}
        for name in ("cold", "warm"):
            out = scratch / f"{name}.jsonl"
            argv = ["--kg", str(kg_dir), "--texts", str(given), "--out", str(out), "--model", str(model_dir),
                    "--scorer", "text+kg", "--precision", args.precision, "--device", "cpu",
                    *(["--batch-size", str(args.batch_size)] if args.batch_size else [])]
            load = os.getloadavg()[0]
            summary, wall, spent = link_once(argv, scratch / "cache")
            figures.update(_run_figures(name, summary, wall, spent, len(texts), (load, os.getloadavg()[0])))
            figures.setdefault("mentions", summary["mentions"])
            figures.setdefault("ranked_mentions", summary["model"]["scored"])
            written[name] = out.read_bytes()
        figures["same_corpus_cold_and_warm"] = written["cold"] == written["warm"]
        figures["speedup_warm_over_cold"] = figures["cold_seconds"] / figures["warm_seconds"]
    return figures
