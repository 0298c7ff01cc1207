"""The compiled cache of a KG directory: ``DIR/.jaket-cache/``, loaded in about a second for 1M entities.

It holds ``.npy`` arrays only (strings as one UTF-8 byte blob plus int64 offsets, see
:mod:`jaket.kg.strings`; loaded with ``allow_pickle=False``) and ``manifest.json`` with the size,
``mtime_ns``, ``ctime_ns``, inode, device and SHA-256 of each source file; it is rebuilt when any
stat field changes, or the content of a source edited just before the cache was built
(:func:`cache_is_fresh`), and always written atomically (a temporary directory renamed into place).
A cache of another :data:`CACHE_FORMAT` (an older jaket) is not fresh: it is rebuilt.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaket.atomic import atomic_directory, write_json
from jaket.jsonio import read_json
from jaket.kg.graph import CSRAdjacency, KnowledgeGraph
from jaket.kg.parsing import SOURCES
from jaket.kg.strings import AliasTable, StringTable

CACHE_DIR = ".jaket-cache"
CACHE_FORMAT = 2


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


def source_stamps(directory: Path) -> dict:
    """What the cache is keyed by: each source's size, mtime, ctime, inode and device (any write
    moves the ctime, which no user call can set back) and its SHA-256."""
    return {name: _stat_stamp(directory / name) | {"sha256": _sha256(directory / name)}
            for name in SOURCES}


def cache_is_fresh(directory: Path) -> bool:
    """Whether the cache was compiled from the sources as they are now: every stat field equal,
    and, for a source changed within :data:`RACY_NS` before the stamps were read (a same-size
    edit in the same clock tick would keep every field), an equal SHA-256 as well."""
    manifest_path = directory / CACHE_DIR / "manifest.json"
    try:
        manifest = read_json(manifest_path)
        if manifest.get("format") != CACHE_FORMAT:
            return False
        sources, read_ns = manifest["sources"], manifest["sources_read_ns"]
        racy = []
        for name in SOURCES:
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
    ``stamps`` (:func:`source_stamps`) read at ``read_ns`` (``time.time_ns()`` just before)."""
    directory = Path(directory)
    if stamps is None:
        read_ns, stamps = time.time_ns(), source_stamps(directory)
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


def read_cache(directory: Path, lazy_strings: bool | None = None) -> KnowledgeGraph:
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


__all__ = ["CACHE_DIR", "CACHE_FORMAT", "LAZY_STRINGS_ABOVE", "RACY_NS", "cache_is_fresh", "read_cache",
           "source_stamps", "write_cache"]
