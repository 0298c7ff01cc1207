"""The shape of the code (docs/contributing.md): no function longer than 80 lines, no file longer than
600, in the package (src/) and in the scripts beside it, the benchmark suite (benchmarks/) and the
results tooling (results/).

A function's length runs from its ``def`` line to its last line (docstring and comments included).
:data:`BEING_SPLIT` lists, by name, the functions still over the limit while they are being
split; it must stay exact: an entry that is no longer over the limit (or no longer exists) fails
too, so the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the folders whose code is held to the limits: the package and the scripts that stand on it
CHECKED = ("src", "benchmarks", "results")
MAX_LINES = 80

#: temporary: ``path relative to the repository`` -> functions over the limit, until they are split
BEING_SPLIT: dict[str, set[str]] = {}


def python_files() -> list[Path]:
    """Every ``.py`` file under :data:`CHECKED`, sorted."""
    return sorted(path for folder in CHECKED for path in (REPO / folder).rglob("*.py"))


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
    for path in python_files():
        found = long_functions(path.read_text(encoding="utf-8"))
        if found:
            over[path.relative_to(REPO).as_posix()] = found
    return over


def test_the_checked_folders_hold_code():
    for folder in CHECKED:  # a renamed folder must not leave the limits checking nothing
        assert any((REPO / folder).rglob("*.py")), folder


def test_no_function_is_longer_than_80_lines():
    over = _over_limit()
    offending = [f"{path}:{line}: {name} is {length} lines (at most {MAX_LINES}: split it by concern)"
                 for path, found in over.items() for name, line, length in found
                 if name not in BEING_SPLIT.get(path, set())]
    assert not offending, "\n".join(offending)


def test_the_list_of_functions_being_split_is_exact():
    over = _over_limit()
    stale = [f"{path}: {name} is no longer over {MAX_LINES} lines: remove it from BEING_SPLIT"
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


#: docs/contributing.md: no file grows past this; a longer one is split by concern
MAX_FILE_LINES = 600


def test_no_file_is_longer_than_600_lines():
    over = [f"{path.relative_to(REPO).as_posix()}: {n} lines (at most {MAX_FILE_LINES}: split it by concern)"
            for path in python_files() if (n := len(path.read_text(encoding="utf-8").splitlines()))
            > MAX_FILE_LINES]
    assert not over, "\n".join(over)


def path_edits(source: str) -> list[int]:
    """Lines of ``source`` that change ``sys.path`` (a call of one of its methods, an assignment to it
    or to an item of it): the scripts run as modules (``python -m benchmarks``, ``python -m
    results.NAME``) from the repository root and the tests find them through pytest's ``pythonpath``."""
    def is_sys_path(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "path"
                and isinstance(node.value, ast.Name) and node.value.id == "sys")

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_path(node.func.value):
            found.append(node.lineno)
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(is_sys_path(t) or (isinstance(t, ast.Subscript) and is_sys_path(t.value)) for t in targets):
            found.append(node.lineno)
    return sorted(found)


def test_the_measure_finds_every_kind_of_path_edit():
    source = ("import sys\nsys.path.insert(0, 'x')\nsys.path.append('y')\nsys.path += ['z']\n"
              "sys.path[:0] = ['w']\nsys.path = []\nprint(sys.path, 'sys.path.insert(0, q)')\n")
    assert path_edits(source) == [2, 3, 4, 5, 6]


def test_nothing_edits_sys_path():
    edits = [f"{path.relative_to(REPO).as_posix()}:{line}: edits sys.path (run it as a module instead)"
             for path in [*python_files(), *sorted((REPO / "tests").rglob("*.py"))]
             for line in path_edits(path.read_text(encoding="utf-8"))]
    assert not edits, "\n".join(edits)
