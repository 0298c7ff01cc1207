"""Bounded JSON: the one decoder every JSON document and JSONL line the project reads goes through.

Python's ``json`` accepts what no reader of ours can use: nesting deep enough to exhaust the
interpreter's recursion (``RecursionError``, a traceback), strings of any length, and lone
surrogates (``"\\ud800"``: JSON's escapes allow them, UTF-8 cannot hold them, so the tokenizer or
any later write fails far from the file), and a key given twice in one object (the last would win
silently). :func:`decode` refuses each of these with one message
(:class:`JSONInputError`; the caller adds ``path:line``), and :func:`quote` cuts a long value
quoted in a message. The limits are documented in docs/reliability.md.
"""

from __future__ import annotations

import codecs
import json
import sys
from pathlib import Path
from typing import Any

#: deepest nesting of arrays and objects (the project's own files nest 4 levels at most)
MAX_DEPTH = 100
#: longest JSON document or JSONL line, in characters
MAX_CHARS = 256 * 2**20
#: longest string value (an id, a name, a description, a text), in characters
MAX_STRING = 2**22
#: characters of a value kept when a message quotes it
QUOTED = 80


class JSONInputError(ValueError):
    """Why a JSON text cannot be used; ``line`` is the line of the text it concerns (1 for a
    JSONL line; None when it is not a place in the text)."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.reason, self.line = reason, line


def quote(value: Any, limit: int = QUOTED) -> str:
    """``repr(value)``, cut to ``limit`` characters with the full length said when longer."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def decode(text: str) -> Any:
    """The value of the JSON ``text``, checked against the limits above."""
    if len(text) > MAX_CHARS:
        raise JSONInputError(f"{len(text):,} characters, more than the {MAX_CHARS:,} a JSON text may have")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise JSONInputError(f"invalid JSON: {error.msg} (column {error.colno})", error.lineno) from None
    except RecursionError:
        raise JSONInputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels") from None
    except JSONInputError:
        raise
    except ValueError:  # the interpreter's limit on the digits of an integer (a plain ValueError)
        raise JSONInputError(f"invalid JSON: an integer of more than {sys.get_int_max_str_digits():,} digits"
                             ) from None
    check(value)
    return value


def _unique_keys(pairs: list) -> dict:
    """An object's pairs as a dict, refusing a key given twice (plain ``json`` keeps the last
    silently: a record would lose a value without a word)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise JSONInputError(f"invalid JSON: the key {quote(twice)} appears twice in one object "
                             "(which value was meant?)")
    return value


def check(value: Any) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH`, strings (keys too) longer than
    :data:`MAX_STRING` and strings that are not valid Unicode (lone surrogates)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_string(item)
        elif isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise JSONInputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    _check_string(key)
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)


def _check_string(text: str) -> None:
    if len(text) > MAX_STRING:
        raise JSONInputError(f"a string of {len(text):,} characters, more than the {MAX_STRING:,} allowed "
                             f"(it starts {quote(text)})")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            code = ord(text[error.start])
            raise JSONInputError(f"invalid Unicode: a lone surrogate \\u{code:04x} in {quote(text)} "
                                 f"(JSON escapes allow it, UTF-8 cannot hold it)") from None


#: the byte order marks of UTF-32 and UTF-16 (longest first): a file saved as "Unicode" (Windows'
#: Notepad, PowerShell's ``>``) starts with one, and read as UTF-8 it is invalid bytes and NULs
WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
             (b"\xfe\xff", "UTF-16"))


def wide_encoding(data: bytes) -> str | None:
    """What to say of a text that starts with a UTF-16 or UTF-32 byte order mark (one line for the
    whole file, not a problem per line that is not UTF-8); None for any other start."""
    for mark, name in WIDE_BOMS:
        if data.startswith(mark):
            return f"{name} text (it starts with the byte order mark {mark.hex(' ').upper()}); save it as UTF-8"
    return None


def read_json(path: str | Path) -> Any:
    """:func:`decode` of a whole file, a UTF-8 byte order mark at its start dropped (as the JSONL
    and YAML readers drop it); :class:`JSONInputError` for a file that is not UTF-8 or not usable
    JSON (``OSError`` for one that cannot be read)."""
    data = Path(path).read_bytes()
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as error:
        if wide_encoding(data):
            raise JSONInputError(wide_encoding(data), 1) from None
        start = skip + error.start  # a byte of the file
        line = data[:start].count(b"\n") + 1
        raise JSONInputError(f"not UTF-8 (byte {start})", line) from None
    return decode(text)
