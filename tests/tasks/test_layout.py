"""The floor plan of jaket.tasks: one package per task, every one split into the same modules
(docs/design.md, "Layout"; docs/contributing.md, "Adding a task")."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

TASKS = Path(__file__).resolve().parents[2] / "src" / "jaket" / "tasks"
#: the modules of every task package: its job (typed config and data section), data, model,
#: fine-tuned model, runner and command line
MODULES = {"__init__", "job", "data", "model", "finetuned", "run", "cli"}
#: tasks that train nothing: no model and no fine-tuned model (their scorers live in jaket.senses)
TRAIN_NOTHING = {"word_sense"}


def _packages() -> dict[str, set[str]]:
    return {p.parent.name: {m.stem for m in p.parent.glob("*.py")} for p in sorted(TASKS.glob("*/__init__.py"))}


def test_every_task_package_has_the_same_modules():
    packages = _packages()
    assert {"entity_classification", "link_prediction", "kgqa", "relation_classification", "word_in_context",
            "word_sense"} <= set(packages)
    expected = {name: MODULES - {"model", "finetuned"} if name in TRAIN_NOTHING else MODULES for name in packages}
    different = {name: sorted(modules ^ expected[name]) for name, modules in packages.items()
                 if modules != expected[name]}
    assert not different, f"task packages whose modules differ from {sorted(MODULES)}: {different}"


def test_a_task_package_imports_nothing_on_its_own():
    """Importing ``jaket.tasks.NAME.job`` runs ``NAME/__init__.py`` first: it may import nothing but
    :func:`jaket.tasks.exports.lazy_exports` (its public names, loaded when first used), or ``jaket
    --help`` (which reads every job's defaults) would load the model."""
    for init in sorted(TASKS.glob("*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert imports == ["from jaket.tasks.exports import lazy_exports"], f"{init} imports {imports}"


def test_no_flat_task_module_is_left_beside_the_packages():
    """The shared modules of tasks/ name no task: a module named after one belongs in its package."""
    packages = set(_packages())
    flat = {p.stem for p in TASKS.glob("*.py")}
    assert not {m for m in flat if any(m.startswith(name) for name in packages)}, flat



def _string_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_task_is_named_outside_its_package_and_the_spec_registry():
    """A task's command name is a string literal once, in its package's ``job`` (``TASK``, which its
    results' ``task``, its folder's ``task.json`` and its commands use), and the spec registry
    (:mod:`jaket.tasks.registry`) registers it under that constant: nowhere else in ``src/`` is a
    task named; the command line, ``jaket predict``, the default settings and the demo read its spec."""
    from jaket.tasks.registry import TASKS as SPECS

    src = TASKS.parents[1]
    home = {name: src.joinpath(*spec.package.split(".")) for name, spec in SPECS.items()}
    assert len(home) >= 7
    named = []
    for path in sorted(src.rglob("*.py")):
        if path == TASKS / "registry.py":
            continue
        for line, value in _string_literals(path):
            if value in home and home[value] not in path.parents:
                named.append(f"{path.relative_to(src)}:{line}: {value!r}")
    assert not named, "task names outside their package and the registry:\n" + "\n".join(named)
    for name, folder in home.items():  # and in its package, once: its job module's constant
        places = [(path.name, line) for path in sorted(folder.glob("*.py"))
                  for line, value in _string_literals(path) if value == name]
        assert [place for place, _ in places] == ["job.py"], f"{name!r} in {folder.name}: {places}"


def test_a_task_model_imports_neither_its_run_nor_its_finetuned_module():
    """The run loop and the fine-tuned class both import the model module, never the other way (no
    cycle, and the model is the one piece both stand on)."""
    for package in sorted(p.parent for p in TASKS.glob("*/__init__.py") if p.parent.name not in TRAIN_NOTHING):
        tree = ast.parse((package / "model.py").read_text(encoding="utf-8"))
        names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        names |= {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                  for a in n.names}
        own = f"jaket.tasks.{package.name}"
        assert not names & {f"{own}.run", f"{own}.finetuned"}, f"{package.name}/model.py imports {sorted(names)}"


def test_every_reference_of_every_spec_resolves():
    """A spec names what needs the model code as ``"module:name"`` in its package (runner and table by
    the template's defaults): each one is there, and is what its field says."""
    import inspect

    from jaket.tasks.grid import GridTask
    from jaket.tasks.finetuned import FinetunedModel
    from jaket.tasks.registry import TASKS as SPECS

    assert len(SPECS) >= 7
    for name, spec in SPECS.items():
        assert callable(spec.run_function()) and callable(spec.table_function()), name
        assert callable(spec.resolve(spec.runner)), name
        if spec.read_inputs is not None:
            assert callable(spec.resolve(spec.read_inputs)), name
        if spec.grid_task is not None:
            assert inspect.isclass(spec.grid_task_class()) and issubclass(spec.grid_task_class(), GridTask), name
        if spec.model is not None:
            assert issubclass(spec.model_class(), FinetunedModel), name
            # jaket predict: each named flag is one the task adds, in the order its functions take them
            parser = argparse.ArgumentParser()
            spec.add_predict_arguments(parser)
            flags = {action.dest for action in parser._actions} | {"finetuned", "settings"}
            for function, names in ((spec.read_predict_inputs, spec.predict_input_flags),
                                    (spec.predict_rows, spec.predict_flags)):
                assert set(names) <= flags, (name, set(names) - flags)
                parameters = list(inspect.signature(spec.resolve(function)).parameters)
                first = 1 if function is spec.predict_rows else 0  # predict_rows takes the model first
                assert len(parameters) >= first + len(names), (name, parameters, names)
