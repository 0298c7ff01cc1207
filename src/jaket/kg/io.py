"""The on-disk KG format (a directory): loading and saving it.

A KG directory holds (docs/design.md, ../shared/DESIGN.md):

- ``entities.jsonl``: ``{"id", "name", "description", "category": str | null, "aliases": [str]}``
- ``relations.jsonl``: ``{"id", "name", "description"}``
- ``triples.tsv``: ``head_id<TAB>relation_id<TAB>tail_id``
- ``corpus.jsonl`` (optional): ``{"text", "mentions": [{"start", "end", "entity"}]}``, character
  offsets, end exclusive.

This module is the front door; the work is done by one module per concern, none importing this one:

- :mod:`jaket.kg.errors`: :class:`Problem` (printed ``path:line: message``) and
  :class:`KGFormatError` listing them, raised by every loader;
- :mod:`jaket.kg.readers`: reading text files line by line (byte order mark, UTF-8);
- :mod:`jaket.kg.parsing`: parsing and validating the files (blank lines are ignored);
- :mod:`jaket.kg.strings`: :class:`StringTable` / :class:`AliasTable`, lazily decoded strings;
- :mod:`jaket.kg.cache`: the compiled ``.npy`` cache ``DIR/.jaket-cache/``.

Their public names are importable from here as well (``from jaket.kg.io import load_kg,
KGFormatError, StringTable, CACHE_DIR``).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaket.atomic import write_lines
from jaket.jsonio import quote
from jaket.kg.cache import (CACHE_DIR, CACHE_FORMAT, LAZY_STRINGS_ABOVE, RACY_NS, cache_is_fresh, read_cache,
                            source_stamps, write_cache)
from jaket.kg.corpus import MentionCorpus
from jaket.kg.errors import KGFormatError, Problem, not_a_file
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.parsing import (CORPUS, ENTITIES, FORBIDDEN_IN_IDS, RELATIONS, SPLIT_NAMES, TRIPLES, missing_files,
                              parse_corpus, validate_kg_dir)
from jaket.kg.parsing import parse_dir as _parse_dir  # a module global: tests check it is not called
from jaket.kg.strings import AliasTable, StringTable

logger = logging.getLogger(__name__)


def load_kg(directory, use_cache: bool = True, lazy_strings: bool | None = None) -> KnowledgeGraph:
    """Load a KG directory, from its compiled cache when that is up to date.

    From the cache, the entity string tables are plain lists, or, for graphs of more than
    :data:`LAZY_STRINGS_ABOVE` entities (or ``lazy_strings=True``), list-like
    :class:`StringTable` / :class:`AliasTable` views decoded on access (a 1M-entity KG then
    reloads in about a second).

    Otherwise the source files are parsed and validated (:class:`KGFormatError` lists every error;
    warnings are logged) and the cache is rebuilt. A directory that cannot be written to is
    loaded without a cache.
    """
    directory = Path(directory)
    problems = missing_files(directory)
    if problems:
        raise KGFormatError(problems)
    if use_cache and cache_is_fresh(directory):
        try:
            return read_cache(directory, lazy_strings)
        except (OSError, ValueError, KeyError) as error:
            logger.warning("%s: unreadable cache (%s); rebuilding it", directory / CACHE_DIR, error)
    read_ns = time.time_ns()
    stamps = source_stamps(directory)
    kg, _, problems = _parse_dir(directory, with_corpus=False)
    if kg is None:
        raise KGFormatError(problems)
    warnings = [p for p in problems if not p.is_error]
    if warnings:
        logger.warning("%s: %d warning(s), first: %s", directory, len(warnings), warnings[0])
    if use_cache:
        try:
            write_cache(kg, directory, stamps, read_ns)
        except OSError as error:
            logger.warning("%s: cannot write the compiled cache (%s)", directory / CACHE_DIR, error)
    return kg


def load_corpus(path, kg: KnowledgeGraph) -> MentionCorpus:
    """The corpus of a KG directory (``DIR/corpus.jsonl``) or a corpus file; mention entity ids
    are resolved with ``kg``. Raises :class:`KGFormatError` listing every bad line."""
    path = Path(path)
    if path.is_dir():
        path = path / CORPUS
    if not path.is_file():
        raise KGFormatError([not_a_file(path)])
    problems: list[Problem] = []
    corpus = parse_corpus(path, kg.entity_index, None, problems)
    if any(p.is_error for p in problems):
        raise KGFormatError(problems)
    return corpus


def _check_ids(ids: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if not value or any(c in value for c in FORBIDDEN_IN_IDS):
            raise ValueError(f"{what} id {quote(value)} is empty or contains a tab, a line break or a NUL")
        if value in seen:
            raise ValueError(f"duplicate {what} id {quote(value)}")
        seen.add(value)


def _triple_lines(triples: np.ndarray, entity_ids: list[str], relation_ids: list[str]):
    """``head<TAB>relation<TAB>tail`` lines of the index triples, blocks of lines at a time (joined
    by Arrow's string kernels when pyarrow is installed, the KG's largest file written at memory
    speed)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        e, r = np.array(entity_ids, dtype=object), np.array(relation_ids, dtype=object)
        for start in range(0, len(triples), 1 << 16):
            block = triples[start:start + (1 << 16)]
            yield from map("\t".join, zip(e[block[:, 0]], r[block[:, 1]], e[block[:, 2]]))
        return
    e, r = pa.array(entity_ids, pa.large_string()), pa.array(relation_ids, pa.large_string())
    tail = pc.binary_join_element_wise(e, pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string()))
    tab = pa.scalar("\t", pa.large_string())
    for start in range(0, len(triples), 1 << 18):  # 262,144 lines (about 20 MB of text) a block
        block = triples[start:start + (1 << 18)]
        lines = pc.binary_join_element_wise(e.take(pa.array(block[:, 0])), r.take(pa.array(block[:, 1])),
                                            tail.take(pa.array(block[:, 2])), tab)  # "h\tr\tt\n" each
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset:lines.offset + len(lines) + 1]
        text = bytes(memoryview(lines.buffers()[2])[offsets[0]:offsets[-1] - 1]).decode("utf-8")
        yield text  # the block's lines, the last without its line end (write_lines adds it)


def save_kg(kg: KnowledgeGraph, directory, corpus: MentionCorpus | None = None) -> Path:
    """Write ``kg`` (and ``corpus``) in the directory format; every file is replaced atomically.

    An existing compiled cache in ``directory`` is removed (the next load rebuilds it).
    Categories are stored through the entities that carry them, so a category no entity uses is
    not kept (the loaded ``category_names`` are the sorted used ones).
    """
    directory = Path(directory)
    _check_ids(kg.entity_ids, "entity")
    _check_ids(kg.relation_ids, "relation")
    directory.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(directory / CACHE_DIR, ignore_errors=True)
    categories = kg.category_names
    entity_ids = list(kg.entity_ids)
    relation_ids = list(kg.relation_ids)

    def entities():
        # json.dumps(..., ensure_ascii=False) of each record, spelled out: its string encoder without
        # a dict a line (a million entities are seconds faster; tests/kg/test_io.py checks the bytes)
        quote = json.encoder.encode_basestring
        names, descriptions, aliases = kg.entity_names, kg.entity_descriptions, kg.entity_aliases
        category_text = [quote(c) for c in categories]
        for i, c in enumerate(kg.entity_category.tolist()):
            alias_list = aliases[i]
            yield (f'{{"id": {quote(entity_ids[i])}, "name": {quote(names[i])}, "description": '
                   f'{quote(descriptions[i])}, "category": {category_text[c] if c >= 0 else "null"}, "aliases": '
                   f'[{", ".join(map(quote, alias_list)) if alias_list else ""}]}}')

    def relations():
        for i in range(kg.num_relations):
            yield json.dumps({"id": relation_ids[i], "name": kg.relation_names[i],
                              "description": kg.relation_descriptions[i]}, ensure_ascii=False)

    def triples():
        yield from _triple_lines(kg.triples, entity_ids, relation_ids)

    write_lines(directory / ENTITIES, entities())
    write_lines(directory / RELATIONS, relations())
    write_lines(directory / TRIPLES, triples())
    if corpus is not None:
        save_corpus(corpus, directory / CORPUS, kg)
    return directory


def save_corpus(corpus: MentionCorpus, path, kg: KnowledgeGraph) -> Path:
    """Write ``corpus`` as JSONL (mention entities by id) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    entity_ids = kg.entity_ids

    def records():
        for text, mentions in zip(corpus.texts, corpus.mentions):
            yield json.dumps({"text": text, "mentions": [
                {"start": m.start, "end": m.end, "entity": entity_ids[m.entity]}
                for m in sorted(mentions, key=lambda m: m.start)]}, ensure_ascii=False)

    write_lines(path, records())
    return path


__all__ = ["AliasTable", "CACHE_DIR", "CACHE_FORMAT", "CORPUS", "ENTITIES", "KGFormatError", "LAZY_STRINGS_ABOVE",
           "Problem", "RACY_NS", "RELATIONS", "SPLIT_NAMES", "StringTable", "TRIPLES", "load_corpus", "load_kg",
           "save_corpus", "save_kg", "validate_kg_dir", "write_cache"]
