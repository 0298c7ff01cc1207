"""The fine-tuned model folder that ``jaket finetune TASK`` writes and ``jaket predict TASK`` reads.

Layout (``save_pretrained`` style; safetensors and JSON only, nothing is unpickled)::

    DIR/
      task.json           {"format": "jaket-finetuned", "format_version": 1, "task": "...",
                           "variant": "...", "labels": [...], ...}   the task config
      head.safetensors    the task head's weights
      backbone/           a JAKET model folder (JaketModel.save_pretrained, without memory):
        config.json         the model config
        jaket.safetensors   the knowledge module as fine-tuned, fusion and pre-training heads
        encoder/            the language module (LM1 + LM2) as a plain Transformers folder

``task.json`` holds what the task needs to rebuild its head and read its outputs (label names,
sizes, the setting the backbone was used in) and a record of the fine-tuning run (``training``).
The memory is not stored: it is recomputed from the descriptions of the KG a prediction runs on
(the paper's unseen-KG step), so a fine-tuned model also predicts on a KG it never saw.

Every fine-tuned model derives from :class:`FinetunedModel`: one ``save_pretrained(directory)``,
one ``from_pretrained(directory, device=None)``, ``to(device)`` and ``predict(...)`` (rows of
JSON-able dicts), as Transformers' ``PreTrainedModel``. A task says only what is its own (the
backbone to save, its head, its ``task.json`` settings, how to rebuild itself from a read
folder). :func:`jaket.tasks.registry.load_finetuned` opens any fine-tuned folder as its task's class (the task read
from ``task.json``). Every task's spec (:mod:`jaket.tasks.registry`) names its class and its
package's command-line functions, imported on first use; ``jaket predict`` builds one subcommand
per task that saves a model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from jaket.version import __version__
from jaket.atomic import atomic_directory, json_text
from jaket.jsonio import read_json
from jaket.kg.graph import KnowledgeGraph
from jaket.model.jaket import CONFIG_FILE, WEIGHTS_FILE, JaketConfig, JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.output import check_folder_to_replace
from jaket.tasks.spec import FinetunedFormatError  # noqa: F401 (re-exported)
from jaket.tasks.task_file import (FORMAT, FORMAT_VERSION, TASK_FILE, finetuned_path,  # noqa: F401
                                   read_task_config)
from jaket.tasks.settings import VARIANT_LABELS, VariantConfig
from jaket.tasks.variants import Backbone, _encoder_path, kg_memory
from jaket.model.memory import FrozenMemory
from jaket.tasks.settings import variant as variant_spec

logger = logging.getLogger(__name__)

HEAD_FILE = "head.safetensors"
BACKBONE_DIR = "backbone"


@dataclass
class FinetunedFolder:
    """The parts of a fine-tuned folder as read from disk."""

    task_config: dict
    backbone: JaketModel
    head: dict[str, torch.Tensor]


def write_finetuned(directory, task: str, backbone: JaketModel, head: dict[str, torch.Tensor], task_config: dict,
                    extra: Callable[[Path], None] | None = None) -> Path:
    """Write a fine-tuned folder (layout in the module docstring), replacing ``directory`` atomically.

    ``backbone``: a :class:`jaket.model.jaket.JaketModel` (see :func:`backbone_model`); ``head``:
    the head's state dict; ``task_config``: JSON-able task settings (``task.json``); ``extra``:
    writes a task's own files into the folder being built (e.g. KGQA's ``kg/``). ``directory`` may be
    new, empty or an earlier fine-tuned folder (with ``task.json``); a file or another folder is a
    ``ValueError`` (:func:`jaket.output.check_folder_to_replace`)."""
    from safetensors.torch import save_file

    if not task or not isinstance(task, str):
        raise ValueError(f"write_finetuned: a task name, got {task!r}")
    directory = Path(directory)
    check_folder_to_replace(directory, TASK_FILE, "fine-tuned model")
    with atomic_directory(directory) as tmp:
        backbone.save_pretrained(tmp / BACKBONE_DIR, save_memory=False, model_card=False)
        save_file({k: v.detach().contiguous() for k, v in head.items()}, str(tmp / HEAD_FILE))
        data = {"format": FORMAT, "format_version": FORMAT_VERSION, "task": task, "jaket_version": __version__,
                **task_config}
        (tmp / TASK_FILE).write_text(json_text(data, ensure_ascii=False) + "\n", encoding="utf-8")
        if extra is not None:
            extra(tmp)
    return directory


class FinetunedModel:
    """The contract of every fine-tuned model (layout in the module docstring).

    A task's class sets :attr:`task` and defines :meth:`backbone_model` (the
    :class:`~jaket.model.jaket.JaketModel` of what it fine-tuned, see :func:`backbone_model`),
    :meth:`head_state`, :meth:`task_config`, :meth:`from_folder`, :meth:`to` and ``predict``;
    optionally :meth:`write_extra` (files of its own, e.g. KGQA's ``kg/``). A model read from a
    folder keeps that folder in :attr:`directory`.
    """

    #: the task's command name (``jaket finetune|predict TASK``), written to ``task.json``
    task: str = ""
    #: the folder the model was read from (None for a model fine-tuned in this process)
    directory: Path | None = None

    # -- what a task defines
    def backbone_model(self) -> JaketModel:
        raise NotImplementedError

    def head_state(self) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def task_config(self) -> dict:
        raise NotImplementedError

    def write_extra(self, folder: Path) -> None:
        """Files of the task's own beside the standard ones (default: none)."""

    @classmethod
    def from_folder(cls, folder: FinetunedFolder, directory: Path) -> "FinetunedModel":
        raise NotImplementedError

    def to(self, device) -> "FinetunedModel":
        raise NotImplementedError

    def predict(self, *inputs, **options) -> list[dict]:
        raise NotImplementedError

    # -- the one save / load path
    def save_pretrained(self, directory) -> Path:
        """Write the fine-tuned folder (replaced atomically); returns it."""
        return write_finetuned(directory, self.task, self.backbone_model(), self.head_state(), self.task_config(),
                               extra=self.write_extra)

    @classmethod
    def from_pretrained(cls, directory, device=None) -> "FinetunedModel":
        """Read a folder written by :meth:`save_pretrained` (local files, safetensors and JSON only),
        on ``device`` when given; a folder of another task or a broken one is a
        :class:`FinetunedFormatError` naming the file; anything but a path a ``TypeError``."""
        directory = finetuned_path(directory, f"{cls.__name__}.from_pretrained")
        model = cls.from_folder(read_finetuned(directory, cls.task), directory)
        model.directory = directory
        return model.to(device) if device is not None else model


def read_finetuned(directory, task: str | None = None) -> FinetunedFolder:
    """The task config, the backbone (a JaketModel) and the head weights of a fine-tuned folder."""
    from safetensors.torch import load_file

    directory = Path(directory)
    data = read_task_config(directory, task)
    head_path = directory / HEAD_FILE
    if not head_path.is_file():
        raise FinetunedFormatError(f"{head_path}: missing (the task head's weights)")
    backbone = JaketModel.from_pretrained(directory / BACKBONE_DIR, load_memory=False)
    try:
        head = load_file(str(head_path))
    except Exception as error:  # safetensors' own SafetensorError (truncated, not safetensors), OSError
        raise FinetunedFormatError(f"{head_path}: not a readable safetensors file ({error})") from None
    return FinetunedFolder(data, backbone, head)


def prediction_memory(backbone: Backbone, kg: KnowledgeGraph, settings: dict) -> FrozenMemory:
    """The memory a fine-tuned model predicts from on ``kg``: recomputed from ``kg``'s descriptions
    as in fine-tuning (``settings`` = its ``task.json``); for ``gnn`` / ``lm+g`` (a random memory per
    entity index) a warning when ``kg`` is not the fine-tuning KG."""
    trained_on = settings.get("kg", {}).get("fingerprint")
    if variant_spec(backbone.variant).random_memory and trained_on not in (None, kg.fingerprint()):
        logger.warning("a %s model's memory is random per entity index: its predictions on another KG than "
                       "the one it was fine-tuned on mean nothing", backbone.variant)
    return kg_memory(backbone, kg, int(settings.get("memory_seed", 0)),
                     max_length=int(settings.get("description_max_length", 64)),
                     relation_memory=bool(settings.get("relation_memory", True)))


def checked_variant(folder: FinetunedFolder, directory) -> str:
    """The comparison setting (``variant``) a read folder's ``task.json`` names, checked."""
    variant = folder.task_config.get("variant")
    if variant not in VARIANT_LABELS:
        raise FinetunedFormatError(f"{directory}/{TASK_FILE}: 'variant' must be one of {', '.join(VARIANT_LABELS)}")
    return variant


def backbone_model(backbone: Backbone, config: VariantConfig, knowledge: nn.Module | None = None) -> JaketModel:
    """A :class:`~jaket.model.jaket.JaketModel` of the parts a task fine-tuned, ready to save.

    ``backbone``: the task's :class:`~jaket.tasks.variants.Backbone`; ``config``: its
    :class:`~jaket.tasks.variants.VariantConfig`; ``knowledge``: the fine-tuned knowledge module
    (default: the backbone's). The ``jaket`` setting keeps the pre-trained model's config, fusion
    and pre-training heads; the other settings get a config of the KM structure they used (the
    ``lm`` setting's KM is fresh and unused). A setting without a language module (``gnn``,
    ``lm+g``) stores the base encoder all the same, so every folder has the same layout.
    """
    from safetensors.torch import load_file

    language = backbone.language
    if language is None:
        language = SplitLanguageModel.from_pretrained(_encoder_path(config), lm1_layers=config.lm1_layers)
    structure = config.km_structure()
    if variant_spec(config.variant).pretrained:
        saved = read_json(Path(config.pretrained) / CONFIG_FILE)  # checked by JaketConfig.from_dict
        jconfig = JaketConfig.from_dict(saved)
        jconfig.encoder = None  # the folder's own encoder/ (the saved model carries it)
    else:
        jconfig = JaketConfig(lm1_layers=language.lm1_layers, km_layers=structure["layers"],
                              km_heads=structure["heads"], composition=structure["composition"])
    jconfig.lm1_layers = language.lm1_layers
    jconfig.description_max_length = config.description_max_length
    jconfig.use_relation_memory = config.relation_memory
    model = JaketModel(jconfig, language=language)
    if variant_spec(config.variant).pretrained:
        state = load_file(str(Path(config.pretrained) / WEIGHTS_FILE))
        model.load_state_dict(state, strict=False)
    knowledge = knowledge if knowledge is not None else backbone.knowledge
    if knowledge is not None:
        model.knowledge.load_state_dict(knowledge.state_dict())
    if backbone.fusion is not None and not variant_spec(config.variant).pretrained:
        model.fusion.load_state_dict(backbone.fusion.state_dict())
    return model
