"""The registry of KG sources: a name -> a builder returning one :class:`SourceBundle`.

As PyKEEN's datasets are looked up by name (``get_dataset(dataset="nations")``), every source of
a knowledge graph is built here by name with keyword options::

    bundle = build_source("wordnet", max_entities=2000, seed=0)
    bundle = build_source("wn18rr", folder="data/wn18rr")
    bundle = build_source("dir", path="kgs/mine")          # a KG directory (jaket.kg.io)
    bundle.kg, bundle.corpus, bundle.splits["valid"], bundle.report

so the command line (``jaket kg build`` / ``kg import``), pre-training and the tasks build a KG the
same way, and a new source is one decorated function (docs/contributing.md, "Adding a KG source").
The builders stay thin: the reading is done by the source modules beside this one.

What every bundle holds:

- ``kg``: the :class:`~jaket.kg.graph.KnowledgeGraph`; for a source with evaluation splits, its
  triples are the training split;
- ``corpus``: the source's mention corpus, ``None`` when it has no texts (then pre-training runs
  the KG tasks only, until one is linked with ``jaket link``);
- ``splits``: ``{"valid": (T, 3) int64, "test": ...}`` entity / relation indices of ``kg`` (empty
  for a source without splits);
- ``report``: what the source counted while building (JSON-serialisable; ``build-report.json``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaket.kg.corpus import MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import CORPUS, SPLIT_NAMES, load_corpus, load_kg
from jaket.kg.readers import index_triples, read_split, read_triples
from jaket.kg.sources.pykeen_datasets import load_pykeen_dataset, read_splits
from jaket.kg.sources.ontologies import load_obo, load_owl
from jaket.kg.sources.rdf_stream import import_rdf
from jaket.kg.sources.synthetic import build_synthetic
from jaket.kg.sources.wikidata5m import load_wikidata5m
from jaket.kg.sources.wn18rr import load_wn18rr
from jaket.kg.sources.wordnet import build_wordnet
from jaket.kg.toy import toy_kg


@dataclass
class SourceBundle:
    """A KG with what came with it (module docstring)."""

    kg: KnowledgeGraph
    corpus: MentionCorpus | None = None
    splits: dict[str, np.ndarray] = field(default_factory=dict)
    report: dict = field(default_factory=dict)


@dataclass(frozen=True)
class KGSource:
    """A registered source: its ``name``, a one-line ``summary`` and the ``builder``."""

    name: str
    summary: str
    builder: Callable[..., SourceBundle]

    def options(self) -> list[str]:
        """The keyword options the builder takes."""
        return list(inspect.signature(self.builder).parameters)


class UnknownSourceError(ValueError):
    """No KG source of that name (the message lists the registered ones)."""


_SOURCES: dict[str, KGSource] = {}


def register_source(name: str, summary: str) -> Callable[[Callable[..., SourceBundle]], Callable[..., SourceBundle]]:
    """Register the decorated function as the builder of source ``name`` (keyword options only)."""
    def decorate(builder: Callable[..., SourceBundle]) -> Callable[..., SourceBundle]:
        if name in _SOURCES:
            raise ValueError(f"a KG source named {name!r} is registered already")
        _SOURCES[name] = KGSource(name, summary, builder)
        return builder
    return decorate


def source_names() -> list[str]:
    """The registered sources, in registration order."""
    return list(_SOURCES)


def get_source(name: str) -> KGSource:
    try:
        return _SOURCES[name]
    except KeyError:
        raise UnknownSourceError(f"unknown KG source {name!r}; choose one of {', '.join(_SOURCES)}") from None


def build_source(name: str, **options) -> SourceBundle:
    """The bundle of source ``name`` built with ``options`` (an option the builder does not take
    is a ``TypeError`` naming it, as for any Python call)."""
    return get_source(name).builder(**options)


# the sources ------------------------------------------------------------------------------------
def _indexed_splits(kg: KnowledgeGraph, rows: dict[str, Sequence[tuple[str, str, str]]],
                    report: dict) -> dict[str, np.ndarray]:
    """Id-triple splits as indices of ``kg``; rows naming an id ``kg`` lacks are counted in
    ``report["split_triples_skipped"]`` (only when there are some)."""
    splits, skipped = {}, {}
    for name in SPLIT_NAMES:
        if name in rows:
            splits[name], skipped[name] = index_triples(rows[name], kg)
    if any(skipped.values()):
        report["split_triples_skipped"] = skipped
    return splits


@register_source("toy", "the built-in toy KG: 40 entities, 5 relations, 71 linked sentences (tests, demos)")
def _toy() -> SourceBundle:
    kg, corpus = toy_kg()
    return SourceBundle(kg, corpus, {}, {"source": "toy"})


@register_source("wordnet", "WordNet 3.0 (shipped with the package): synsets, pointers, usage examples as corpus")
def _wordnet(max_entities: int | None = None, roots: Sequence[str] | str | None = None, seed: int = 0
             ) -> SourceBundle:
    kg, corpus, report = build_wordnet(max_entities=max_entities, roots=roots, seed=seed)
    return SourceBundle(kg, corpus, {}, report)


@register_source("synthetic", "a random KG with power-law degrees (scale tests)")
def _synthetic(entities: int, triples: int, relations: int = 20, categories: int = 10,
               exponent: float = 0.7, seed: int = 0) -> SourceBundle:
    kg, report = build_synthetic(entities, triples, num_relations=relations, num_categories=categories,
                                 exponent=exponent, seed=seed)
    return SourceBundle(kg, None, {}, report)


@register_source("wn18rr", "a WN18RR folder, named and described from WordNet 3.0; valid/test as splits")
def _wn18rr(folder: str | Path) -> SourceBundle:
    kg, report = load_wn18rr(folder)
    rows = {Path(name).stem: [row[1:] for row in read_triples(Path(folder) / name)] for name in report["splits"]}
    return SourceBundle(kg, None, _indexed_splits(kg, rows, report), report)


@register_source("rdf", "an RDF file (N-Triples, Turtle, RDF/XML, ...; N-Triples and Turtle streamed)")
def _rdf(file: str | Path, format: str | None = None, reader: str = "auto") -> SourceBundle:
    kg, report = import_rdf(file, format, reader)
    return SourceBundle(kg, None, {}, report)


@register_source("owl", "an OWL ontology (RDF/XML, Turtle, functional syntax, OWL/XML): class restrictions as "
                        "edges, categories from the class hierarchy")
def _owl(file: str | Path, format: str | None = None, lang: str = "en", category_depth: int | None = None,
         category_root: str | None = None, keep_axioms: bool = False,
         definitions: tuple[str, ...] | None = None, imports: str | Path | None = None) -> SourceBundle:
    kg, report = load_owl(file, format, lang=lang, category_depth=category_depth, category_root=category_root,
                          keep_axioms=keep_axioms, definitions=definitions, imports=imports)
    return SourceBundle(kg, None, {}, report)


@register_source("obo", "an OBO ontology (.obo, OBO 1.2/1.4, or OBO Graphs JSON): is_a, relationship and "
                        "logical-definition edges, definitions, synonyms")
def _obo(file: str | Path, category_depth: int | None = None, category_root: str | None = None,
         imports: str | Path | None = None) -> SourceBundle:
    kg, report = load_obo(file, category_depth=category_depth, category_root=category_root, imports=imports)
    return SourceBundle(kg, None, {}, report)


@register_source("triples", "a file of head, relation, tail lines whose ids are names (a KG without text)")
def _triples(file: str | Path, separator: str = "\t") -> SourceBundle:
    """Entities and relations named by their ids (``Kismet``, ``directed_by``), no description but
    the name (``jaket kg describe`` makes them from the triples), no category; a triple given twice
    is one triple."""
    rows = read_triples(file, separator=separator)
    entity_ids = sorted({x for _, h, _, t in rows for x in (h, t)})
    relation_ids = sorted({r for _, _, r, _ in rows})
    e_index = {e: i for i, e in enumerate(entity_ids)}
    r_index = {r: i for i, r in enumerate(relation_ids)}
    triples = np.array(sorted({(e_index[h], r_index[r], e_index[t]) for _, h, r, t in rows}),
                       dtype=np.int32).reshape(-1, 3)
    kg = KnowledgeGraph(entity_ids=entity_ids, entity_names=list(entity_ids), entity_descriptions=list(entity_ids),
                        entity_aliases=[[] for _ in entity_ids],
                        entity_category=np.full(len(entity_ids), -1, dtype=np.int32), category_names=[],
                        relation_ids=relation_ids, relation_names=[r.replace("_", " ") for r in relation_ids],
                        relation_descriptions=[r.replace("_", " ") for r in relation_ids], triples=triples)
    return SourceBundle(kg, None, {}, {"source": "triples", "file": str(file), "lines": len(rows),
                                       "triples_given_twice": len(rows) - len(triples),
                                       "entities_without_description": len(entity_ids)})


@register_source("pykeen", "UMLS, Nations or Kinships as bundled with PyKEEN (no download); valid/test as splits")
def _pykeen(dataset: str) -> SourceBundle:
    kg, report = load_pykeen_dataset(dataset)
    return SourceBundle(kg, None, _indexed_splits(kg, read_splits(dataset), report), report)


@register_source("wikidata5m", "a Wikidata5M folder (docs/data.md); the setting's valid/test as splits")
def _wikidata5m(folder: str | Path, setting: str = "transductive", category_relation: str | None = "P31",
                keep_category_triples: bool = False, max_description_chars: int = 1000,
                work_dir: str | Path | None = None) -> SourceBundle:
    """``work_dir``: where the descriptions wait memory-mapped (it must outlive the bundle's use)."""
    kg, splits, report = load_wikidata5m(folder, setting, category_relation, keep_category_triples,
                                         max_description_chars, work_dir=work_dir)
    return SourceBundle(kg, None, {name: np.asarray(rows, dtype=np.int64).reshape(-1, 3)
                                   for name, rows in splits.items()}, report)


@register_source("dir", "a KG directory (jaket.kg.io format); its corpus.jsonl and valid/test.txt when present")
def _directory(path: str | Path, corpus: str | Path | None = None, with_splits: bool = True) -> SourceBundle:
    """``corpus``: a corpus file replacing the directory's own; ``with_splits=False`` skips reading
    ``valid.txt`` / ``test.txt`` (a large KG's id lookup is then not built for them)."""
    path = Path(path)
    kg = load_kg(path)
    report: dict = {"source": "dir", "path": str(path)}
    texts = None
    if corpus is not None:
        texts = load_corpus(corpus, kg)
        report["corpus"] = str(corpus)
    elif (path / CORPUS).exists():  # a folder in its place is refused, not ignored (as kg validate does)
        texts = load_corpus(path, kg)
    splits = {}
    if with_splits:
        for name in SPLIT_NAMES:
            if (path / f"{name}.txt").exists():
                splits[name], skipped = read_split(path / f"{name}.txt", kg)
                if skipped:
                    report.setdefault("split_triples_skipped", {})[name] = skipped
    return SourceBundle(kg, texts, splits, report)


__all__ = ["KGSource", "SPLIT_NAMES", "SourceBundle", "UnknownSourceError", "build_source", "get_source",
           "register_source", "source_names"]
