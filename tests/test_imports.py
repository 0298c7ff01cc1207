"""The floor plan of the whole package (docs/design.md, "Who may import what"): jaket's own modules
are imported at module level, the layers go one way, and `jaket --help` stays fast.

A function-level ``from jaket...`` import is allowed only in a command-line module (``cli.py``,
``*_cli.py``, ``demo.py``: a command loads the task it runs when it runs), or when the import
(or the comment line right above it) says why: ``# cycle: ...`` for an import that would close a
real cycle (checked: the imported module does import this one), ``# --help: ...`` for a module that
``jaket --help`` loads and whose function needs the model (torch_geometric takes seconds), ``# inputs
first: ...`` for model code a command loads only once its input files are read and checked (a bad
file fails in the time it takes to parse it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "jaket"
#: the layers, lowest first; a module imports only from its own layer and the ones before it
LAYERS = {"base": 0, "kg": 1, "model": 2, "train": 3, "senses": 4, "tasks": 5, "bench": 6, "command": 7}
BASE = {"jaket.atomic", "jaket.errors", "jaket.fields", "jaket.flags", "jaket.jsonio", "jaket.output",
        "jaket.overrides", "jaket.paths", "jaket.stages", "jaket.version"}
ROOT = SRC.parent
#: the task packages: outside its own package, code imports a task's public names from the package
#: (``from jaket.tasks.kgqa import ...``), never from its modules; the command registry alone loads
#: each task's ``cli`` (its commands)
TASKS = sorted(p.parent.name for p in (PACKAGE / "tasks").glob("*/__init__.py"))
#: the package itself (its names load every layer), the library's front doors (``pipeline``, ``api``)
#: and the commands that are thin layers over them: ``jaket pretrain`` (train/cli.py over
#: ``jaket.pretrain``) and ``jaket finetune|evaluate`` (tasks/cli.py over ``jaket.pipeline``, :mod:`jaket.pipelines`)
COMMAND = {"jaket", "jaket.cli", "jaket.demo", "jaket.__main__", "jaket.pipelines", "jaket.api", "jaket.train.cli",
           "jaket.tasks.cli"}
REASONS = ("# cycle:", "# --help:", "# inputs first:")  # a cycle: marker is refused (test below)


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    if module in BASE:
        return LAYERS["base"]
    if module in COMMAND:
        return LAYERS["command"]
    return LAYERS[module.split(".")[1]]


def _is_command_module(path: Path) -> bool:
    return path.name in ("cli.py", "demo.py") or path.name.endswith("_cli.py")


def _imported(node: ast.AST) -> list[str]:
    """The jaket modules an import statement loads (``from jaket.tasks import report`` -> the
    module ``jaket.tasks.report`` when it is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "jaket"]
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module or node.module.split(".")[0] != "jaket":
        return []
    names = []
    for alias in node.names:
        candidate = f"{node.module}.{alias.name}"
        path = SRC.joinpath(*candidate.split("."))
        names.append(candidate if path.with_suffix(".py").is_file() or path.is_dir() else node.module)
    return names


def _scan() -> dict[str, dict]:
    """Per module: its module-level jaket imports and its function-level ones ``(line, module,
    reason)`` (the reason: the ``# cycle:`` / ``# --help:`` comment, if any)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        top: set[str] = set()
        for statement in tree.body:
            body = statement.body if isinstance(statement, ast.If) else [statement]  # if TYPE_CHECKING:
            for node in body:
                if not (isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test)):
                    top.update(_imported(node))
        inner = []
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    for name in _imported(node):
                        here, above = lines[node.lineno - 1], lines[node.lineno - 2].strip()
                        reason = next((r for r in REASONS if r in here or above.startswith(r)), None)
                        inner.append((node.lineno, name, reason))
        modules[_module(path)] = {"path": path, "top": top, "inner": sorted(set(inner))}
    return modules


def test_jaket_is_imported_at_module_level_outside_the_command_modules():
    modules = _scan()
    assert {"jaket.tasks.variants", "jaket.model.jaket", "jaket.train.build"} <= set(modules)
    lazy = {m: [(line, name) for line, name, reason in info["inner"] if reason is None]
            for m, info in modules.items() if not _is_command_module(info["path"])}
    assert not {m: v for m, v in lazy.items() if v}, "function-level imports of jaket without a reason"


def test_no_import_cycle_in_src_not_even_through_a_function_level_import():
    """Zero cycles: every import counts (module level and function level, lazy ones included),
    and no ``# cycle:`` marker excuses one."""
    modules = _scan()
    marked = [(m, line, name) for m, info in modules.items() for line, name, reason in info["inner"]
              if reason == "# cycle:"]
    assert not marked, f"function-level imports marked as closing a cycle: {marked}"
    graph = {m: set(info["top"]) | {name for _, name, _ in info["inner"]} for m, info in modules.items()}
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        if state.get(module) == "done":
            return
        assert state.get(module) != "open", "import cycle: " + " -> ".join(path + [module])
        state[module] = "open"
        for other in sorted(graph.get(module, ())):
            visit(other, path + [module])
        state[module] = "done"

    for module in modules:
        visit(module, [])


def test_the_layers_go_one_way():
    """Not one upward import in the whole tree, at module level or in a function (the version, too,
    comes from ``jaket.version``, not from the package that loads every layer)."""
    modules = _scan()
    for module, info in modules.items():
        every = set(info["top"]) | {name for _, name, _ in info["inner"]}
        upward = sorted(m for m in every if _layer(m) > _layer(module))
        assert not upward, f"{module} imports the later layer(s) {upward}"


def test_jaket_help_does_not_load_the_model():
    """Every command registers at start-up; none may pull torch_geometric (seconds) into that."""
    code = ("import sys, jaket.cli; jaket.cli.build_parser(); "
            "print(sorted(m for m in ('torch_geometric', 'jaket.model.jaket', 'jaket.model.knowledge', "
            "'jaket.tasks.variants', 'jaket.train.pretrain') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def _imports_of(path: Path) -> list[tuple[int, str]]:
    """Every jaket module an import statement of ``path`` loads (any level), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, name) for node in ast.walk(tree) for name in _imported(node)]


def test_no_code_outside_a_task_package_imports_its_modules():
    """The senses library (``jaket.senses``), the other packages, ``benchmarks/`` and ``results/``
    use a task through its package's public names (:func:`jaket.tasks.exports.lazy_exports`)."""
    assert {"kgqa", "word_sense", "word_in_context"} <= set(TASKS)
    files = [p for p in PACKAGE.rglob("*.py")] + [p for d in ("benchmarks", "results") for p in (ROOT / d).rglob("*.py")]
    found = []
    for path in files:
        here = path.relative_to(ROOT).as_posix()
        for line, name in _imports_of(path):
            parts = name.split(".")
            if len(parts) < 4 or parts[:2] != ["jaket", "tasks"] or parts[2] not in TASKS:
                continue
            inside = here.startswith(f"src/jaket/tasks/{parts[2]}/")
            registry = here == "src/jaket/tasks/registry.py" and parts[3] == "cli"
            if not (inside or registry):
                found.append(f"{here}:{line}: {name}")
    assert not found, "task modules imported from outside their package:\n" + "\n".join(found)


def test_every_public_name_of_a_task_package_is_there():
    """What a task package names as public (``__all__``) resolves, and ``jaket --help`` loads none of it."""
    import importlib

    for task in TASKS:
        package = importlib.import_module(f"jaket.tasks.{task}")
        assert package.__all__, task
        for name in package.__all__:
            assert getattr(package, name) is not None, (task, name)
