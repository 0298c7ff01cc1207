"""Reading the plain-text files of a KG: lines (byte order mark, UTF-8 line by line) and id triples.

Every text file jaket reads (the directory format's files, WN18RR / PyKEEN triple files, texts to
link) goes through :func:`read_lines`, so all of them treat a UTF-8 byte order mark, Windows line
ends, blank lines and undecodable bytes the same way, and name the bad line as ``path:line``
(:class:`jaket.kg.errors.Problem`). Triple files (``head<TAB>relation<TAB>tail`` a line, string
ids) are read by :func:`read_triples`; :func:`read_split` resolves one against a KG, as the
evaluation splits of link prediction are.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from jaket.errors import EmptyInputError
from jaket.jsonio import JSONInputError, decode, quote, wide_encoding
from jaket.kg.errors import KGFormatError, Problem, not_a_file
from jaket.kg.graph import KnowledgeGraph

logger = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"


def read_lines(path: Path, problems: list[Problem], *, keep_blank: bool = False) -> list[tuple[int, str]]:
    """The lines of a UTF-8 text file as ``(line number, text)``, without line ends.

    A byte order mark at the start is dropped (even when a later line is bad), ``\\r\\n`` ends
    like ``\\n``; a line that is not valid UTF-8 becomes a :class:`Problem` and is left out, and a
    file in UTF-16 or UTF-32 (its byte order mark) is one problem and no line.
    Blank (white-space only) lines are left out unless ``keep_blank``. The whole file is decoded
    at once when it can be (the common case, several times faster than line by line); an
    ``OSError`` (missing file, a folder) is the caller's to report.
    """
    data = Path(path).read_bytes()
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
        if wide_encoding(data):  # one problem for the file, not one per line
            problems.append(Problem(str(path), 1, wide_encoding(data)))
            return []
    if text is not None:
        rows = text.split("\n")
        if "\r" in text:
            rows = [r.rstrip("\r") for r in rows]
    else:
        rows = []
        for number, raw in enumerate(data.split(b"\n"), start=1):
            try:
                rows.append(raw.decode("utf-8").rstrip("\r"))
            except UnicodeDecodeError as error:
                problems.append(Problem(str(path), number, f"invalid UTF-8 (byte {error.start} of the line)"))
                rows.append(None)
    if rows and rows[-1] == "":
        rows.pop()  # what follows the last line end is not a line
    if keep_blank:
        return [(number, line) for number, line in enumerate(rows, start=1) if line is not None]
    return [(number, line) for number, line in enumerate(rows, start=1) if line is not None and line.strip()]


def wide_encoding_problem(path: Path) -> Problem | None:
    """The one problem of a file in UTF-16 or UTF-32 (its first bytes are that byte order mark)."""
    try:
        with open(path, "rb") as handle:
            message = wide_encoding(handle.read(4))
    except OSError:
        return None
    return Problem(str(path), 1, message) if message else None


def refuse_empty(path: Path, option: str, work: str) -> None:
    """Before any work: an input file that holds nothing but white space (and a byte order mark) is
    refused, ``OPTION PATH: the file is empty (or only white space): nothing to WORK``
    (:class:`EmptyInputError`), the one behaviour of every command's input file. A missing or
    unreadable file is left to the reader, which names it. Reads up to the first character."""
    try:
        with open(path, "rb") as handle:
            chunk = handle.read(1 << 16).removeprefix(UTF8_BOM)
            while chunk:
                if chunk.strip():
                    return
                chunk = handle.read(1 << 16)
    except OSError:
        return
    raise EmptyInputError(f"{option} {path}: the file is empty (or only white space): nothing to {work}")


def read_field_lines(path: Path, problems: list[Problem], separator: str = "\t") -> list[tuple[int, str]]:
    """:func:`read_lines` of a file of ``separator``-separated fields: a line holding a separator is
    never blank, so a line of empty fields (``"\t\t"``) is kept for the caller to report, not
    skipped as white space."""
    return [(number, line) for number, line in read_lines(path, problems, keep_blank=True)
            if line.strip() or separator in line]


def read_text_file(path: str | Path, what: str = "") -> list[tuple[int, str]]:
    """:func:`read_lines` of a file that must exist and decode: a missing file or a bad line raises
    :class:`KGFormatError` naming it (``what``: the option the file came from, for the message)."""
    problems: list[Problem] = []
    suffix = f" ({what})" if what else ""
    try:
        lines = read_lines(Path(path), problems)
    except FileNotFoundError:
        raise KGFormatError([Problem(str(path), None, f"no such file{suffix}")]) from None
    except IsADirectoryError:
        raise KGFormatError([Problem(str(path), None, f"is a directory{suffix}")]) from None
    except OSError as error:
        raise KGFormatError([Problem(str(path), None, f"cannot read: {error.strerror or error}{suffix}")]) from None
    if problems:
        raise KGFormatError(problems)
    return lines


def json_object(path: str | Path, number: int, line: str, problems: list[Problem]) -> dict | None:
    """The JSON object of one JSONL line (:func:`jaket.jsonio.decode`: bounded depth and sizes,
    valid Unicode); a line that is not usable JSON, or not an object, becomes a :class:`Problem`
    naming ``path:line`` and gives None."""
    try:
        value = decode(line)
    except JSONInputError as error:
        problems.append(Problem(str(path), number, error.reason))
        return None
    if not isinstance(value, dict):
        problems.append(Problem(str(path), number, f"expected a JSON object, found {type(value).__name__}"))
        return None
    return value


def json_objects(path: str | Path, lines: Iterable[tuple[int, str]], problems: list[Problem]
                 ) -> list[tuple[int, dict]]:
    """:func:`json_object` of each numbered line; the lines that are not objects are left out."""
    out = []
    for number, line in lines:
        row = json_object(path, number, line, problems)
        if row is not None:
            out.append((number, row))
    return out


def _separator_name(separator: str) -> str:
    return "<TAB>" if separator == "\t" else separator


def read_triples(path, problems: list[Problem] | None = None, *, separator: str = "\t"
                 ) -> list[tuple[int, str, str, str]]:
    """``(line number, head, relation, tail)`` of every line of a triple file
    (``head<TAB>relation<TAB>tail``; ``separator`` for other files, e.g. MetaQA's ``|``), each id
    stripped of surrounding white space; blank lines are skipped.

    A malformed line (not three non-empty fields, invalid UTF-8) or a missing file is a
    :class:`Problem`: appended to ``problems`` when given (to report several files at once),
    otherwise raised as :class:`KGFormatError` listing every bad line.
    """
    path = Path(path)
    found: list[Problem] = []
    rows = []
    if not path.is_file():
        found.append(not_a_file(path))
    else:
        shape = _separator_name(separator).join(("head", "relation", "tail"))
        for number, line in read_field_lines(path, found, separator):
            parts = [p.strip() for p in line.split(separator)]
            if len(parts) != 3 or not all(parts):
                found.append(Problem(str(path), number, f"expected {shape}, got {quote(line)}"))
                continue
            rows.append((number, parts[0], parts[1], parts[2]))
        found.sort(key=lambda p: p.line or 0)
    if problems is not None:
        problems.extend(found)
    elif found:
        raise KGFormatError(found)
    return rows


def index_triples(rows: Iterable[tuple[str, str, str]], kg: KnowledgeGraph) -> tuple[np.ndarray, int]:
    """``(triples, skipped)``: the id triples ``rows`` as (T, 3) int64 indices of ``kg``;
    ``skipped`` counts the rows naming an entity or relation ``kg`` does not have."""
    indexed, skipped = [], 0
    for head, relation, tail in rows:
        try:
            indexed.append((kg.entity_index(head), kg.relation_index(relation), kg.entity_index(tail)))
        except KeyError:
            skipped += 1
    return np.asarray(indexed, dtype=np.int64).reshape(-1, 3), skipped


def read_split(path, kg: KnowledgeGraph) -> tuple[np.ndarray, int]:
    """An evaluation split (a triple file over ``kg``'s ids) as ``(triples (T, 3) int64, skipped)``;
    triples naming an entity or relation not in ``kg`` are skipped, counted and logged, never
    silently dropped. Raises :class:`KGFormatError` (``path:line: message``) on a malformed line."""
    triples, skipped = index_triples((row[1:] for row in read_triples(path)), kg)
    if skipped:
        logger.warning("%s: %d triples name an entity or relation not in the KG and are skipped", path, skipped)
    return triples, skipped


__all__ = ["UTF8_BOM", "index_triples", "read_field_lines", "read_lines", "read_split", "read_triples",
           "refuse_empty", "wide_encoding_problem"]
