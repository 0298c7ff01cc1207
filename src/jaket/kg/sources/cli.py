"""``jaket kg build ...`` and ``jaket kg import ...``: write a KG directory from a source.

::

    jaket kg build wordnet --out DIR [--max-entities N] [--roots dog.n.01,cat.n.01] [--data-seed S]
    jaket kg build synthetic --entities N --triples T --out DIR [--relations P] [--seed S]
    jaket kg import wn18rr SRC_DIR --out DIR
    jaket kg import rdf FILE --out DIR [--format turtle]
    jaket kg import owl FILE --out DIR [--lang en] [--category-depth N] [--category-root IRI] [--keep-axioms]
    jaket kg import obo FILE --out DIR [--category-depth N] [--category-root ID]
    jaket kg import pykeen {umls,nations,kinships} --out DIR
    jaket kg import wikidata5m SRC_DIR --out DIR [--setting transductive|inductive|all]

Each builds its source through the registry (:func:`jaket.kg.sources.registry.build_source`) and
writes the directory format (:func:`jaket.kg.io.save_kg`; WordNet adds ``corpus.jsonl``, WN18RR,
PyKEEN and Wikidata5M add their ``valid.txt`` / ``test.txt`` evaluation splits), prints a short
summary and writes the full report as ``DIR/build-report.json``. Bad input is reported on
stderr as ``path:line: message`` with exit status 1 (``jaket -v`` adds the traceback).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from jaket.atomic import atomic_directory, json_text, write_lines, write_text
from jaket.flags import deprecated_alias, positive_int
from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import save_kg
from jaket.kg.sources.registry import SourceBundle, build_source
from jaket.output import check_output_folder

logger = logging.getLogger(__name__)

REPORT = "build-report.json"


def _stages(total: int, description: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit="stage", disable=None, file=sys.stderr)


def _finish(out: Path, bundle: SourceBundle, began: float, progress) -> int:
    """Write ``bundle`` to ``out``: the KG (and corpus), its splits and ``build-report.json``, all
    into a new folder that then replaces ``out`` in one rename (no file of an earlier KG survives;
    a failure leaves ``out`` as it was)."""
    kg, corpus = bundle.kg, bundle.corpus
    if kg.num_entities == 0:  # named by the path the source was read from (its file or folder)
        where = next((bundle.report[key] for key in ("file", "folder", "dir", "path") if bundle.report.get(key)),
                     bundle.report.get("source", "the source"))
        raise KGFormatError([Problem(str(where), None, f"no entity found, nothing to import (an empty or "
                                                       f"unreadable {bundle.report.get('source', '')} source?)")])
    progress.set_postfix_str("writing")
    report = {**bundle.report, "out": str(out)}
    with atomic_directory(out) as folder:
        save_kg(kg, folder, corpus=corpus)
        _write_splits(folder, kg, bundle.splits)
        report["total_seconds"] = round(time.perf_counter() - began, 2)
        write_text(folder / REPORT, json_text(report, ensure_ascii=False) + "\n")
    progress.update(1)
    progress.close()
    parts = [f"{kg.num_entities:,} entities", f"{kg.num_relations:,} relations",
             f"{kg.num_triples:,} triples", f"{kg.num_categories:,} categories"]
    if corpus is not None:
        parts.append(f"{len(corpus):,} corpus texts with {corpus.num_mentions:,} mentions")
    print(f"{out}: {', '.join(parts)} ({report['total_seconds']:.1f} s)")
    for key, label in (("examples_without_mention", "usage examples without a lemma form, left out"),
                       ("unresolved", "entities not found in WordNet"),
                       ("ambiguous_conflated", "WN18RR entities standing for several synsets"),
                       ("literal_triples_ignored", "literal-valued triples ignored"),
                       ("blank_node_triples_ignored", "blank-node triples ignored"),
                       ("entities_without_description", "entities without a description (their name is used; "
                                                        "`jaket kg describe` makes them from the triples)"),
                       ("descriptions_of_unknown_entities_skipped", "descriptions of entities not in the "
                                                                    "entity file, skipped"),
                       ("descriptions_truncated", "descriptions cut at --max-description-chars"),
                       ("category_triples_removed", "category triples removed from the KG")):
        if report.get(key):
            print(f"  {report[key]:,} {label}")
    for split, count in report.get("split_triples_skipped", {}).items():
        if count:
            print(f"  {count:,} {split} triples naming an entity or relation not in the KG, left out")
    _print_account(report)
    print(f"  report: {out / REPORT}")
    return 0


def _print_account(report: dict) -> None:
    """An ontology's account in one line (what was dropped, repaired or kept by rule) and its imports."""
    account = report.get("account")
    if account:
        parts = sorted(account.items(), key=lambda item: -item[1]["count"])
        print("  account: " + "; ".join(f"{entry['count']:,} {kind.replace('_', ' ')}" for kind, entry in parts)
              + " (examples in the report)")
    imports = report.get("imports") or {}
    if imports.get("not_followed"):
        print(f"  {len(imports['not_followed'])} import(s) not followed (never fetched; --imports DIR reads local "
              f"copies): {', '.join(imports['not_followed'][:3])}")
    if imports.get("read_from_local_files"):
        print(f"  {len(imports['read_from_local_files'])} import(s) read from local files")


def _write_splits(out: Path, kg: KnowledgeGraph, splits: dict[str, np.ndarray]) -> None:
    """Each evaluation split as ``NAME.txt`` (``head<TAB>relation<TAB>tail`` ids) beside the KG."""
    entity_ids, relation_ids = kg.entity_ids, kg.relation_ids
    for name, rows in splits.items():
        write_lines(out / f"{name}.txt", (f"{entity_ids[h]}\t{relation_ids[r]}\t{entity_ids[t]}"
                                          for h, r, t in np.asarray(rows).tolist()))


def _build(out: Path, title: str, first_stage: str, source: str, overwrite: bool = False, **options) -> int:
    """Build ``source`` with ``options`` under a two-stage progress bar and write it to ``out``."""
    check_output_folder(out, overwrite)  # replaced as a whole by _finish
    began = time.perf_counter()
    with _stages(2, title) as progress:
        progress.set_postfix_str(first_stage)
        bundle = build_source(source, **options)
        progress.update(1)
        return _finish(out, bundle, began, progress)


# --------------------------------------------------------------------------- commands


def _build_wordnet(args: argparse.Namespace) -> int:
    return _build(args.out, "WordNet 3.0", "reading", "wordnet", overwrite=args.overwrite,
                  max_entities=args.max_entities,
                  roots=args.roots, seed=args.data_seed)


def _build_synthetic(args: argparse.Namespace) -> int:
    return _build(args.out, "synthetic KG", "generating", "synthetic", overwrite=args.overwrite,
                  entities=args.entities,
                  triples=args.triples, relations=args.relations, categories=args.categories,
                  exponent=args.exponent, seed=args.seed)


def _import_wn18rr(args: argparse.Namespace) -> int:
    return _build(args.out, "WN18RR", "reading", "wn18rr", overwrite=args.overwrite, folder=args.source_dir)


def _import_rdf(args: argparse.Namespace) -> int:
    return _build(args.out, "RDF", "parsing", "rdf", overwrite=args.overwrite, file=args.file,
                  format=args.format, reader=args.reader)


def _import_owl(args: argparse.Namespace) -> int:
    return _build(args.out, "OWL", "parsing", "owl", overwrite=args.overwrite, file=args.file, format=args.format,
                  lang=args.lang, category_depth=args.category_depth, category_root=args.category_root,
                  keep_axioms=args.keep_axioms, definitions=args.definitions, imports=args.imports)


def _import_obo(args: argparse.Namespace) -> int:
    return _build(args.out, "OBO", "parsing", "obo", overwrite=args.overwrite, file=args.file,
                  category_depth=args.category_depth, category_root=args.category_root, imports=args.imports)


def _import_triples(args: argparse.Namespace) -> int:
    separator = {"tab": "\t", "pipe": "|", "comma": ","}.get(args.separator, args.separator)
    return _build(args.out, "triples", "reading", "triples", overwrite=args.overwrite, file=args.file,
                  separator=separator)


def _import_wikidata5m(args: argparse.Namespace) -> int:
    check_output_folder(args.out, args.overwrite)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # the descriptions wait in memory-mapped files beside the output until it is written
    with tempfile.TemporaryDirectory(dir=args.out.parent, prefix=f".{args.out.name}.import-") as work:
        category = None if args.category_relation.lower() == "none" else args.category_relation
        return _build(args.out, "Wikidata5M", "reading", "wikidata5m", overwrite=args.overwrite,
                      folder=args.source_dir,
                      setting=args.setting, category_relation=category,
                      keep_category_triples=args.keep_category_triples,
                      max_description_chars=args.max_description_chars, work_dir=work)


def _import_pykeen(args: argparse.Namespace) -> int:
    return _build(args.out, f"PyKEEN {args.dataset}", "reading", "pykeen", overwrite=args.overwrite,
                  dataset=args.dataset)


# --------------------------------------------------------------------------- argument parsing


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _roots(text: str) -> list[str]:
    roots = [r.strip() for r in text.split(",") if r.strip()]
    if not roots:
        raise argparse.ArgumentTypeError("give at least one synset name, e.g. dog.n.01")
    return roots


def _out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the KG directory to write (a new or empty folder)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a non-empty --out as a whole (no file of an earlier KG survives)")


def _file_format(formats, name: str, description: str) -> argparse.ArgumentParser:
    """``jaket kg import NAME FILE --out DIR [--overwrite]``."""
    parser = formats.add_parser(name, help=description)
    parser.add_argument("file", type=Path, metavar="FILE")
    _out(parser)
    return parser


def _imports_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--imports", type=Path, default=None, metavar="DIR",
                        help="read the file's imports (import: / owl:imports) from local files of the same name "
                             "under DIR; imports are never fetched from the network (default: listed in the "
                             "report, not read)")


def _category_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--category-depth", type=_count, default=None, metavar="N",
                        help="category = the ancestor class N levels below the root (default: the depth "
                             "giving the most categories of at least max(2, 1%%) of the entities)")
    parser.add_argument("--category-root", default=None, metavar="ID",
                        help="count the depth from this class (IRI or term id; default: the hierarchy's tops)")


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``build`` and ``import`` to the ``jaket kg`` subcommands."""
    _register_build(commands)
    importer = commands.add_parser("import", help="import a KG: WN18RR, Wikidata5M, an RDF file or a PyKEEN dataset")
    formats = importer.add_subparsers(dest="source", metavar="FORMAT", required=True)

    wn18rr = formats.add_parser("wn18rr", help="a WN18RR folder (entities.dict, relations.dict, "
                                               "train.txt; valid/test copied as splits)")
    wn18rr.add_argument("source_dir", type=Path, metavar="SRC_DIR")
    _out(wn18rr)
    wn18rr.set_defaults(func=_import_wn18rr)
    _register_ontologies(formats)
    triples = _file_format(formats, "triples", "a file of head, relation, tail lines whose ids are names (a KG "
                                               "without text: `jaket kg describe` and `jaket kg corpus` make it some)")
    triples.add_argument("--separator", default="tab", metavar="SEP",
                         help="the field separator: tab (default), pipe (MetaQA's kb.txt), comma, or the character")
    triples.set_defaults(func=_import_triples)
    _register_wikidata5m(formats)
    pykeen = formats.add_parser("pykeen", help="a dataset bundled with PyKEEN (no download)")
    pykeen.add_argument("dataset", choices=["umls", "nations", "kinships"])
    _out(pykeen)
    pykeen.set_defaults(func=_import_pykeen)


def _register_build(commands: argparse._SubParsersAction) -> None:
    """``jaket kg build wordnet|synthetic``: the generated KGs."""
    build = commands.add_parser("build", help="build a KG directory: WordNet 3.0 (embedded) or synthetic")
    sources = build.add_subparsers(dest="source", metavar="SOURCE", required=True)

    wordnet = sources.add_parser("wordnet", help="WordNet 3.0 synsets, pointers and usage examples "
                                                 "(shipped with the package, no download)")
    _out(wordnet)
    wordnet.add_argument("--max-entities", type=positive_int, default=None, metavar="N",
                         help="a connected-ish subset of N synsets over many categories")
    wordnet.add_argument("--roots", type=_roots, default=None, metavar="SYNSETS",
                         help="comma-separated synset names (dog.n.01,cat.n.01): keep their hyponym closure")
    wordnet.add_argument("--data-seed", type=int, default=0, metavar="N",
                         help="seed of the --max-entities selection (default 0)")
    deprecated_alias(wordnet, "--seed", "--data-seed")
    wordnet.set_defaults(func=_build_wordnet)

    synthetic = sources.add_parser("synthetic", help="a random KG with power-law degrees (scale tests)")
    synthetic.add_argument("--entities", type=positive_int, required=True, metavar="N")
    synthetic.add_argument("--triples", type=_count, required=True, metavar="T")
    _out(synthetic)
    synthetic.add_argument("--relations", type=positive_int, default=20, metavar="P")
    synthetic.add_argument("--categories", type=_count, default=10, metavar="C")
    synthetic.add_argument("--exponent", type=float, default=0.7,
                           help="power-law exponent of the entity popularity (default 0.7)")
    synthetic.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the random graph (default 0)")
    synthetic.set_defaults(func=_build_synthetic)


def _register_ontologies(formats: argparse._SubParsersAction) -> None:
    """``jaket kg import rdf|owl|obo FILE``: one file each (the format told from its content)."""
    rdf = _file_format(formats, "rdf", "an RDF file (N-Triples, Turtle, RDF/XML, ... via rdflib)")
    rdf.add_argument("--format", default=None,
                     help="rdflib format name (turtle, nt, xml, n3, json-ld, ...); default: from the extension")
    rdf.add_argument("--reader", choices=["auto", "stream", "rdflib"], default="auto",
                     help="auto (default): N-Triples, N-Quads, Turtle and TriG streamed through pyoxigraph (memory "
                          "bounded by the KG), other syntaxes through rdflib; the same KG either way")
    rdf.set_defaults(func=_import_rdf)

    owl = _file_format(formats, "owl", "an OWL ontology (RDF/XML, Turtle, functional syntax, OWL/XML): "
                                       "subClassOf restrictions as edges, categories from the class hierarchy "
                                       "(docs/data.md)")
    _imports_argument(owl)
    owl.add_argument("--format", default=None, help="rdflib format name (default: from the extension)")
    owl.add_argument("--lang", default="en", help="preferred label language (default en; then untagged "
                                                  "labels, then the IRI's local name)")
    _category_arguments(owl)
    owl.add_argument("--definitions", type=lambda text: tuple(x.strip() for x in text.split(",") if x.strip()),
                     default=None, metavar="IRI,...",
                     help="the annotation properties read as descriptions, in order (default skos:definition, "
                          "IAO:0000115, rdfs:comment)")
    owl.add_argument("--keep-axioms", action="store_true",
                     help="keep disjointWith between classes as edges (left out by default)")
    owl.set_defaults(func=_import_owl)

    obo = _file_format(formats, "obo", "an OBO ontology (OBO 1.2/1.4 or OBO Graphs JSON): is_a, relationship "
                                       "and logical-definition edges, definitions, synonyms (docs/data.md)")
    _imports_argument(obo)
    _category_arguments(obo)
    obo.set_defaults(func=_import_obo)


def _register_wikidata5m(formats: argparse._SubParsersAction) -> None:
    """``jaket kg import wikidata5m SRC_DIR``: the release's folder and the choice of its KG."""
    wikidata5m = formats.add_parser(
        "wikidata5m", help="a Wikidata5M folder (entity, relation and description files, triple splits; "
                           "docs/data.md)")
    wikidata5m.add_argument("source_dir", type=Path, metavar="SRC_DIR")
    _out(wikidata5m)
    wikidata5m.add_argument("--setting", choices=["transductive", "inductive", "all"], default="transductive",
                            help="which triples are the KG: the setting's train file, its valid/test "
                                 "written as splits; all = wikidata5m_all_triplet.txt (default transductive)")
    wikidata5m.add_argument("--category-relation", default="P31", metavar="PID",
                            help="category = the tail of this relation (default P31, instance of; 'none': "
                                 "no categories)")
    wikidata5m.add_argument("--keep-category-triples", action="store_true",
                            help="keep the category relation's triples in the KG (default: removed, they "
                                 "would give the category away)")
    wikidata5m.add_argument("--max-description-chars", type=_count, default=1000, metavar="N",
                            help="cut longer descriptions (counted in the report; 0 = never; default 1000)")
    wikidata5m.set_defaults(func=_import_wikidata5m)
