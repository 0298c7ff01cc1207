"""What is wrong with a KG file: :class:`Problem` (``path:line: message``) and :class:`KGFormatError`.

Every reader of :mod:`jaket.kg` collects the problems of a file, all of them rather than the first,
and raises one :class:`KGFormatError` listing them; the command line's error boundary
(:func:`jaket.cli.main`) prints them one a line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


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


class FirstLines(dict):
    """Each key of a file read so far -> the line it was first given on, so that every reader of keys
    that must be unique (entity ids, instance ids) says a repeat the same way:
    ``"entity 'e0' given twice (first at line 2)"``."""

    def repeated(self, key, line: int, path, what: str, problems: list[Problem]) -> bool:
        """True, with that problem added for ``what``, when ``key`` was given before; else ``line`` is
        recorded as its first."""
        first = self.setdefault(key, line)
        if first != line:
            problems.append(Problem(str(path), line, f"{what} given twice (first at line {first})"))
        return first != line


def not_a_file(path: Path, hint: str = "") -> Problem | None:
    """The problem of a path where a file should be: ``missing file``, ``is a directory`` (a folder
    given for a file) or ``not a file`` (a device, a socket), ``hint`` after it; None for a file."""
    if path.is_file():
        return None
    what = "is a directory" if path.is_dir() else "not a file" if path.exists() else "missing file"
    return Problem(str(path), None, f"{what}{f' ({hint})' if hint else ''}")


def raise_if_errors(problems: Sequence[Problem]) -> None:
    """Raise :class:`KGFormatError` when ``problems`` holds an error (warnings alone pass)."""
    if any(p.is_error for p in problems):
        raise KGFormatError(problems)


__all__ = ["FirstLines", "KGFormatError", "Problem", "not_a_file", "raise_if_errors"]
