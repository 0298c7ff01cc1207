"""The on-disk KG format (a directory), its validation, and the compiled numpy cache.

A KG directory holds (docs/design.md, ../shared/DESIGN.md):

- ``entities.jsonl``: ``{"id", "name", "description", "category": str | null, "aliases": [str]}``
- ``relations.jsonl``: ``{"id", "name", "description"}``
- ``triples.tsv``: ``head_id<TAB>relation_id<TAB>tail_id``
- ``corpus.jsonl`` (optional): ``{"text", "mentions": [{"start", "end", "entity"}]}``, character
  offsets, end exclusive.

Validation collects every problem as a :class:`Problem` printed ``path:line: message``; loaders raise
:class:`KGFormatError` listing them. Blank lines are ignored.

The compiled cache ``DIR/.jaket-cache/`` holds ``.npy`` arrays only (strings as one UTF-8 byte blob
plus int64 offsets; loaded with ``allow_pickle=False``) and ``manifest.json`` with the size,
``mtime_ns``, ``ctime_ns``, inode, device and SHA-256 of each source file; it is rebuilt when any
stat field changes, or the content of a source edited just before the cache was built
(:func:`_cache_is_fresh`), and always written atomically (a temporary directory renamed into place).
"""

from __future__ import annotations

import json
import logging
import os
import hashlib
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np

from jaket.atomic import atomic_directory, write_json, write_lines
from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import CSRAdjacency, KnowledgeGraph

logger = logging.getLogger(__name__)

ENTITIES = "entities.jsonl"
RELATIONS = "relations.jsonl"
TRIPLES = "triples.tsv"
CORPUS = "corpus.jsonl"
CACHE_DIR = ".jaket-cache"
CACHE_FORMAT = 2
_SOURCES = (ENTITIES, RELATIONS, TRIPLES)
_FORBIDDEN_IN_IDS = ("\t", "\n", "\r")


# problems --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """One thing wrong with a KG file; ``line`` is 1-based, ``None`` for the whole file."""

    path: str
    line: int | None
    message: str
    severity: str = "error"  # or "warning"

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{where}: {prefix}{self.message}"


class KGFormatError(ValueError):
    """A KG directory or corpus file does not follow the format; ``problems`` lists why."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        errors = [p for p in self.problems if p.is_error] or self.problems
        super().__init__("\n".join(str(p) for p in errors))


# lazily decoded string tables ------------------------------------------------------------------
class StringTable(Sequence):
    """A read-only list of strings stored as one UTF-8 byte blob and ``len + 1`` int64 offsets.

    It decodes a string only when asked, so a million-entity table loads in milliseconds. It
    behaves like a list: indexing (a slice gives a list), ``len``, iteration, ``==`` with a list.
    """

    __slots__ = ("blob", "offsets")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob = np.asarray(blob, dtype=np.uint8)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    @classmethod
    def from_strings(cls, strings: Sequence[str]) -> "StringTable":
        encoded = [s.encode("utf-8") for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded)),
                  out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = int(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("StringTable index out of range")
        return self.blob[self.offsets[index]:self.offsets[index + 1]].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        chunk = 1 << 14
        for begin in range(0, len(self), chunk):
            offsets = self.offsets[begin:begin + chunk + 1]
            base = int(offsets[0])
            data = self.blob[base:int(offsets[-1])].tobytes()
            bounds = (offsets - base).tolist()
            for a, b in zip(bounds, bounds[1:]):
                yield data[a:b].decode("utf-8")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringTable):
            return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.blob, other.blob)
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other) -> list[str]:
        return list(self) + list(other)

    def __radd__(self, other) -> list[str]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"StringTable({len(self)} strings)"


class AliasTable(Sequence):
    """``entity_aliases`` backed by a :class:`StringTable` of all aliases and an (N+1,) pointer."""

    __slots__ = ("strings", "pointer")

    def __init__(self, strings: StringTable, pointer: np.ndarray):
        self.strings = strings
        self.pointer = np.asarray(pointer, dtype=np.int64)

    @classmethod
    def from_lists(cls, aliases: Sequence[Sequence[str]]) -> "AliasTable":
        pointer = np.zeros(len(aliases) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(a) for a in aliases), dtype=np.int64, count=len(aliases)),
                  out=pointer[1:])
        return cls(StringTable.from_strings([s for a in aliases for s in a]), pointer)

    def __len__(self) -> int:
        return len(self.pointer) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = int(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("AliasTable index out of range")
        return self.strings[int(self.pointer[index]):int(self.pointer[index + 1])]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, AliasTable)):
            return len(self) == len(other) and all(list(a) == list(b) for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AliasTable({len(self)} entities)"


# reading lines ---------------------------------------------------------------------------------
def _lines(path: Path, problems: list[Problem]) -> list[tuple[int, str]]:
    """Non-blank lines as ``(line number, text)``; undecodable lines become problems."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, even when a later line is bad
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        out = []
        for number, raw in enumerate(data.split(b"\n"), start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                problems.append(Problem(str(path), number,
                                        f"invalid UTF-8 (byte {error.start} of the line)"))
                continue
            line = line.rstrip("\r")
            if line.strip():
                out.append((number, line))
        return out
    rows = text.split("\n")
    if "\r" in text:
        rows = [r.rstrip("\r") for r in rows]
    return [(number, line) for number, line in enumerate(rows, start=1) if line.strip()]


def _json_object(path: Path, number: int, line: str, problems: list[Problem]) -> dict | None:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        problems.append(Problem(str(path), number, f"malformed JSON: {error.msg} (column {error.colno})"))
        return None
    if not isinstance(value, dict):
        problems.append(Problem(str(path), number, f"expected a JSON object, found {type(value).__name__}"))
        return None
    return value


def _string_field(record: dict, key: str, path: Path, number: int, problems: list[Problem],
                  *, required: bool = True, is_id: bool = False) -> str | None:
    if key not in record:
        if required:
            problems.append(Problem(str(path), number, f"missing field {key!r}"))
        return None
    value = record[key]
    if not isinstance(value, str):
        problems.append(Problem(str(path), number,
                                f"field {key!r} must be a string, found {type(value).__name__}"))
        return None
    if is_id:
        if not value:
            problems.append(Problem(str(path), number, f"field {key!r} is empty"))
            return None
        if any(c in value for c in _FORBIDDEN_IN_IDS):
            problems.append(Problem(str(path), number,
                                    f"id {value!r} contains a tab or line break (not allowed in ids)"))
            return None
    return value


# parsing the three KG files --------------------------------------------------------------------
@dataclass
class _Table:
    ids: list[str]
    names: list[str]
    descriptions: list[str]
    index: dict[str, int]


_NO_ALIASES: list[str] = []


def _records(path: Path, problems: list[Problem]) -> list[tuple[int, str, dict | None]]:
    """``(line number, line, JSON object or None)`` of every non-blank line of a JSONL file;
    malformed lines become problems. Each line is parsed on its own: parsing the whole file as
    one JSON array is about twice as fast, but a line holding two objects and an object split
    over two lines can then cancel out and shift every later record onto the wrong line."""
    return [(number, line, _json_object(path, number, line, problems)) for number, line in _lines(path, problems)]


def _parse_entities(path: Path, problems: list[Problem]):
    ids, names, descriptions, categories, aliases = [], [], [], [], []
    first_line: dict[str, int] = {}
    for number, line, record in _records(path, problems):
        if record is None:
            continue
        entity_id, name, description = record.get("id"), record.get("name"), record.get("description")
        category, alias_list = record.get("category"), record.get("aliases", _NO_ALIASES)
        if (type(entity_id) is str and type(name) is str and type(description) is str and description
                and (category is None or (type(category) is str and category))
                and (alias_list is _NO_ALIASES or (type(alias_list) is list
                                                   and all(type(a) is str for a in alias_list)))) \
                and entity_id and "\t" not in entity_id and "\n" not in entity_id \
                and "\r" not in entity_id and entity_id not in first_line:
            first_line[entity_id] = number  # fast path: a well-formed new entity
            ids.append(entity_id)
            names.append(name)
            descriptions.append(description)
            categories.append(category)
            aliases.append(list(alias_list))
            continue
        before = len(problems)
        entity_id = _string_field(record, "id", path, number, problems, is_id=True)
        name = _string_field(record, "name", path, number, problems)
        description = _string_field(record, "description", path, number, problems)
        category = record.get("category")
        if category is not None and (not isinstance(category, str) or not category):
            problems.append(Problem(str(path), number,
                                    "field 'category' must be a non-empty string or null"))
        alias_list = record.get("aliases", [])
        if not isinstance(alias_list, list) or not all(isinstance(a, str) for a in alias_list):
            problems.append(Problem(str(path), number, "field 'aliases' must be a list of strings"))
        if entity_id is not None and entity_id in first_line:
            problems.append(Problem(str(path), number, f"duplicate entity id {entity_id!r} "
                                                        f"(first defined at line {first_line[entity_id]})"))
            continue
        if len(problems) > before:
            if entity_id is not None:
                first_line[entity_id] = number  # known, so triples naming it are not dangling
            continue
        if description == "":
            problems.append(Problem(str(path), number, f"entity {entity_id!r} has an empty description",
                                    "warning"))
        first_line[entity_id] = number
        ids.append(entity_id)
        names.append(name)
        descriptions.append(description)
        categories.append(category)
        aliases.append(list(alias_list))
    return ids, names, descriptions, categories, aliases, first_line


def _parse_relations(path: Path, problems: list[Problem]):
    ids, names, descriptions = [], [], []
    first_line: dict[str, int] = {}
    for number, line, record in _records(path, problems):
        if record is None:
            continue
        before = len(problems)
        relation_id = _string_field(record, "id", path, number, problems, is_id=True)
        name = _string_field(record, "name", path, number, problems)
        description = _string_field(record, "description", path, number, problems)
        if relation_id is not None and relation_id in first_line:
            problems.append(Problem(str(path), number, f"duplicate relation id {relation_id!r} "
                                                        f"(first defined at line {first_line[relation_id]})"))
            continue
        if len(problems) > before:
            if relation_id is not None:
                first_line[relation_id] = number
            continue
        if description == "":
            problems.append(Problem(str(path), number,
                                    f"relation {relation_id!r} has an empty description", "warning"))
        first_line[relation_id] = number
        ids.append(relation_id)
        names.append(name)
        descriptions.append(description)
    return ids, names, descriptions, first_line


def _triples_fast_path(path: Path, entity_index: dict[str, int],
                       relation_index: dict[str, int]) -> np.ndarray | None:
    """The triples of a well-formed file in C-speed passes (``None`` at the first irregularity:
    the line-by-line parser then finds and reports it). Works in blocks to bound memory."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    del data
    if "\r" in text or "\ufeff" in text:
        return None
    lines = text.split("\n")
    del text
    if lines and lines[-1] == "":
        lines.pop()
    blocks = []
    tab = repeat("\t")
    for begin in range(0, len(lines), 1 << 20):
        block = lines[begin:begin + (1 << 20)]
        if any(c != 2 for c in map(str.count, block, tab)):
            return None  # wrong column count or a blank line
        fields = "\t".join(block).split("\t")
        missing = repeat(-1)
        heads = np.array(list(map(entity_index.get, fields[0::3], missing)), dtype=np.int64)
        relations = np.array(list(map(relation_index.get, fields[1::3], missing)), dtype=np.int64)
        tails = np.array(list(map(entity_index.get, fields[2::3], missing)), dtype=np.int64)
        if len(block) and min(heads.min(), relations.min(), tails.min()) < 0:
            return None
        blocks.append(np.stack([heads, relations, tails], axis=1).astype(np.int32))
    return np.concatenate(blocks) if blocks else np.zeros((0, 3), dtype=np.int32)


def _parse_triples(path: Path, entity_index: dict[str, int], relation_index: dict[str, int],
                   known_entities: dict[str, int], known_relations: dict[str, int],
                   problems: list[Problem]) -> np.ndarray:
    """(T, 3) int32 triples. Ids in ``known_*`` but not in ``*_index`` were defined on a broken
    line: the triple is skipped without a second complaint."""
    fast = _triples_fast_path(path, entity_index, relation_index)
    if fast is not None:
        return fast
    lines = _lines(path, problems)
    rows = []
    for number, line in lines:
        parts = line.split("\t")
        if len(parts) != 3:
            problems.append(Problem(str(path), number,
                                    f"expected 3 tab-separated columns (head, relation, tail), "
                                    f"found {len(parts)}"))
            continue
        head, relation, tail = parts
        ok = True
        for value, table, known, role in ((head, entity_index, known_entities, "head entity"),
                                          (relation, relation_index, known_relations, "relation"),
                                          (tail, entity_index, known_entities, "tail entity")):
            if value not in table:
                ok = False
                if value not in known:
                    source = RELATIONS if role == "relation" else ENTITIES
                    problems.append(Problem(str(path), number,
                                            f"unknown {role} id {value!r} (not in {source})"))
        if ok:
            rows.append((entity_index[head], relation_index[relation], entity_index[tail]))
    return np.asarray(rows, dtype=np.int32).reshape(-1, 3)


def _parse_corpus(path: Path, entity_index, known_entities: dict[str, int] | None,
                  problems: list[Problem]) -> MentionCorpus:
    """``entity_index`` maps an entity id to its index (dict or callable raising KeyError)."""
    lookup = entity_index.__getitem__ if isinstance(entity_index, dict) else entity_index
    texts, mentions = [], []
    for number, line, record in _records(path, problems):
        if record is None:
            continue
        before = len(problems)
        text = _string_field(record, "text", path, number, problems)
        raw = record.get("mentions", [])
        if not isinstance(raw, list):
            problems.append(Problem(str(path), number, "field 'mentions' must be a list"))
            continue
        spans: list[Mention] = []
        for k, m in enumerate(raw):
            where = f"mention {k}"
            if not isinstance(m, dict):
                problems.append(Problem(str(path), number, f"{where}: expected an object"))
                continue
            start, end, entity = m.get("start"), m.get("end"), m.get("entity")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
                problems.append(Problem(str(path), number,
                                        f"{where}: 'start' and 'end' must be integers"))
                continue
            if not isinstance(entity, str):
                problems.append(Problem(str(path), number, f"{where}: 'entity' must be an entity id string"))
                continue
            if text is not None and not (0 <= start < end <= len(text)):
                problems.append(Problem(str(path), number,
                                        f"{where}: span [{start}, {end}) is outside the text "
                                        f"(length {len(text)}) or empty"))
                continue
            try:
                index = lookup(entity)
            except KeyError:
                if known_entities is None or entity not in known_entities:
                    problems.append(Problem(str(path), number,
                                            f"{where}: unknown entity id {entity!r}"))
                else:
                    problems.append(Problem(str(path), number,
                                            f"{where}: entity {entity!r} is defined on a broken line"))
                continue
            spans.append(Mention(start, end, int(index)))
        ordered = sorted(spans, key=lambda s: (s.start, s.end))
        for a, b in zip(ordered, ordered[1:]):
            if b.start < a.end:
                problems.append(Problem(str(path), number,
                                        f"mentions overlap: [{a.start}, {a.end}) and [{b.start}, {b.end})"))
        if len(problems) > before or text is None:
            continue
        texts.append(text)
        mentions.append(spans)
    return MentionCorpus(texts, mentions)


def _missing(directory: Path) -> list[Problem]:
    problems = []
    if not directory.is_dir():
        return [Problem(str(directory), None, "not a directory")]
    for name in _SOURCES:
        if not (directory / name).is_file():
            problems.append(Problem(str(directory / name), None, "missing file"))
    return problems


def _parse_dir(directory: Path, with_corpus: bool) -> tuple[KnowledgeGraph | None, MentionCorpus | None,
                                                            list[Problem]]:
    problems = _missing(directory)
    if problems:
        return None, None, problems
    e_ids, e_names, e_desc, e_cats, e_aliases, e_known = _parse_entities(directory / ENTITIES, problems)
    r_ids, r_names, r_desc, r_known = _parse_relations(directory / RELATIONS, problems)
    entity_index = {e: i for i, e in enumerate(e_ids)}
    relation_index = {r: i for i, r in enumerate(r_ids)}
    triples = _parse_triples(directory / TRIPLES, entity_index, relation_index, e_known, r_known,
                             problems)
    corpus = None
    if with_corpus and (directory / CORPUS).is_file():
        corpus = _parse_corpus(directory / CORPUS, entity_index, e_known, problems)
    if any(p.is_error for p in problems):
        return None, None, problems
    category_names = sorted({c for c in e_cats if c is not None})
    category_index = {c: i for i, c in enumerate(category_names)}
    kg = KnowledgeGraph(
        entity_ids=e_ids, entity_names=e_names, entity_descriptions=e_desc, entity_aliases=e_aliases,
        entity_category=np.fromiter((category_index[c] if c is not None else -1 for c in e_cats),
                                    dtype=np.int32, count=len(e_cats)),
        category_names=category_names, relation_ids=r_ids, relation_names=r_names,
        relation_descriptions=r_desc, triples=triples,
        _entity_lookup=entity_index, _relation_lookup=relation_index,
    )
    return kg, corpus, problems


def validate_kg_dir(directory) -> list[Problem]:
    """Every problem of a KG directory (errors and warnings), in file then line order."""
    directory = Path(directory)
    _, _, problems = _parse_dir(directory, with_corpus=True)
    order = {name: i for i, name in enumerate((ENTITIES, RELATIONS, TRIPLES, CORPUS))}
    return sorted(problems, key=lambda p: (order.get(Path(p.path).name, 9), p.path, p.line or 0))


# the compiled cache ----------------------------------------------------------------------------
_STRING_TABLES = ("entity_ids", "entity_names", "entity_descriptions", "relation_ids",
                  "relation_names", "relation_descriptions", "category_names")
_ADJACENCY = ("indptr", "neighbors", "edge_type", "triple_id")


#: a source changed less than this before its cache was built may be edited again within the same
#: coarse file-system clock tick without any stat field changing: its content hash is then checked
RACY_NS = 2_000_000_000


def _stat_stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _source_stamps(directory: Path) -> dict:
    """What the cache is keyed by: each source's size, mtime, ctime, inode and device (any write
    moves the ctime, which no user call can set back) and its SHA-256."""
    return {name: _stat_stamp(directory / name) | {"sha256": _sha256(directory / name)}
            for name in _SOURCES}


def _cache_is_fresh(directory: Path) -> bool:
    """Whether the cache was compiled from the sources as they are now: every stat field equal,
    and, for a source changed within :data:`RACY_NS` before the stamps were read (a same-size
    edit in the same clock tick would keep every field), an equal SHA-256 as well."""
    manifest_path = directory / CACHE_DIR / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("format") != CACHE_FORMAT:
            return False
        sources, read_ns = manifest["sources"], manifest["sources_read_ns"]
        racy = []
        for name in _SOURCES:
            now = _stat_stamp(directory / name)
            if any(sources[name][key] != value for key, value in now.items()):
                return False
            if sources[name]["ctime_ns"] > read_ns - RACY_NS:
                racy.append(name)
        for name in racy:
            if _sha256(directory / name) != sources[name]["sha256"]:
                return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    if racy and time.time_ns() - RACY_NS > max(sources[name]["ctime_ns"] for name in racy):
        manifest["sources_read_ns"] = time.time_ns()  # verified now: any later edit moves the ctime
        try:
            write_json(manifest_path, manifest, indent=1)
        except OSError:
            pass
    return True


def _save_array(folder: Path, name: str, array: np.ndarray) -> None:
    np.save(folder / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


def _load_array(folder: Path, name: str) -> np.ndarray:
    return np.load(folder / f"{name}.npy", allow_pickle=False)


def write_cache(kg: KnowledgeGraph, directory, stamps: dict | None = None,
                read_ns: int | None = None) -> Path:
    """Compile ``kg`` into ``directory/.jaket-cache`` (atomically replacing an older one);
    ``stamps`` (:func:`_source_stamps`) read at ``read_ns`` (``time.time_ns()`` just before)."""
    directory = Path(directory)
    if stamps is None:
        read_ns, stamps = time.time_ns(), _source_stamps(directory)
    target = directory / CACHE_DIR
    with atomic_directory(target, prefix=CACHE_DIR) as temporary:
        for name in _STRING_TABLES:
            values = getattr(kg, name)
            table = values if isinstance(values, StringTable) else StringTable.from_strings(list(values))
            _save_array(temporary, f"{name}.bytes", table.blob)
            _save_array(temporary, f"{name}.offsets", table.offsets)
        aliases = kg.entity_aliases if isinstance(kg.entity_aliases, AliasTable) \
            else AliasTable.from_lists(kg.entity_aliases)
        _save_array(temporary, "aliases.bytes", aliases.strings.blob)
        _save_array(temporary, "aliases.offsets", aliases.strings.offsets)
        _save_array(temporary, "aliases.pointer", aliases.pointer)
        _save_array(temporary, "entity_category", kg.entity_category.astype(np.int32))
        _save_array(temporary, "triples", kg.triples.astype(np.int32))
        adjacency = kg.adjacency
        for name in _ADJACENCY:
            _save_array(temporary, f"adjacency.{name}", getattr(adjacency, name))
        manifest = {"format": CACHE_FORMAT, "sources": stamps, "sources_read_ns": read_ns if read_ns is not None else 0,
                    "num_entities": kg.num_entities, "num_relations": kg.num_relations,
                    "num_triples": kg.num_triples}
        write_json(temporary / "manifest.json", manifest, indent=1)
    return target


#: above this many entities, loaded string tables stay lazily decoded (StringTable / AliasTable)
LAZY_STRINGS_ABOVE = 500_000


def _read_cache(directory: Path, lazy_strings: bool | None = None) -> KnowledgeGraph:
    folder = directory / CACHE_DIR
    tables = {name: StringTable(_load_array(folder, f"{name}.bytes"), _load_array(folder, f"{name}.offsets"))
              for name in _STRING_TABLES}
    aliases: Sequence = AliasTable(StringTable(_load_array(folder, "aliases.bytes"),
                                               _load_array(folder, "aliases.offsets")),
                                   _load_array(folder, "aliases.pointer"))
    if lazy_strings is None:
        lazy_strings = len(tables["entity_ids"]) > LAZY_STRINGS_ABOVE
    if not lazy_strings:
        tables = {name: list(table) for name, table in tables.items()}
        strings = list(aliases.strings)
        pointer = aliases.pointer.tolist()
        aliases = [strings[a:b] for a, b in zip(pointer, pointer[1:])]
    kg = KnowledgeGraph(
        entity_ids=tables["entity_ids"], entity_names=tables["entity_names"],
        entity_descriptions=tables["entity_descriptions"], entity_aliases=aliases,
        entity_category=_load_array(folder, "entity_category"),
        category_names=list(tables["category_names"]),
        relation_ids=list(tables["relation_ids"]), relation_names=list(tables["relation_names"]),
        relation_descriptions=list(tables["relation_descriptions"]),
        triples=_load_array(folder, "triples"),
    )
    kg.attach_adjacency(CSRAdjacency(**{name: _load_array(folder, f"adjacency.{name}")
                                        for name in _ADJACENCY}))
    return kg


# public loaders / savers -----------------------------------------------------------------------
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
    problems = _missing(directory)
    if problems:
        raise KGFormatError(problems)
    if use_cache and _cache_is_fresh(directory):
        try:
            return _read_cache(directory, lazy_strings)
        except (OSError, ValueError, KeyError) as error:
            logger.warning("%s: unreadable cache (%s); rebuilding it", directory / CACHE_DIR, error)
    read_ns = time.time_ns()
    stamps = _source_stamps(directory)
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
        raise KGFormatError([Problem(str(path), None, "missing file")])
    problems: list[Problem] = []
    corpus = _parse_corpus(path, kg.entity_index, None, problems)
    if any(p.is_error for p in problems):
        raise KGFormatError(problems)
    return corpus


def _check_ids(ids: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if not value or any(c in value for c in _FORBIDDEN_IN_IDS):
            raise ValueError(f"{what} id {value!r} is empty or contains a tab or line break")
        if value in seen:
            raise ValueError(f"duplicate {what} id {value!r}")
        seen.add(value)


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
        for i in range(kg.num_entities):
            c = int(kg.entity_category[i])
            yield json.dumps({"id": entity_ids[i], "name": kg.entity_names[i],
                              "description": kg.entity_descriptions[i],
                              "category": categories[c] if c >= 0 else None,
                              "aliases": list(kg.entity_aliases[i])}, ensure_ascii=False)

    def relations():
        for i in range(kg.num_relations):
            yield json.dumps({"id": relation_ids[i], "name": kg.relation_names[i],
                              "description": kg.relation_descriptions[i]}, ensure_ascii=False)

    def triples():
        e = np.array(entity_ids, dtype=object)
        r = np.array(relation_ids, dtype=object)
        for start in range(0, kg.num_triples, 1 << 16):
            block = kg.triples[start:start + (1 << 16)]
            yield from map("\t".join, zip(e[block[:, 0]], r[block[:, 1]], e[block[:, 2]]))

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
