"""Wikidata5M (Wang et al., KEPLER, 2021), Wikidata with a description per entity, as a JAKET KG.

The release is a folder of tab-separated UTF-8 files:

- ``wikidata5m_entity.txt``: ``Q42<TAB>Douglas Adams<TAB>Douglas Noël Adams<TAB>...``: an entity
  id, then its names; the first is the **name**, the others are **aliases**;
- ``wikidata5m_relation.txt``: ``P69<TAB>educated at<TAB>alma mater<TAB>...``, likewise;
- ``wikidata5m_text.txt``: ``Q42<TAB>Douglas Noël Adams was an English author ...``: the
  **description** (the first paragraph of the entity's Wikipedia page; a tab inside it is kept);
- triples ``head<TAB>relation<TAB>tail``: ``wikidata5m_transductive_{train,valid,test}.txt``,
  ``wikidata5m_inductive_{train,valid,test}.txt`` and ``wikidata5m_all_triplet.txt``.

Mapping (``setting``): the KG holds every entity and relation of the two name files and the
**training** triples of the transductive (default) or inductive setting, or every triple
(``all``); the valid and test triples are evaluation splits, checked against the KG and written
beside it as ``valid.txt`` / ``test.txt`` (the WN18RR format that ``jaket finetune
link-prediction --eval`` reads). An entity without a description gets its name as description;
a description that does not start with the name is prefixed with ``"name: "`` (so the paper's
description mention, Eq. 7, is found); descriptions longer than ``max_description_chars`` are cut
there (the model reads 64 tokens of each). A relation's description is its name and aliases.
**Category** (the paper: "we use the *instance of* relation to find the category of each
entity"): the name of the tail of the entity's first ``category_relation`` (``P31``) triple; those
triples then leave the KG (``keep_category_triples=False``), since an edge to the category would
give the label away to the knowledge module. Everything left out or changed is counted in the
report.

The files are read line by line (a block of lines at a time), never whole, and strings are kept
in compact byte tables (:class:`jaket.kg.io.StringTable`); the descriptions, the bulk of the data,
can be kept in memory-mapped files (``work_dir``; the command line does so), so the importer's
memory grows with the ids, names and triples it keeps, not with the file sizes. Every bad line is a :class:`jaket.kg.io.Problem`
(``path:line: message``); :class:`Wikidata5MError` lists them (the first 100, then a count).
"""

from __future__ import annotations

import logging
import time
from array import array
from itertools import repeat
from pathlib import Path

import numpy as np

from jaket.kg.errors import KGFormatError, Problem, not_a_file
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import wide_encoding_problem
from jaket.kg.strings import AliasTable, StringTable

logger = logging.getLogger(__name__)

ENTITY_FILE = "wikidata5m_entity.txt"
RELATION_FILE = "wikidata5m_relation.txt"
TEXT_FILE = "wikidata5m_text.txt"
SETTINGS = ("transductive", "inductive", "all")
MAX_LISTED_PROBLEMS = 100
_BLOCK_BYTES = 1 << 24  # lines are read in blocks of about 16 MB


class Wikidata5MError(KGFormatError):
    """A Wikidata5M folder cannot be imported; ``problems`` lists why (``path:line: message``)."""


def triple_files(setting: str) -> dict[str, str]:
    """``{split: file name}`` of a setting (the ``train`` file is the KG)."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown Wikidata5M setting {setting!r}; choose from {', '.join(SETTINGS)}")
    if setting == "all":
        return {"train": "wikidata5m_all_triplet.txt"}
    return {split: f"wikidata5m_{setting}_{split}.txt" for split in ("train", "valid", "test")}


class _Problems:
    """Problems found so far: the first :data:`MAX_LISTED_PROBLEMS` are kept, the rest counted."""

    def __init__(self):
        self.listed: list[Problem] = []
        self.unlisted = 0

    def add(self, path, line: int | None, message: str) -> None:
        if len(self.listed) < MAX_LISTED_PROBLEMS:
            self.listed.append(Problem(str(path), line, message))
        else:
            self.unlisted += 1

    def __bool__(self) -> bool:
        return bool(self.listed)

    def raise_if_any(self) -> None:
        if self.listed:
            problems = list(self.listed)
            if self.unlisted:
                problems.append(Problem(problems[-1].path, None, f"... and {self.unlisted:,} more problems"))
            raise Wikidata5MError(problems)


def _blocks(path: Path, problems: _Problems):
    """``(first line number, [lines])`` blocks of a text file (line ends removed); undecodable
    lines are problems and come back as ``None``."""
    number = 1
    with open(path, "rb") as handle:
        while True:
            raw = handle.readlines(_BLOCK_BYTES)
            if not raw:
                return
            if number == 1 and raw[0].startswith(b"\xef\xbb\xbf"):
                raw[0] = raw[0][3:]
            try:
                lines = b"".join(raw).decode("utf-8").split("\n")
                if lines[-1] == "":
                    lines.pop()
                if len(lines) != len(raw):  # a stray line separator inside a line: decode one by one
                    raise UnicodeDecodeError("utf-8", b"", 0, 1, "line count")
            except UnicodeDecodeError:
                lines = []
                for offset, item in enumerate(raw):
                    try:
                        lines.append(item.decode("utf-8").rstrip("\n"))
                    except UnicodeDecodeError as error:
                        problems.add(path, number + offset, f"invalid UTF-8 (byte {error.start} of the line)")
                        lines.append(None)
            yield number, [line.rstrip("\r") if line is not None else None for line in lines]
            number += len(raw)


class _Strings:
    """A growing :class:`StringTable`: UTF-8 bytes appended to one buffer (or, with ``spill``, to
    that file, memory-mapped when done), lengths to another."""

    def __init__(self, spill: Path | None = None):
        self.lengths = array("q")
        self.spill = spill
        self.blob = bytearray() if spill is None else None
        self._file = open(spill, "wb") if spill is not None else None

    def append(self, text: str) -> None:
        encoded = text.encode("utf-8")
        if self._file is not None:
            self._file.write(encoded)
        else:
            self.blob += encoded
        self.lengths.append(len(encoded))

    def __len__(self) -> int:
        return len(self.lengths)

    def table(self) -> StringTable:
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(self.lengths, dtype=np.int64), out=offsets[1:])
        if self._file is None:
            return StringTable(np.frombuffer(self.blob, dtype=np.uint8), offsets)  # no copy
        self._file.close()
        blob = np.memmap(self.spill, dtype=np.uint8, mode="r") if offsets[-1] else np.zeros(0, np.uint8)
        return StringTable(blob, offsets)


def _read_names(path: Path, what: str, problems: _Problems):
    """``(ids, names, aliases table, index)`` of an id<TAB>name<TAB>alias... file."""
    ids, names, aliases = _Strings(), _Strings(), _Strings()
    alias_counts = array("q")
    index: dict[str, int] = {}
    first_line: dict[str, int] = {}
    for start, lines in _blocks(path, problems):
        for offset, line in enumerate(lines):
            if line is None or not line.strip():
                continue
            fields = line.split("\t")
            identifier = fields[0].strip()
            labels = [f.strip() for f in fields[1:] if f.strip()]
            number = start + offset
            if not identifier:
                problems.add(path, number, f"empty {what} id")
                continue
            if not labels:
                problems.add(path, number, f"{what} {identifier!r} has no name (expected id<TAB>name[<TAB>alias...])")
                continue
            if identifier in first_line:
                problems.add(path, number, f"duplicate {what} id {identifier!r} (first at line {first_line[identifier]})")
                continue
            first_line[identifier] = number
            index[identifier] = len(ids)
            ids.append(identifier)
            names.append(labels[0])
            count = 0
            for alias in dict.fromkeys(labels[1:]):
                if alias != labels[0]:
                    aliases.append(alias)
                    count += 1
            alias_counts.append(count)
    pointer = np.zeros(len(alias_counts) + 1, dtype=np.int64)
    np.cumsum(np.frombuffer(alias_counts, dtype=np.int64), out=pointer[1:])
    return ids.table(), names.table(), AliasTable(aliases.table(), pointer), index


def _read_descriptions(path: Path, index: dict[str, int], names: StringTable, max_chars: int,
                       problems: _Problems, report: dict, work_dir: Path | None = None) -> StringTable:
    """Every entity's description in entity order (module docstring for the rules); with
    ``work_dir`` the text is kept in files there, memory-mapped, instead of in RAM."""
    n = len(names)
    texts = _Strings(work_dir / "descriptions-read.bin" if work_dir is not None else None)
    owner = array("q")
    seen_at = np.zeros(n, dtype=np.int64)
    unknown = truncated = 0
    for start, lines in _blocks(path, problems):
        for offset, line in enumerate(lines):
            if line is None or not line.strip():
                continue
            identifier, tab, text = line.partition("\t")
            number = start + offset
            text = text.strip()
            if not tab or not text:
                problems.add(path, number, "expected id<TAB>description")
                continue
            entity = index.get(identifier.strip(), -1)
            if entity < 0:
                unknown += 1
                continue
            if seen_at[entity]:
                problems.add(path, number, f"second description of {identifier.strip()!r} "
                                           f"(first at line {seen_at[entity]})")
                continue
            seen_at[entity] = number
            if max_chars and len(text) > max_chars:
                text = text[:max_chars]
                truncated += 1
            texts.append(text)
            owner.append(entity)
    found = texts.table()
    position = np.full(n, -1, dtype=np.int64)
    position[np.frombuffer(owner, dtype=np.int64)] = np.arange(len(owner))
    ordered = _Strings(work_dir / "descriptions.bin" if work_dir is not None else None)
    prefixed = 0
    for entity in range(n):
        name = names[entity]
        if position[entity] < 0:
            ordered.append(name)
            continue
        text = found[int(position[entity])]
        if not text.lower().startswith(name.lower()):
            text = f"{name}: {text}"
            prefixed += 1
        ordered.append(text)
    report.update(entities_without_description=int((position < 0).sum()),
                  descriptions_of_unknown_entities_skipped=unknown, descriptions_truncated=truncated,
                  descriptions_prefixed_with_name=prefixed)
    return ordered.table()


def _read_triples(path: Path, entities: dict[str, int], relations: dict[str, int],
                  problems: _Problems) -> np.ndarray:
    """(T, 3) int32 triples of a head<TAB>relation<TAB>tail file, read block by block."""
    parts = []
    missing = repeat(-1)
    for start, lines in _blocks(path, problems):
        if all(line is not None and line.count("\t") == 2 for line in lines):  # the usual case
            fields = "\t".join(lines).split("\t")
            heads = np.fromiter(map(entities.get, fields[0::3], missing), dtype=np.int64, count=len(lines))
            rels = np.fromiter(map(relations.get, fields[1::3], missing), dtype=np.int64, count=len(lines))
            tails = np.fromiter(map(entities.get, fields[2::3], missing), dtype=np.int64, count=len(lines))
            if not len(lines) or min(heads.min(), rels.min(), tails.min()) >= 0:
                parts.append(np.stack([heads, rels, tails], axis=1).astype(np.int32))
                continue
        rows = array("i")
        for offset, line in enumerate(lines):  # find and name every bad line of this block
            if line is None or not line.strip():
                continue
            fields = [f.strip() for f in line.split("\t")]
            number = start + offset
            if len(fields) != 3:
                problems.add(path, number, f"expected head<TAB>relation<TAB>tail, found {len(fields)} fields")
                continue
            h, r, t = entities.get(fields[0], -1), relations.get(fields[1], -1), entities.get(fields[2], -1)
            bad = [f"unknown {role} id {value!r} (not in {source})" for value, found, role, source in (
                (fields[0], h, "head entity", ENTITY_FILE), (fields[1], r, "relation", RELATION_FILE),
                (fields[2], t, "tail entity", ENTITY_FILE)) if found < 0]
            if bad:
                problems.add(path, number, "; ".join(bad))
                continue
            rows.extend((h, r, t))
        parts.append(np.frombuffer(rows, dtype=np.int32).reshape(-1, 3).copy())
    return np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int32)


def _categories(triples: np.ndarray, relation: int, names: StringTable, ids: StringTable, n: int):
    """``(entity_category, category_names, mask of the category triples)``: each entity's first
    ``relation`` triple's tail, named by the tail's name (its id too where two tails share a name)."""
    mask = triples[:, 1] == relation
    rows = triples[mask]
    heads, first = np.unique(rows[:, 0], return_index=True)
    tails = rows[first, 2].astype(np.int64)
    classes = np.unique(tails)
    labels = [names[int(c)] for c in classes]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    labels = [label if counts[label] == 1 else f"{label} ({ids[int(c)]})" for label, c in zip(labels, classes)]
    order = np.argsort(np.asarray(labels, dtype=object), kind="stable")
    category_names = [labels[i] for i in order]
    rank = np.empty(len(classes), dtype=np.int64)
    rank[order] = np.arange(len(classes))
    category = np.full(n, -1, dtype=np.int32)
    category[heads] = rank[np.searchsorted(classes, tails)]
    return category, category_names, mask


def load_wikidata5m(directory, setting: str = "transductive", category_relation: str | None = "P31",
                    keep_category_triples: bool = False, max_description_chars: int = 1000,
                    work_dir=None):
    """``(KnowledgeGraph, {split: (T, 3) int32 triples}, report)`` of a Wikidata5M folder; the
    splits are ``valid`` / ``test`` (none for ``setting="all"``). Mapping in the module docstring.

    ``work_dir``: a folder for the description text (memory-mapped files; the bulk of the data),
    which must outlive the returned KG's use; None keeps it in RAM."""
    directory = Path(directory)
    files = triple_files(setting)
    required = [ENTITY_FILE, RELATION_FILE, TEXT_FILE, files["train"]]
    missing = [problem for name in required
               if (problem := not_a_file(directory / name) or wide_encoding_problem(directory / name)) is not None]
    if not directory.is_dir():
        missing = [Problem(str(directory), None, "not a directory")]
    if missing:
        raise Wikidata5MError(missing)
    problems = _Problems()
    report: dict = {"source": "wikidata5m", "dir": str(directory), "setting": setting, "seconds": {}}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        report["seconds"][stage] = round(now - clock, 2)
        clock = now

    e_ids, e_names, e_aliases, e_index = _read_names(directory / ENTITY_FILE, "entity", problems)
    lap("entities")
    r_ids, r_names, r_aliases, r_index = _read_names(directory / RELATION_FILE, "relation", problems)
    descriptions = _read_descriptions(directory / TEXT_FILE, e_index, e_names, max_description_chars,
                                      problems, report, Path(work_dir) if work_dir is not None else None)
    lap("descriptions")
    triples = _read_triples(directory / files["train"], e_index, r_index, problems)
    splits = {}
    for split in ("valid", "test"):
        if split in files and (directory / files[split]).is_file():
            splits[split] = _read_triples(directory / files[split], e_index, r_index, problems)
        elif split in files:
            report.setdefault("splits_missing", []).append(files[split])
    lap("triples")
    problems.raise_if_any()
    n = len(e_ids)
    category = np.full(n, -1, dtype=np.int32)
    category_names: list[str] = []
    removed = 0
    relation = r_index.get(category_relation, -1) if category_relation else -1
    if category_relation and relation < 0:
        logger.warning("%s: relation %s not found: the entities get no category", directory / RELATION_FILE,
                       category_relation)
    if relation >= 0:
        category, category_names, mask = _categories(triples, relation, e_names, e_ids, n)
        if not keep_category_triples:
            removed = int(mask.sum())
            triples = triples[~mask]
    lap("categories")
    relation_descriptions = []
    for i in range(len(r_ids)):
        also = list(r_aliases[i])[:8]
        relation_descriptions.append(r_names[i] + (f" (also: {', '.join(also)})" if also else ""))
    kg = KnowledgeGraph(entity_ids=e_ids, entity_names=e_names, entity_descriptions=descriptions,
                        entity_aliases=e_aliases, entity_category=category, category_names=category_names,
                        relation_ids=list(r_ids), relation_names=list(r_names),
                        relation_descriptions=relation_descriptions, triples=triples,
                        _entity_lookup=e_index, _relation_lookup=r_index)
    report.update(entities=kg.num_entities, relations=kg.num_relations, triples=kg.num_triples,
                  categories=kg.num_categories, entities_with_category=int((category >= 0).sum()),
                  category_relation=category_relation if relation >= 0 else None,
                  category_triples_removed=removed,
                  splits={name: int(len(rows)) for name, rows in splits.items()},
                  aliases=int(len(e_aliases.strings)))
    return kg, splits, report
