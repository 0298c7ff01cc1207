"""``import jaket`` makes Transformers' Auto classes know jaket folders, without loading Transformers.

A user who follows Transformers' habits writes ``import jaket`` and then
``AutoModel.from_pretrained(folder)``. Registering there and then would make ``import jaket`` (and
``jaket --help``) load Transformers and torch: about 3 s (8 s with the model module) instead of
12 ms (``python -X importtime``, the project's 2 cores). So ``import jaket`` only installs a hook
(:func:`register_when_imported`): when Transformers' ``configuration_auto`` module has run,
``AutoConfig`` learns ``model_type: jaket`` (:class:`jaket.model.hub.JaketTransformersConfig`);
when ``modeling_auto`` has run, ``AutoModel`` learns :class:`LazyJaketModel`, which imports
:class:`jaket.model.jaket.JaketModel` (torch_geometric, seconds) only when a folder is loaded.
Importing :mod:`jaket.model.jaket` registers the class itself (:func:`jaket.model.hub.register`).
When Transformers is already loaded, the registration happens at once.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

CONFIG_MODULE = "transformers.models.auto.configuration_auto"
MODEL_MODULE = "transformers.models.auto.modeling_auto"
#: the model class, imported by name when first used (as the classes of jaket.tasks.registry's task specs are)
MODEL_CLASS = ("jaket.model.jaket", "JaketModel")


class LazyJaketModel:
    """Stands for :class:`jaket.model.jaket.JaketModel` in ``AutoModel``'s table until a folder is
    loaded: ``AutoModel.from_pretrained(folder)`` returns a ``JaketModel``."""

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        module, name = MODEL_CLASS
        return getattr(importlib.import_module(module), name).from_pretrained(*args, **kwargs)


def _register_config(module: ModuleType) -> None:
    from jaket.model.hub import JaketTransformersConfig  # --help: only once Transformers is loaded

    module.AutoConfig.register("jaket", JaketTransformersConfig, exist_ok=True)


def _register_model(module: ModuleType) -> None:
    from jaket.model.hub import JaketTransformersConfig  # --help: only once Transformers is loaded

    if JaketTransformersConfig not in module.MODEL_MAPPING:  # JaketModel itself may be there already
        module.AutoModel.register(JaketTransformersConfig, LazyJaketModel, exist_ok=True)


class _Then:
    """A module's own loader, then ``callback(module)`` once the module has run; the finder steps
    aside after its last callback (not while an import walks ``sys.meta_path``). A loader and a
    finder are duck-typed: ``importlib.abc`` alone would cost ``import jaket`` 60 ms."""

    def __init__(self, loader, callback: Callable[[ModuleType], None], finder: "_AfterImport"):
        self.loader, self.callback, self.finder = loader, callback, finder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _call(self.callback, module)
        if not self.finder.pending and self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)

    def __getattr__(self, name: str):  # get_source, is_package, ...: the module's own loader's
        return getattr(self.loader, name)


class _AfterImport:
    """Finds nothing itself: wraps the loader of each module in ``pending`` (name -> callback), as
    the other finders find it, so that the callback runs once the module has run."""

    def __init__(self, pending: dict[str, Callable[[ModuleType], None]]):
        self.pending = pending

    def find_spec(self, name, path, target=None):
        if name not in self.pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Then(spec.loader, self.pending.pop(name), self)
                return spec
        return None


def _call(callback: Callable[[ModuleType], None], module: ModuleType) -> None:
    try:
        callback(module)
    except Exception as error:  # the user's import of Transformers must not fail for it
        import logging  # not at the top: import jaket stays a few milliseconds

        logging.getLogger(__name__).warning("jaket could not register with Transformers' Auto classes (%s: %s); "
                       "import jaket.model.jaket registers them", type(error).__name__, error)


def register_when_imported() -> None:
    """Register ``model_type: jaket`` with ``AutoConfig`` and ``AutoModel`` now for the modules of
    Transformers already loaded, and when they load for the others (module docstring)."""
    pending = {}
    for name, callback in ((CONFIG_MODULE, _register_config), (MODEL_MODULE, _register_model)):
        if name in sys.modules:
            _call(callback, sys.modules[name])
        else:
            pending[name] = callback
    if pending and not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(pending))
