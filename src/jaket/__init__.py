"""jaket: joint pre-training of a knowledge graph and a language model (JAKET, Yu et al. 2022).

The public API is what this package exports (``jaket.__all__``); everything else is internal and may
change between releases::

    import jaket

    kg = jaket.load_kg("my_kg/")                                   # a KG folder (docs/data.md)
    model = jaket.JaketModel.from_pretrained("runs/pretrain/model")
    encoding = jaket.encode_texts(model, ["Metropolis was directed by Fritz Lang."], kg)
    result = jaket.pipeline("entity-classification", model="runs/pretrain/model",
                            data={"kg": "my_kg/"}, evaluate=False, out="runs/ec")
    classifier = jaket.load_finetuned("runs/ec/model")

The names are imported on first use (PEP 562), so ``import jaket`` and ``jaket --help`` stay light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jaket.version import __version__

#: public name -> the module that defines it (the one place each is written)
_EXPORTS = {
    "pipeline": "jaket.pipelines",
    "TaskResult": "jaket.tasks.results",
    "JaketModel": "jaket.model.jaket",
    "JaketConfig": "jaket.model.config",
    "TextEncoding": "jaket.model.jaket",
    "KnowledgeGraph": "jaket.kg.graph",
    "load_kg": "jaket.kg.io",
    "save_kg": "jaket.kg.io",
    "KGFormatError": "jaket.kg.io",
    "EntityLinker": "jaket.kg.linking",
    "ContextLinker": "jaket.senses.linker",
    "load_finetuned": "jaket.tasks.registry",
    "encode_texts": "jaket.api",
    "pretrain": "jaket.api",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # static tools and the API reference see the real objects
    from jaket.api import encode_texts, pretrain
    from jaket.kg.graph import KnowledgeGraph
    from jaket.kg.io import KGFormatError, load_kg, save_kg
    from jaket.kg.linking import EntityLinker
    from jaket.model.config import JaketConfig
    from jaket.model.jaket import JaketModel, TextEncoding
    from jaket.pipelines import pipeline
    from jaket.tasks.registry import load_finetuned
    from jaket.tasks.results import TaskResult
    from jaket.senses.linker import ContextLinker


def __getattr__(name: str) -> Any:
    """The exported names, imported when first read (``jaket.pipeline`` is the function
    :func:`jaket.pipelines.pipeline`, from a module of another name as ``transformers.pipeline``)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jaket' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _register_auto_classes() -> None:
    """``AutoConfig`` / ``AutoModel.from_pretrained(folder)`` know jaket folders after ``import jaket``
    (registered when Transformers loads, so this import stays light: :mod:`jaket.model.auto`)."""
    from jaket.model.auto import register_when_imported  # --help: no Transformers here, a hook only

    register_when_imported()


_register_auto_classes()
