"""Reading the texts to link (``jaket link --texts``, ``jaket embed --texts``): plain lines or JSONL
records, with the spans a record asks to link (:class:`Target`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from jaket.jsonio import quote
from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.parsing import json_object, span_object, string_field
from jaket.kg.readers import read_lines
from jaket.kg.sources.wordnet_forms import part_of_speech


@dataclass(frozen=True)
class Target:
    """A span ``[start, end)`` of a text that the input asks to link (JSONL ``"targets"``), with
    the lemma and part of speech (WordNet's ``n``, ``v``, ``a``, ``r``) when it gives them."""

    start: int
    end: int
    lemma: str | None = None
    pos: str | None = None


@dataclass
class TextFile:
    """The texts of one input file; ``blank_lines`` were skipped (and are reported). With
    ``targets`` asked for, ``targets[i]`` holds the spans text ``i`` gives, or None (not given)."""

    texts: list[str] = field(default_factory=list)
    blank_lines: int = 0
    targets: list[tuple[Target, ...] | None] = field(default_factory=list)
    ignored_targets: int = 0  # records giving "targets" read without ``targets``


def _targets(record: dict, text: str | None, path: Path, number: int,
             problems: list[Problem]) -> tuple[Target, ...] | None:
    """The ``"targets"`` of a JSONL record: ``[{"start", "end", "lemma"?, "pos"?}]``, spans
    inside the text, disjoint; every problem named ``path:line``."""
    raw = record.get("targets")
    if raw is None:
        return None
    if not isinstance(raw, list):
        problems.append(Problem(str(path), number, "field 'targets' must be a list"))
        return None
    found: list[Target] = []
    for k, item in enumerate(raw, 1):
        where = f"target {k}"
        span = span_object(item, where, path, number, problems)
        if span is None:
            continue
        (start, end), lemma = span, item.get("lemma")
        if text is not None and not 0 <= start < end <= len(text):
            problems.append(Problem(str(path), number, f"{where}: span [{quote(start)}, {quote(end)}) is "
                                                       f"empty or outside the text (length {len(text)})"))
            continue
        if lemma is not None and (not isinstance(lemma, str) or not lemma.strip()):
            problems.append(Problem(str(path), number, f"{where}: 'lemma' must be a non-empty string"))
            continue
        before = len(problems)
        pos = part_of_speech(item.get("pos"), path, number, problems)
        if len(problems) == before:
            found.append(Target(start, end, lemma.strip() if lemma else None, pos))
    ordered = sorted(found, key=lambda t: (t.start, t.end))
    for a, b in zip(ordered, ordered[1:]):
        if b.start < a.end:
            problems.append(Problem(str(path), number,
                                    f"targets overlap: [{a.start}, {a.end}) and [{b.start}, {b.end})"))
    return tuple(ordered)


def read_texts(path, targets: bool = False) -> TextFile:
    """Texts of a plain-text file (one per line) or, for a ``.jsonl`` file, of each record's
    ``"text"`` field (other fields are ignored; with ``targets``, a record's ``"targets"`` are
    read too: see :class:`Target`). Blank lines and records whose text is blank are skipped and
    counted.

    Raises :class:`jaket.kg.errors.KGFormatError` listing every bad line as ``path:line: message``
    (invalid UTF-8, NUL bytes, malformed JSON, a record that is not an object or has no string
    ``"text"``, a malformed target, and a line of a file not named ``.jsonl`` that is a JSON
    record with a ``"text"``: it would be linked as the JSON itself). Records giving ``"targets"``
    when they are not read are counted (``ignored_targets``) for the caller to say so.
    """
    path = Path(path)
    problems: list[Problem] = []
    try:
        lines = read_lines(path, problems, keep_blank=True)
    except OSError as error:
        raise KGFormatError([Problem(str(path), None, f"cannot read: {error.strerror or error}")]) from None
    is_jsonl = path.suffix.lower() == ".jsonl"
    result = TextFile()
    for number, line in lines:
        if "\0" in line:
            problems.append(Problem(str(path), number, "contains NUL bytes (a binary file, not text?)"))
        elif not line.strip():
            result.blank_lines += 1
        elif not is_jsonl:
            if _json_record_with_text(line):
                problems.append(Problem(str(path), number, "the line is a JSON object with a 'text'; name the "
                                                           "file .jsonl to read its text (plain lines are linked "
                                                           "as written)"))
                continue
            result.texts.append(line)
            result.targets.append(None)
        elif (record := json_object(path, number, line, problems)) is not None:
            text = string_field(record, "text", path, number, problems)
            result.ignored_targets += not targets and "targets" in record
            given = _targets(record, text, path, number, problems) if targets else None
            if text is not None and not text.strip():
                result.blank_lines += 1
            elif text is not None:
                result.texts.append(text)
                result.targets.append(given)
    if problems:
        raise KGFormatError(sorted(problems, key=lambda p: p.line or 0))
    if not targets:
        result.targets = []
    return result


def _json_record_with_text(line: str) -> bool:
    """Whether a line is a JSON object with a string ``"text"`` (a JSONL record in a plain file)."""
    if not line.lstrip().startswith("{"):
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("text"), str)


__all__ = ["Target", "TextFile", "read_texts"]
