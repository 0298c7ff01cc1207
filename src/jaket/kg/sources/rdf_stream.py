"""Large RDF dumps (N-Triples, N-Quads, Turtle, TriG; ``.gz`` too) imported as a stream: memory
bounded by the KG being built, not by a parser's graph.

The mapping is :mod:`jaket.kg.sources.rdf`'s, to the letter (the same entities, names, aliases,
descriptions, categories, relations and triples as the ``rdflib`` path; tested on the same files):
only its reading differs. ``pyoxigraph`` parses the file as a stream of triples; relation triples
are kept as three ``int32`` columns of interned ids (12 bytes a triple), the annotations (labels,
descriptions, types) as the ``rdflib`` path keeps them, and nothing else is held. Duplicate
relation triples are merged at the end; ``rdf_triples`` in the report counts the triples as read.
N-Triples, the format of large dumps, goes through the fast lane of
:mod:`jaket.kg.sources.ntriples` when pyarrow is installed: the lines of plain shape read by
vectorised regular expressions a block at a time, the others by ``pyoxigraph``, two shares of the
file read by two threads on a machine with two cores or more.

    kg, report = load_rdf_stream("dump.nt.gz")

docs/performance.md ("Importing a large RDF dump") has its throughput and peak memory beside the
``rdflib`` path's (``python -m benchmarks.rdf_import``).
"""

from __future__ import annotations

import gzip
import io
import logging
from array import array
from pathlib import Path

import numpy as np

from jaket.jsonio import wide_encoding
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources import ntriples
from jaket.kg.sources.formats import wrong_command
from jaket.kg.sources.rdf import (_ANNOTATIONS, OWL, RDF_TYPE, RDFImportError, _rank, _Statements, assemble_kg,
                                  guess_format, load_rdf)

logger = logging.getLogger(__name__)

#: files this large or larger are streamed by default (below it rdflib's graph is small and its
#: report counts distinct triples)
STREAM_ABOVE = 16 << 20
#: the formats read as a stream (rdflib's format names -> pyoxigraph's)
STREAMED = {"nt": "N_TRIPLES", "nquads": "N_QUADS", "turtle": "TURTLE", "trig": "TRIG"}


def _open(path: Path):
    """A binary handle on the file (decompressed when ``.gz``), past a UTF-8 byte order mark."""
    handle = gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb")
    if handle.read(3) != b"\xef\xbb\xbf":
        handle.seek(0)
    return handle


class _Range(io.RawIOBase):
    """The bytes ``[start, end)`` of a file, as a readable stream (one worker's share of a dump)."""

    def __init__(self, path: Path, start: int, end: int):
        self.handle = _open(path) if start == 0 else path.open("rb")
        if start:
            self.handle.seek(start)
        self.left = end - max(start, self.handle.tell())

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            return 0
        view = memoryview(buffer)[:self.left]
        count = self.handle.readinto(view)
        self.left -= count
        return count

    def close(self) -> None:
        self.handle.close()
        super().close()


def _line_of(path: Path, start: int, line: int) -> int:
    """The file's line number of line ``line`` of the share starting at byte ``start``."""
    if not start:
        return line
    with path.open("rb") as handle:
        before = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(min(1 << 24, start - handle.tell())) or b"",
                                                          b""))
    return before + line


def _parse(path: Path, fmt: str, start: int = 0, end: int | None = None):
    """The triples of the file (of its bytes ``[start, end)``) as pyoxigraph reads them;
    RDFImportError naming ``path:line``."""
    import pyoxigraph

    handle = _open(path) if end is None else _Range(path, start, end)
    try:
        yield from pyoxigraph.parse(input=handle, format=getattr(pyoxigraph.RdfFormat, STREAMED[fmt]),
                                    base_iri=path.absolute().as_uri())
    except SyntaxError as error:
        line = getattr(error, "lineno", None)
        where = f"{path}:{_line_of(path, start, line)}" if line else str(path)
        with _open(path) as again:
            wide = wide_encoding(again.read(4))
        if wide:
            raise RDFImportError(f"{path}:1: {wide}") from None
        message = " ".join(str(error.msg if hasattr(error, "msg") else error).split())[:300]
        raise RDFImportError(f"{where}: malformed {fmt} ({message})") from None
    except (OSError, EOFError, UnicodeDecodeError) as error:  # a broken .gz, bytes that are not UTF-8
        raise RDFImportError(f"{path}: malformed {fmt} ({' '.join(str(error).split())[:300]})") from None
    finally:
        handle.close()


def _read(path: Path, fmt: str, start: int = 0, end: int | None = None, lane: bool | None = None):
    """``(statements, ids, predicate ids, (heads, relations, tails), read)``: the annotations and types
    as the rdflib path sorts them, and the relation triples as interned id columns. N-Triples goes
    through the fast lane (:mod:`jaket.kg.sources.ntriples`) when pyarrow is installed (``lane``:
    force it on or off); a share the lane refuses is read again here, for the message. (The loop is
    the import's hot path: names bound locally, an id looked up once.)"""
    import pyoxigraph

    literal, named = pyoxigraph.Literal, pyoxigraph.NamedNode
    found = _Statements()
    labels, types, ignored = found.labels, found.types, found.ignored_literals
    ids: dict[str, int] = {}
    ids_get = ids.get
    heads, relations, tails = array("i"), array("i"), array("i")
    add_head, add_relation, add_tail = heads.append, relations.append, tails.append
    predicate_ids: dict[str, int] = {}
    blank = 0

    def take(s, p, o) -> None:
        nonlocal blank
        kind = type(o)
        if type(s) is not named or (kind is not named and kind is not literal):
            blank += 1
            return
        s_iri, p_iri = s.value, p.value
        r = predicate_ids.get(p_iri)
        if r is None:
            r = predicate_ids[p_iri] = len(predicate_ids)
        if kind is named:
            if p_iri == RDF_TYPE:
                types.setdefault(s_iri, set()).add(o.value)
                return
            h = ids_get(s_iri)
            if h is None:
                h = ids[s_iri] = len(ids)
            o_iri = o.value
            t = ids_get(o_iri)
            if t is None:
                t = ids[o_iri] = len(ids)
            add_head(h)
            add_relation(r)
            add_tail(t)
        elif p_iri in _ANNOTATIONS:
            labels.setdefault(s_iri, []).append((p_iri, o.value, _rank(o.language)))
        else:
            ignored[p_iri] += 1

    if fmt == "nt" and (ntriples.available() if lane is None else lane):
        handle = _open(path) if end is None else _Range(path, start, end)
        try:
            read, _ = ntriples.read_lines(handle, found, ids, predicate_ids, (heads, relations, tails),
                                          _ANNOTATIONS, RDF_TYPE, take)
        except ntriples.Refused:
            return _read(path, fmt, start, end, lane=False)
        finally:
            handle.close()
    else:
        read = 0
        for s, p, o, _ in _parse(path, fmt, start, end):
            read += 1
            take(s, p, o)
    found.blank = blank
    found.predicates.update(predicate_ids)
    found.subjects.update(labels, types)
    return found, ids, predicate_ids, (heads, relations, tails), read


def _unique_rows(rows: np.ndarray, entities: int, relations: int) -> np.ndarray:
    """The distinct ``(head, relation, tail)`` rows, sorted, as ``int32`` (one int64 key a row when
    it fits: a 1-D sort, several times faster than ``np.unique``)."""
    if not len(rows):
        return np.zeros((0, 3), np.int32)
    if entities * entities * max(relations, 1) >= 2 ** 62:
        return np.unique(rows, axis=0).astype(np.int32)
    keys = (rows[:, 0] * relations + rows[:, 1]) * entities + rows[:, 2]
    keys.sort()  # sort and drop repeats: numpy 2's hash-based unique is several times slower here
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    head_relation, tail = np.divmod(keys, entities)
    head, relation = np.divmod(head_relation, relations)
    return np.stack([head, relation, tail], axis=1).astype(np.int32)


#: N-Triples files above this size are read by two processes, each a half of the lines
PARALLEL_ABOVE = 64 << 20


def _shares(path: Path, workers: int) -> list[tuple[int, int]]:
    """``workers`` byte ranges of the file, each ending at a line end."""
    size = path.stat().st_size
    bounds = [0]
    with path.open("rb") as handle:
        for k in range(1, workers):
            handle.seek(max(bounds[-1], size * k // workers))
            handle.readline()
            bounds.append(min(size, handle.tell()))
    bounds.append(size)
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _read_share(args):
    path, fmt, start, end = args
    found, ids, predicate_ids, columns, read = _read(path, fmt, start, end)
    return found, list(ids), list(predicate_ids), columns, read


def _merge(shares):
    """One :func:`_read` result of the shares' (ids re-interned, annotations and types joined)."""
    found, ids_list, predicate_list, (heads, relations, tails), read = shares[0]
    # a share read in this process hands its dicts over; one read by a worker process, lists
    ids = ids_list if isinstance(ids_list, dict) else {iri: k for k, iri in enumerate(ids_list)}
    predicate_ids = predicate_list if isinstance(predicate_list, dict) else {p: k for k, p in enumerate(predicate_list)}
    heads, relations, tails = (np.frombuffer(c, dtype=np.int32) for c in (heads, relations, tails))
    columns = [[heads], [relations], [tails]]
    for other, other_ids, other_predicates, (h, r, t), other_read in shares[1:]:
        remap = np.fromiter((ids.setdefault(iri, len(ids)) for iri in other_ids), dtype=np.int32, count=len(other_ids))
        p_remap = np.fromiter((predicate_ids.setdefault(p, len(predicate_ids)) for p in other_predicates),
                              dtype=np.int32, count=len(other_predicates))
        columns[0].append(remap[np.frombuffer(h, dtype=np.int32)])
        columns[1].append(p_remap[np.frombuffer(r, dtype=np.int32)])
        columns[2].append(remap[np.frombuffer(t, dtype=np.int32)])
        for subject, entries in other.labels.items():
            found.labels.setdefault(subject, []).extend(entries)
        for subject, kinds in other.types.items():
            found.types.setdefault(subject, set()).update(kinds)
        found.ignored_literals.update(other.ignored_literals)
        found.predicates |= other.predicates
        found.subjects |= other.subjects
        found.blank += other.blank
        read += other_read
    merged = tuple(np.concatenate(c) if len(c) > 1 else c[0] for c in columns)
    return found, ids, predicate_ids, merged, read


def _read_all(path: Path, fmt: str, workers: int | None = None):
    """:func:`_read` of the whole file; an N-Triples file above :data:`PARALLEL_ABOVE` (not
    compressed) read a share of its lines by each of two workers when the machine has several
    cores: threads when the fast lane reads it (its regular expressions and hashing run outside the
    GIL, and nothing is pickled back), processes otherwise."""
    import os

    workers = workers or min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    if fmt != "nt" or workers < 2 or path.suffix.lower() == ".gz" or path.stat().st_size < PARALLEL_ABOVE:
        return _read(path, fmt)
    if ntriples.available():
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as pool:
            return _merge(list(pool.map(lambda share: _read(path, fmt, *share), _shares(path, workers))))
    import multiprocessing

    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with context.Pool(workers) as pool:
        shares = pool.map(_read_share, [(path, fmt, a, b) for a, b in _shares(path, workers)])
    return _merge(shares)


def load_rdf_stream(path, fmt: str) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` of a file in one of :data:`STREAMED`'s formats, mapped exactly as
    :func:`jaket.kg.sources.rdf.load_rdf` maps it (module docstring)."""
    path = Path(path)
    found, ids, predicate_ids, (heads, relations, tails), read = _read_all(path, fmt)
    interned = list(ids)  # old id -> IRI
    classes = {c for cs in found.types.values() for c in cs}
    entity_set = set(ids) | {s for s in found.subjects if s not in found.predicates and s not in classes}
    entity_ids = sorted(entity_set)
    index = {e: i for i, e in enumerate(entity_ids)}
    remap = np.fromiter((index[iri] for iri in interned), dtype=np.int64, count=len(interned))
    predicate_order = list(predicate_ids)
    relation_ids = sorted({predicate_order[r] for r in np.unique(np.frombuffer(relations, dtype=np.int32)).tolist()})
    r_index = {r: i for i, r in enumerate(relation_ids)}
    r_remap = np.array([r_index.get(p, -1) for p in predicate_order], dtype=np.int64)
    rows = np.stack([remap[np.frombuffer(heads, dtype=np.int32)], r_remap[np.frombuffer(relations, dtype=np.int32)],
                     remap[np.frombuffer(tails, dtype=np.int32)]], axis=1) if len(heads) else np.zeros((0, 3), np.int64)
    del heads, relations, tails
    triples = _unique_rows(rows, len(entity_ids), len(relation_ids))
    kg, tally = assemble_kg(found, entity_ids, classes, relation_ids, triples)
    ignored = found.ignored_literals
    lane = fmt == "nt" and ntriples.available()
    report = {"source": "rdf", "file": str(path),
              "reader": "pyoxigraph (streamed)" + (" with the N-Triples fast lane (pyarrow)" if lane else ""),
              "rdf_triples": read,
              "entities": kg.num_entities, "relations": kg.num_relations, "triples": kg.num_triples,
              "categories": kg.num_categories, **tally,
              "literal_triples_ignored": sum(ignored.values()),
              "literal_triples_ignored_by_predicate": dict(ignored.most_common(50)),
              "blank_node_triples_ignored": found.blank}
    declared = {kind: sum(1 for types in found.types.values() if OWL + kind in types)
                for kind in ("Class", "Restriction")}
    if any(declared.values()):
        report["owl_declarations"] = {f"owl:{kind}": count for kind, count in declared.items()}
        logger.warning("%s declares %d owl:Class and %d owl:Restriction: an OWL ontology, read here as plain RDF; "
                       "`jaket kg import owl %s --out DIR` keeps the restrictions", path, declared["Class"],
                       declared["Restriction"], path)
    return kg, report


def streams(fmt: str) -> bool:
    """Whether ``fmt`` (an rdflib format name) is read as a stream here (pyoxigraph installed)."""
    if fmt not in STREAMED:
        return False
    try:
        import pyoxigraph  # noqa: F401
    except ImportError:
        return False
    return True


def import_rdf(path, fmt: str | None = None, reader: str = "auto") -> tuple[KnowledgeGraph, dict]:
    """``jaket kg import rdf``: a file of :data:`STREAM_ABOVE` bytes or more in N-Triples, N-Quads,
    Turtle or TriG streamed (:func:`load_rdf_stream`; ``reader="stream"`` whatever its size) when
    pyoxigraph is installed, any other (or ``reader="rdflib"``) through
    :func:`jaket.kg.sources.rdf.load_rdf`; the same KG either way (the report of a stream counts a
    triple given twice twice)."""
    path = Path(path)
    if reader not in ("auto", "stream", "rdflib"):
        raise ValueError(f"reader {reader!r}: choose auto, stream or rdflib")
    if not path.is_file() or reader == "rdflib":
        return load_rdf(path, fmt)
    refusal = wrong_command(path, "rdf") if fmt is None else None
    if refusal:
        raise RDFImportError(refusal)
    fmt = fmt or guess_format(path)
    if reader == "stream" and not streams(fmt):
        raise RDFImportError(f"{path}: {fmt} is not read as a stream (N-Triples, N-Quads, Turtle and TriG are, "
                             "with pyoxigraph installed: pip install 'jaket[rdf]')")
    if reader == "stream" or (streams(fmt) and path.stat().st_size >= STREAM_ABOVE):
        return load_rdf_stream(path, fmt)
    return load_rdf(path, fmt)


__all__ = ["STREAMED", "STREAM_ABOVE", "import_rdf", "load_rdf_stream", "streams"]
