"""A task package's public names, loaded when first used.

Each task package (``jaket.tasks.kgqa``, ...) is split into ``job``, ``data``, ``model``,
``finetuned``, ``run`` and ``cli`` (docs/contributing.md, "Adding a task"); code outside the package
(other packages, ``benchmarks/``, ``results/``) imports its public names from the package itself,
``from jaket.tasks.kgqa import QuestionAnsweringRuns``, never from its modules (tested in
``tests/test_imports.py``). The package's ``__init__`` names them with :func:`lazy_exports`, so that
``jaket --help``, which imports every task package, still loads none of their model code, as the
lazy module of Hugging Face Transformers does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]) -> tuple[Callable, Callable, list[str]]:
    """``(__getattr__, __dir__, __all__)`` of ``package`` whose public names are ``exports``:
    ``{module: (name, ...)}``, each name read from ``package.module`` when first asked for."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, sorted(where)
