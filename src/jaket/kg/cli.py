"""``jaket kg ...``: inspect and validate KG directories.

``jaket kg stats DIR [--json]`` and ``jaket kg validate DIR`` live here; ``kg build`` and
``kg import`` are added by :mod:`jaket.kg.sources.cli` when it is installed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)


def kg_statistics(directory) -> dict:
    """Sizes and degree statistics of a KG directory (its corpus too, when present)."""
    from jaket.kg.io import CORPUS, load_corpus, load_kg

    directory = Path(directory)
    kg = load_kg(directory)
    degree = kg.degree()
    stats: dict = {
        "path": str(directory),
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": kg.num_categories,
        "entities_with_category": int((kg.entity_category >= 0).sum()),
        "isolated_entities": int((degree == 0).sum()),
        "degree": {
            "min": int(degree.min()) if len(degree) else 0,
            "median": float(np.median(degree)) if len(degree) else 0.0,
            "mean": float(degree.mean()) if len(degree) else 0.0,
            "max": int(degree.max()) if len(degree) else 0,
        },
        "corpus_texts": 0,
        "corpus_mentions": 0,
    }
    if (directory / CORPUS).is_file():
        corpus = load_corpus(directory, kg)
        stats["corpus_texts"] = len(corpus)
        stats["corpus_mentions"] = corpus.num_mentions
    return stats


def _format_stats(stats: dict) -> str:
    d = stats["degree"]
    rows = [
        ("entities", f"{stats['entities']:,}"),
        ("relations", f"{stats['relations']:,}"),
        ("triples", f"{stats['triples']:,}"),
        ("categories", f"{stats['categories']:,} ({stats['entities_with_category']:,} entities "
                       f"have one)"),
        ("corpus texts", f"{stats['corpus_texts']:,}"),
        ("corpus mentions", f"{stats['corpus_mentions']:,}"),
        ("degree", f"min {d['min']}, median {d['median']:g}, mean {d['mean']:.2f}, max {d['max']}"),
        ("isolated entities", f"{stats['isolated_entities']:,}"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join([f"KG {stats['path']}"] + [f"  {k:<{width}}  {v}" for k, v in rows])


def _stats(args: argparse.Namespace) -> int:
    stats = kg_statistics(args.directory)  # a KGFormatError is reported by jaket.cli
    print(json.dumps(stats, indent=2) if args.json else _format_stats(stats))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from jaket.kg.io import validate_kg_dir

    problems = validate_kg_dir(args.directory)
    for problem in problems:
        print(problem)
    errors = sum(p.is_error for p in problems)
    warnings = len(problems) - errors
    verdict = "invalid" if errors else "valid"
    print(f"{args.directory}: {verdict} ({errors} error(s), {warnings} warning(s))",
          file=sys.stderr)
    return 1 if errors else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    kg = subparsers.add_parser("kg", help="build, import, inspect and validate knowledge graphs")
    commands = kg.add_subparsers(dest="kg_command", metavar="KG_COMMAND", required=True)

    stats = commands.add_parser("stats", help="sizes, categories, corpus and degree statistics")
    stats.add_argument("directory", metavar="DIR", help="a KG directory")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=_stats)

    validate = commands.add_parser("validate", help="list every problem as path:line: message "
                                                    "(exit status 1 when there is an error)")
    validate.add_argument("directory", metavar="DIR", help="a KG directory")
    validate.set_defaults(func=_validate)

    try:
        sources = importlib.import_module("jaket.kg.sources.cli")
    except ImportError as error:
        if getattr(error, "name", None) != "jaket.kg.sources.cli":
            logger.warning("kg build/import unavailable: %s", error)
        return
    sources.register(commands)
