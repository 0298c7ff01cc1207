"""The command line of :mod:`jaket.kg`: ``jaket kg ...``.

``jaket kg stats DIR [--json]`` and ``jaket kg validate DIR [--json]`` live here; ``kg build`` and
``kg import`` are added by :mod:`jaket.kg.sources.cli` when it is installed. ``jaket link`` (the
gazetteer of :mod:`jaket.kg.linking`, and a pre-trained model's ranking with ``--model``) is
:mod:`jaket.tasks.link_cli`'s.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

import numpy as np

from jaket.kg.io import CORPUS, load_corpus, load_kg, validate_kg_dir
from jaket.output import human_stream, print_json

logger = logging.getLogger(__name__)


def kg_statistics(directory) -> dict:
    """Sizes and degree statistics of a KG directory (its corpus too, when present)."""
    directory = Path(directory)
    kg = load_kg(directory)
    degree = kg.degree()
    stats: dict = {
        "path": str(directory),
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "repeated_triples": int(kg.repeated_triples().sum()),  # given again; pre-training counts each once
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
    if (directory / CORPUS).exists():  # a folder in its place is an error, as for the loaders
        corpus = load_corpus(directory, kg)
        stats["corpus_texts"] = len(corpus)
        stats["corpus_mentions"] = corpus.num_mentions
    return stats


def _format_stats(stats: dict) -> str:
    d = stats["degree"]
    rows = [
        ("entities", f"{stats['entities']:,}"),
        ("relations", f"{stats['relations']:,}"),
        ("triples", f"{stats['triples']:,}" + (f" ({stats['repeated_triples']:,} given again: pre-training "
                                               f"counts each once)" if stats["repeated_triples"] else "")),
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
    if args.json:
        print_json(stats)
    else:
        print(_format_stats(stats))
    return 0


def validation_report(directory, problems) -> dict:
    """``jaket kg validate --json``: every problem as ``{"path", "line", "severity", "message"}``
    (``line`` null for a whole file) and the counts."""
    errors = sum(p.is_error for p in problems)
    return {"path": str(directory), "valid": not errors, "errors": errors,
            "warnings": len(problems) - errors,
            "problems": [{"path": p.path, "line": p.line, "severity": p.severity, "message": p.message}
                         for p in problems]}


def _validate(args: argparse.Namespace) -> int:
    problems = validate_kg_dir(args.directory)
    report = validation_report(args.directory, problems)
    for problem in problems:
        print(problem, file=human_stream(args.json))
    verdict = "valid" if report["valid"] else "invalid"
    print(f"{args.directory}: {verdict} ({report['errors']} error(s), {report['warnings']} warning(s))",
          file=sys.stderr)
    if args.json:
        print_json(report)
    return 0 if report["valid"] else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``jaket kg`` (its ``build`` and ``import`` from :mod:`jaket.kg.sources.cli`)."""
    kg = subparsers.add_parser("kg", help="build, import, inspect and validate knowledge graphs")
    commands = kg.add_subparsers(dest="kg_command", metavar="KG_COMMAND", required=True)

    stats = commands.add_parser("stats", help="sizes, categories, corpus and degree statistics")
    stats.add_argument("directory", metavar="DIR", help="a KG directory")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=_stats)

    validate = commands.add_parser("validate", help="list every problem as path:line: message "
                                                    "(exit status 1 when there is an error)")
    validate.add_argument("directory", metavar="DIR", help="a KG directory")
    validate.add_argument("--json", action="store_true",
                          help="print the problems as JSON ({path, line, severity, message} each) and "
                               "the counts")
    validate.set_defaults(func=_validate)

    try:
        sources = importlib.import_module("jaket.kg.sources.cli")
    except ImportError as error:
        if getattr(error, "name", None) != "jaket.kg.sources.cli":
            logger.warning("kg build/import unavailable: %s", error)
        return
    sources.register(commands)
