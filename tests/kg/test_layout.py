"""The floor plan of jaket.kg: imports at module level, no cycle, nothing from the layers above."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_imports import BASE

KG = Path(__file__).resolve().parents[2] / "src" / "jaket" / "kg"
#: what jaket.kg may import from the rest of jaket (docs/design.md, "Who may import what"): the base
#: modules, one list for the whole package
ALLOWED_OUTSIDE = BASE - {"jaket"}


def _module(path: Path) -> str:
    parts = path.relative_to(KG.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST) -> tuple[set[str], list[int]]:
    """jaket modules imported at module level (outside functions), and the lines of imports of
    jaket inside functions."""
    top, inner = set(), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(n and n.split(".")[0] == "jaket" for n in names):
                inner.append(node.lineno)
    for node in tree.body:
        if isinstance(node, ast.If):  # if TYPE_CHECKING: types for signatures
            body = node.body
        else:
            body = [node]
        for statement in body:
            if isinstance(statement, ast.ImportFrom) and statement.module and statement.module.startswith("jaket"):
                top.add(statement.module)
                inner.remove(statement.lineno)
            elif isinstance(statement, ast.Import):
                for alias in statement.names:
                    if alias.name.startswith("jaket"):
                        top.add(alias.name)
                        if statement.lineno in inner:
                            inner.remove(statement.lineno)
    return top, inner


def _graph() -> dict[str, tuple[set[str], list[int]]]:
    return {_module(p): _imports(ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(KG.rglob("*.py"))}


def test_kg_imports_only_itself_and_the_base_modules_at_module_level():
    graph = _graph()
    assert "jaket.kg.io" in graph and "jaket.kg.sources.registry" in graph
    for module, (imports, inner) in graph.items():
        outside = {m for m in imports if not m.startswith("jaket.kg")} - ALLOWED_OUTSIDE
        assert not outside, f"{module} imports {sorted(outside)}"
        assert not inner, f"{module} imports jaket inside a function at line(s) {inner}"


def test_the_kg_front_door_is_imported_by_none_of_its_parts():
    """``io`` re-exports ``parsing`` / ``cache`` / ``readers``, so they must not import it (the cycle
    that the split of kg/io.py removed; tests/test_imports.py finds any cycle of the package)."""
    graph = {m: {i for i in imports if i.startswith("jaket.kg")} for m, (imports, _) in _graph().items()}
    assert "jaket.kg.io" not in graph["jaket.kg.parsing"] | graph["jaket.kg.cache"] | graph["jaket.kg.readers"]
