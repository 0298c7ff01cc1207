"""The tasks of ``jaket finetune`` / ``jaket predict``: task command name -> how its fine-tuned
folder (:mod:`jaket.tasks.finetuned`) is saved, loaded and used.

The handlers are ``"module:attribute"`` strings, imported on first use: ``jaket predict --help``
builds one subcommand per entry from the light command-line modules that hold each task's
``add_predict_arguments``, without importing the model code.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


class FinetunedFormatError(ValueError):
    """A folder is not a fine-tuned model of the expected task (the message says what it is)."""


@dataclass(frozen=True)
class TaskHandlers:
    """One task's fine-tuned model class and its ``jaket predict`` functions (``"module:attribute"``)."""

    help: str
    model: str  # a jaket.tasks.finetuned.FinetunedModel subclass: save_pretrained / from_pretrained / predict
    add_predict_arguments: str  # (argparse parser) -> None, in a light command-line module
    predict_rows: str  # (model, argparse namespace) -> rows: the command line's adapter to model.predict

    def resolve(self, name: str):
        module, _, attribute = getattr(self, name).partition(":")
        target = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
        return target


#: task command name -> its handlers
REGISTRY: dict[str, TaskHandlers] = {
    "entity-classification": TaskHandlers(
        "a label and its probability for entities of a KG",
        "jaket.tasks.entity_classification.finetuned:FinetunedEntityClassifier",
        "jaket.tasks.entity_classification.cli:add_predict_arguments",
        "jaket.tasks.entity_classification.cli:predict_rows"),
    "link-prediction": TaskHandlers(
        "top-k tails / heads for (h, r, ?) / (?, r, t) queries on a KG",
        "jaket.tasks.link_prediction.finetuned:FinetunedLinkPredictor",
        "jaket.tasks.link_prediction.cli:add_predict_arguments",
        "jaket.tasks.link_prediction.cli:predict_rows"),
    "kgqa": TaskHandlers(
        "ranked answers for questions over a KG",
        "jaket.tasks.kgqa.finetuned:FinetunedQuestionAnswerer",
        "jaket.tasks.kgqa.cli:add_predict_arguments",
        "jaket.tasks.kgqa.cli:predict_rows"),
    "relation-classification": TaskHandlers(
        "the relation of each query sentence, given support examples (PAIR)",
        "jaket.tasks.relation_classification.finetuned:FinetunedPairClassifier",
        "jaket.tasks.relation_classification.cli:add_predict_arguments",
        "jaket.tasks.relation_classification.cli:predict_rows"),
    "word-in-context": TaskHandlers(
        "whether a target word means the same in two texts (WiC), with its senses",
        "jaket.tasks.word_in_context.finetuned:FinetunedWordInContext",
        "jaket.tasks.word_in_context.cli:add_predict_arguments",
        "jaket.tasks.word_in_context.cli:predict_rows"),
}
