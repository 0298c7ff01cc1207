"""The command line of :mod:`jaket.kg`: ``jaket kg ...``.

``jaket kg stats DIR [--json]``, ``jaket kg validate DIR [--json]``, and for a KG without text
``jaket kg describe DIR --out DIR2`` (descriptions made from the triples) and ``jaket kg corpus DIR
--out FILE`` (a corpus verbalised from the triples, :mod:`jaket.kg.verbalize`) live here; ``kg build`` and
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

from jaket.atomic import atomic_directory, json_text, write_text
from jaket.flags import positive_int
from jaket.kg.io import CORPUS, load_corpus, load_kg, save_corpus, save_kg, validate_kg_dir
from jaket.kg.verbalize import corpus_from_kg, describe_entities, read_phrasings
from jaket.kg.windows import check_windows
from jaket.output import check_output_file, check_output_folder, human_stream, print_json

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
    windows = None
    if args.window and not any(p.is_error for p in problems):
        found, windows = check_windows(args.directory, args.encoder, args.window)
        problems += found
    report = validation_report(args.directory, problems)
    if windows is not None:
        report["description_windows"] = windows
    for problem in problems:
        print(problem, file=human_stream(args.json))
    verdict = "valid" if report["valid"] else "invalid"
    print(f"{args.directory}: {verdict} ({report['errors']} error(s), {report['warnings']} warning(s))",
          file=sys.stderr)
    if args.json:
        print_json(report)
    return 0 if report["valid"] else 1


def _describe(args: argparse.Namespace) -> int:
    check_output_folder(args.out, args.overwrite)
    kg = load_kg(args.directory)
    described, report = describe_entities(kg, read_phrasings(args.directory, kg, args.templates), max_words=args.max_words,
                                          min_words=args.min_words)
    corpus = load_corpus(args.directory, kg) if (Path(args.directory) / CORPUS).is_file() else None
    with atomic_directory(args.out) as folder:
        save_kg(described, folder, corpus=corpus)
        # the user's relations file as written: its optional template fields phrase the corpus too
        write_text(folder / "relations.jsonl", (Path(args.directory) / "relations.jsonl").read_text(encoding="utf-8"))
        write_text(folder / "describe-report.json", json_text({"source": str(args.directory), **report}) + "\n")
    print(f"{args.out}: {report['descriptions_made_for_entities_without_one']:,} descriptions made, "
          f"{report['descriptions_completed_below_min_words']:,} completed, "
          f"{report['entities_without_description_or_triple']:,} entities with neither a description nor a "
          f"triple left as they were")
    return 0


def _corpus(args: argparse.Namespace) -> int:
    check_output_file(args.out, args.overwrite, inputs=[args.directory],
                      replaceable=[Path(args.directory) / CORPUS])
    kg = load_kg(args.directory)
    corpus, report = corpus_from_kg(kg, read_phrasings(args.directory, kg, args.templates), facts_per_text=args.facts_per_text,
                                    seed=args.seed, max_texts=args.max_texts, both_sides=args.both_sides)
    save_corpus(corpus, args.out, kg)
    print(f"{args.out}: {report['texts']:,} texts verbalised from {report['triples_said']:,} of "
          f"{report['triples']:,} triples, {report['mentions']:,} mentions linked by construction")
    if args.json:
        print_json({"out": str(args.out), **report})
    return 0


def _templates_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--templates", type=Path, default=None, metavar="FILE",
                        help="JSONL of {\"id\", \"template\": \"{head} was directed by {tail}\", \"inverse_template\": "
                             "\"{tail} directed {head}\"} per relation (default: relations.jsonl's own fields, else "
                             "the relation's name)")


def _register_text_from_kg(commands) -> None:
    """``jaket kg describe`` and ``jaket kg corpus``: text for a KG that has none."""
    describe = commands.add_parser("describe", help="a copy of a KG folder whose entities without a description "
                                                    "get one made from their triples")
    describe.add_argument("directory", metavar="DIR", help="a KG directory")
    describe.add_argument("--out", type=Path, required=True, metavar="DIR", help="the KG folder to write")
    describe.add_argument("--max-words", type=positive_int, default=40, metavar="N",
                          help="words of a made description, name included (default 40)")
    describe.add_argument("--min-words", type=int, default=0, metavar="N",
                          help="also complete descriptions shorter than N words (default 0: only missing ones)")
    describe.add_argument("--overwrite", action="store_true", help="replace a non-empty --out as a whole")
    _templates_argument(describe)
    describe.set_defaults(func=_describe)
    corpus = commands.add_parser("corpus", help="a pre-training corpus verbalised from a KG's triples, mentions "
                                                "linked by construction")
    corpus.add_argument("directory", metavar="DIR", help="a KG directory")
    corpus.add_argument("--out", type=Path, required=True, metavar="FILE",
                        help="the corpus file to write (DIR/corpus.jsonl: pre-training reads it)")
    corpus.add_argument("--facts-per-text", type=positive_int, default=3, metavar="K",
                        help="facts of one entity said in one text (default 3)")
    corpus.add_argument("--max-texts", type=positive_int, default=None, metavar="N",
                        help="keep N texts of the shuffled whole (default: every triple said once)")
    corpus.add_argument("--both-sides", action="store_true",
                        help="say every triple from its tail too, by the relation's inverse phrase (\"William "
                             "Dieterle directed Kismet\"): twice the texts")
    corpus.add_argument("--seed", type=int, default=0, metavar="N", help="the order of texts and facts (default 0)")
    corpus.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    corpus.add_argument("--json", action="store_true", help="print the counts as JSON too")
    _templates_argument(corpus)
    corpus.set_defaults(func=_corpus)


def _window(text: str) -> int:
    value = int(text)
    if value != 0 and value < 4:
        raise argparse.ArgumentTypeError(f"a window holds at least 4 tokens (0 skips the check), got {text}")
    return value


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
    validate.add_argument("--window", type=_window, default=16, metavar="N",
                          help="warn when distinct entities' first N description tokens (the window pre-training "
                               "reads, 16 by default) are the same; 0: skip this check")
    validate.add_argument("--encoder", default=None, metavar="PATH",
                          help="the tokenizer of this encoder or jaket model folder (default: the default encoder)")
    validate.set_defaults(func=_validate)

    _register_text_from_kg(commands)
    try:
        sources = importlib.import_module("jaket.kg.sources.cli")
    except ImportError as error:
        if getattr(error, "name", None) != "jaket.kg.sources.cli":
            logger.warning("kg build/import unavailable: %s", error)
        return
    sources.register(commands)
