"""The shape of the code in src/ (docs/contributing.md): no function longer than 80 lines, no file
longer than 600.

A function's length runs from its ``def`` line to its last line (docstring and comments included).
:data:`BEING_SPLIT` lists, by name, the functions still over the limit while they are being
split; it must stay exact: an entry that is no longer over the limit (or no longer exists) fails
too, so the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 80

#: temporary: ``path relative to src/`` -> functions over the limit, until they are split (issue #26)
BEING_SPLIT: dict[str, set[str]] = {}


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, lines)`` of every function of ``source`` longer than ``limit``
    lines (methods as ``Class.name``, nested functions as ``outer.name``)."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = child.end_lineno - child.lineno + 1
                    if length > limit:
                        found.append((name, child.lineno, length))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _over_limit() -> dict[str, list[tuple[str, int, int]]]:
    over = {}
    for path in sorted(SRC.rglob("*.py")):
        found = long_functions(path.read_text(encoding="utf-8"))
        if found:
            over[path.relative_to(SRC).as_posix()] = found
    return over


def test_no_function_in_src_is_longer_than_80_lines():
    over = _over_limit()
    offending = [f"src/{path}:{line}: {name} is {length} lines (at most {MAX_LINES}: split it by concern)"
                 for path, found in over.items() for name, line, length in found
                 if name not in BEING_SPLIT.get(path, set())]
    assert not offending, "\n".join(offending)


def test_the_list_of_functions_being_split_is_exact():
    over = _over_limit()
    stale = [f"src/{path}: {name} is no longer over {MAX_LINES} lines: remove it from BEING_SPLIT"
             for path, names in BEING_SPLIT.items() for name in sorted(names)
             if name not in {found[0] for found in over.get(path, [])}]
    assert not stale, "\n".join(stale)


def test_the_measure_counts_from_def_to_the_last_line():
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    source = (f"def short():\n{body[:body.rindex(chr(10))]}\n\n"  # 80 lines in all: allowed
              f"class A:\n    def long(self):\n{chr(10).join('    ' + line for line in body.splitlines())}\n"
              f"        def inner():\n            return 1\n        return inner\n")
    # short: 80 lines (the limit); A.long from line 83: its def, 80 lines, inner's 2, its return
    assert long_functions(source) == [("A.long", 83, 84)]


#: docs/contributing.md: no file in src/ grows past this; a longer one is split by concern
MAX_FILE_LINES = 600


def test_no_file_in_src_is_longer_than_600_lines():
    over = [f"src/{path.relative_to(SRC).as_posix()}: {n} lines (at most {MAX_FILE_LINES}: split it by concern)"
            for path in sorted(SRC.rglob("*.py")) if (n := len(path.read_text(encoding="utf-8").splitlines()))
            > MAX_FILE_LINES]
    assert not over, "\n".join(over)
