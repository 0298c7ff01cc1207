"""The N-Triples fast lane of the streamed import: the lines of plain shape read by vectorised
regular expressions (``pyarrow.compute``, RE2) in blocks of a few megabytes, every other line by
``pyoxigraph`` as before, with the same result.

An N-Triples file holds one triple a line. Most lines of a real dump have one of two shapes::

    <IRI> <IRI> <IRI> .
    <IRI> <IRI> "text without escapes"@lang .        (or ^^<IRI>, or no tag)

For those, the subject, predicate and object are cut out of a whole block of lines at once, the
IRIs of the whole stream interned at its end with one ``dictionary_encode``, and only the
annotations (labels, descriptions, types) touch Python objects one by one. A line of any other shape (a blank node, an
escape, a language tag of unusual form, an IRI with a character outside the conservative set
below, odd spacing) is handed to ``pyoxigraph``, with the block's other such lines, so nothing is
decided twice: the lane takes only lines whose reading is not in doubt, and the KG is the one
:func:`jaket.kg.sources.rdf_stream._read` makes (tested on the same files). A block that is not
UTF-8, or a line ``pyoxigraph`` refuses, sends the whole share back to that reader, whose message
names the file and line.

The conservative IRI: a scheme, ``:``, then unreserved, sub-delimiter, ``:/?@#`` and ``%XX``
characters only (no space, no ``<>"{}|^`\\``, no non-ASCII, no IPv6 brackets), so every IRI taken
here is one ``pyoxigraph`` reads unchanged.
"""

from __future__ import annotations


import numpy as np

#: bytes of the file read as one block
BLOCK = 16 << 20

_CHAR = r"(?:[A-Za-z0-9._~!$&'()*+,;=:/?@-]|%[0-9A-Fa-f]{2})"


_IRI = rf"<[A-Za-z][A-Za-z0-9+.-]*:{_CHAR}*(?:#{_CHAR}*)?>"
_END = r" \.\r?\n?$"
#: ``<s> <p> <o> .``, one space between terms (the canonical form dumps are written in)
IRI_LINE = rf"^{_IRI} {_IRI} {_IRI}{_END}"
#: ``<s> <p> "text"`` with an optional language tag (language, script or region) or datatype
LITERAL_LINE = (rf'^{_IRI} {_IRI} "[^"\\\r\n]*"'
                rf"(?:@[A-Za-z]{{2,3}}(?:-(?:[A-Za-z]{{2}}|[A-Za-z]{{4}}|[0-9]{{3}}))?|\^\^{_IRI})?{_END}")
#: a line without a triple
EMPTY_LINE = r"^[ \t]*(?:#[^\n]*)?\r?\n?$"


def available() -> bool:
    """Whether the lane can run (``pyarrow`` installed)."""
    try:
        import pyarrow.compute  # noqa: F401
    except ImportError:
        return False
    return True


def _blocks(handle, block: int):
    """``(bytes, first line number)`` of whole lines, about ``block`` bytes each."""
    carry, line = b"", 1
    while True:
        data = handle.read(block)
        if not data:
            if carry:
                yield carry, line
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if not cut:
            carry = data
            continue
        carry = data[cut:]
        yield data[:cut], line
        line += data.count(b"\n", 0, cut)


def _lines(data: bytes):
    """The block's lines (each with its line end) as one Arrow string array, without a copy;
    ``None`` when the block is not UTF-8."""
    import pyarrow as pa

    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    if not len(ends) or ends[-1] != len(data):
        ends = np.append(ends, len(data))
    offsets = np.concatenate([[0], ends]).astype(np.int32)
    lines = pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(data))
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return lines


class Refused(Exception):
    """A block the lane cannot read (not UTF-8, or a line pyoxigraph refuses): the caller reads the
    file its usual way for the message."""


def read_lines(handle, found, ids: dict, predicate_ids: dict, columns, annotations: frozenset | set,
               rdf_type: str, on_triple, block: int = BLOCK) -> tuple[int, int]:
    """Read an N-Triples stream into the reader's structures (:func:`rdf_stream._read`'s): ``found``
    (a ``_Statements``), the interned ``ids`` and ``predicate_ids``, ``columns`` (three ``array('i')``);
    ``on_triple(s, p, o)`` takes each triple of a line outside the lane (pyoxigraph's terms).
    Returns ``(triples read, lines handed to pyoxigraph)``; raises :class:`Refused`.

    Relation lines are kept as their terms, brackets and all (``split`` at the three spaces), and
    interned once at the end of the stream by one ``dictionary_encode``: a distinct IRI becomes a
    Python string once, however many lines hold it."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyoxigraph

    labels, types, ignored = found.labels, found.types, found.ignored_literals
    kept = pa.array(sorted(annotations), pa.string())
    type_line = f"> <{rdf_type}> <"  # an IRI holds no space and no bracket: only a type line has it
    read = handed = 0
    terms: list = []  # four a relation line: "<s>", "<p>", "<o>", ".\n"
    for data, first_line in _blocks(handle, block):
        lines = _lines(data)
        if lines is None:
            raise Refused(first_line)
        is_iri = pc.match_substring_regex(lines, IRI_LINE)
        iri_lines, rest = lines.filter(is_iri), lines.filter(pc.invert(is_iri))
        is_type = pc.match_substring(iri_lines, type_line)
        relation_lines, type_lines = iri_lines.filter(pc.invert(is_type)), iri_lines.filter(is_type)
        is_literal = pc.match_substring_regex(rest, LITERAL_LINE)
        literal_lines, other = rest.filter(is_literal), rest.filter(pc.invert(is_literal))
        other = other.filter(pc.invert(pc.match_substring_regex(other, EMPTY_LINE)))
        read += len(iri_lines) + len(literal_lines)
        if len(relation_lines):
            terms.append(pc.split_pattern(relation_lines, " ", max_splits=3).flatten())
        if len(type_lines):
            predicate_ids.setdefault(rdf_type, len(predicate_ids))
            cut = pc.split_pattern(type_lines, " ", max_splits=3)
            subjects, kinds = (pc.utf8_slice_codeunits(pc.list_element(cut, k), 1, -1) for k in (0, 2))
            for subject, kind in zip(subjects.to_pylist(), kinds.to_pylist()):
                types.setdefault(subject, set()).add(kind)
        if len(literal_lines):  # annotations kept (English or untagged first), the rest counted
            cut = pc.split_pattern(literal_lines, " ", max_splits=2)
            subjects, predicates = (pc.utf8_slice_codeunits(pc.list_element(cut, k), 1, -1) for k in (0, 1))
            quoted = pc.split_pattern(pc.list_element(cut, 2), '"', max_splits=2)
            text, tail = pc.list_element(quoted, 1), pc.list_element(quoted, 2)
            for predicate in pc.unique(predicates).to_pylist():
                predicate_ids.setdefault(predicate, len(predicate_ids))
            wanted = pc.is_in(predicates, value_set=kept)
            for predicate, count in zip(*_counts(predicates.filter(pc.invert(wanted)))):
                ignored[predicate] += count
            english = pc.or_(pc.invert(pc.starts_with(tail, "@")), pc.starts_with(pc.ascii_lower(tail), "@en"))
            for subject, predicate, value, en in zip(*(column.filter(wanted).to_pylist()
                                                       for column in (subjects, predicates, text, english))):
                labels.setdefault(subject, []).append((predicate, value, 0 if en else 1))
        if len(other):
            handed += len(other)
            blob = "".join(other.to_pylist()).encode("utf-8")
            try:
                for subject, predicate, obj, _ in pyoxigraph.parse(input=blob, format=pyoxigraph.RdfFormat.N_TRIPLES):
                    read += 1
                    on_triple(subject, predicate, obj)
            except SyntaxError:
                raise Refused(first_line) from None
    if terms:
        _intern(terms, ids, predicate_ids, columns)
    return read, handed


def _intern(terms: list, ids: dict, predicate_ids: dict, columns) -> None:
    """Append the relation lines' ``(head, relation, tail)`` ids to ``columns``, interning their IRIs
    (entities into ``ids``, predicates into ``predicate_ids``) in one hash table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = pc.dictionary_encode(pa.chunked_array(terms))
    dictionary = codes.chunk(0).dictionary
    rows = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in codes.chunks]).reshape(-1, 4)
    del codes, terms[:]
    heads, relations, tails = columns
    for table, role, places in ((ids, "entity", (0, 2)), (predicate_ids, "predicate", (1,))):
        used = np.zeros(len(dictionary), dtype=bool)
        for place in places:
            used[rows[:, place]] = True
        at = np.flatnonzero(used)
        iris = pc.utf8_slice_codeunits(dictionary.take(pa.array(at)), 1, -1).to_pylist()
        mapped = np.full(len(dictionary), -1, dtype=np.int32)
        mapped[at] = np.fromiter((table.setdefault(iri, len(table)) for iri in iris), dtype=np.int32, count=len(at))
        if role == "entity":
            heads.frombytes(mapped[rows[:, 0]].tobytes())
            tails.frombytes(mapped[rows[:, 2]].tobytes())
        else:
            relations.frombytes(mapped[rows[:, 1]].tobytes())


def _counts(values):
    """``(values, counts)`` of a string array, as lists."""
    import pyarrow.compute as pc

    if not len(values):
        return [], []
    counted = pc.value_counts(values)
    return counted.field("values").to_pylist(), counted.field("counts").to_pylist()


__all__ = ["BLOCK", "EMPTY_LINE", "IRI_LINE", "LITERAL_LINE", "Refused", "available", "read_lines"]
