"""The command line of :mod:`jaket.kg`: ``jaket kg ...`` and ``jaket link``.

``jaket kg stats DIR [--json]`` and ``jaket kg validate DIR [--json]`` live here; ``kg build`` and
``kg import`` are added by :mod:`jaket.kg.sources.cli` when it is installed. ``jaket link``
finds the KG's entity names in plain texts (:mod:`jaket.kg.linking`) and writes a corpus.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

from jaket.errors import UsageError
from jaket.kg.io import CORPUS, load_corpus, load_kg, validate_kg_dir
from jaket.kg.linking import EntityLinker, LinkStats, read_texts, write_corpus
from jaket.output import human_stream, print_json, refuse_same_file

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


# jaket link ------------------------------------------------------------------------------------------
def _link_command(args: argparse.Namespace) -> int:
    if Path(args.out).is_dir():
        raise UsageError(f"--out {args.out}: is a folder; name the corpus file to write, e.g. "
                         f"{Path(args.out) / 'corpus.jsonl'}")
    refuse_same_file(args.out, [args.text])
    kg = load_kg(args.kg)  # errors (KGFormatError: path:line) are reported by jaket.cli
    inputs = read_texts(args.text)
    linker = EntityLinker.from_kg(kg, min_length=args.min_length, case_sensitive=args.case_sensitive,
                                  max_ambiguity=args.max_ambiguity,
                                  inflections=not args.exact_forms,
                                  context_window=args.context_window, short_forms=args.short_forms)
    stats = LinkStats()
    corpus = linker.link_texts(inputs.texts, stats, progress=True)
    out = write_corpus(corpus, args.out, kg)
    summary = {"kg": str(args.kg), "input": str(args.text), "output": str(out),
               **asdict(stats), "blank_lines_skipped": inputs.blank_lines,
               "gazetteer": asdict(linker.gazetteer_stats)}
    print_json(summary)
    print(f"{out}: {stats.mentions:,} mentions in {stats.linked_texts:,} of {stats.texts:,} texts "
          f"({stats.unlinked_texts:,} without a mention, {stats.ambiguous_resolved:,} ambiguous "
          f"mentions resolved, {stats.too_ambiguous:,} too ambiguous to link, "
          f"{inputs.blank_lines:,} blank lines skipped)", file=sys.stderr)
    return 0


def _forms(value: str) -> tuple[str, ...]:
    """``--short-forms Go,C,JS``: the names / aliases, spaces around each removed."""
    return tuple(form.strip() for form in value.split(",") if form.strip())


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _register_link(subparsers: argparse._SubParsersAction) -> None:
    """Add ``jaket link``."""
    link = subparsers.add_parser(
        "link", help="link entity mentions in texts with the KG's names and aliases",
        description="Find the KG's entity names and aliases in texts (longest match first, "
                    "disjoint spans, word boundaries; see jaket.kg.linking) and write the corpus "
                    "format (JSONL). A JSON summary goes to stdout.")
    link.add_argument("--kg", required=True, metavar="DIR", help="a KG directory")
    link.add_argument("--text", required=True, metavar="FILE",
                      help="plain text, one text per line, or .jsonl with a 'text' field")
    link.add_argument("--out", required=True, metavar="FILE", help="the corpus JSONL to write")
    link.add_argument("--min-length", "--min-name-length", dest="min_length", type=int, default=3, metavar="N",
                      help="do not link names/aliases shorter than N characters (default 3; those left "
                           "out are listed in the summary and a warning)")
    link.add_argument("--short-forms", type=_forms, default=(), metavar="LIST",
                      help="comma list of names/aliases to link although shorter than --min-length, "
                           "e.g. Go,C,JS")
    link.add_argument("--case-sensitive", action="store_true",
                      help="match letter case exactly (default: case-insensitive)")
    link.add_argument("--max-ambiguity", type=_positive, default=None, metavar="K",
                      help="leave surface forms naming more than K entities unlinked "
                           "(default: no limit)")
    link.add_argument("--exact-forms", action="store_true",
                      help="no plural normalisation of a form's last word")
    link.add_argument("--context-window", type=int, default=50, metavar="TOKENS",
                      help="tokens on each side of a mention used to disambiguate it (default 50)")
    link.set_defaults(func=_link_command)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``jaket kg`` (its ``build`` and ``import`` from :mod:`jaket.kg.sources.cli`) and ``jaket link``."""
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
    _register_link(subparsers)

    try:
        sources = importlib.import_module("jaket.kg.sources.cli")
    except ImportError as error:
        if getattr(error, "name", None) != "jaket.kg.sources.cli":
            logger.warning("kg build/import unavailable: %s", error)
        return
    sources.register(commands)
