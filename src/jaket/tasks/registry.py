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
    """How one task's fine-tuned folder is saved, loaded and used (``"module:attribute"`` paths)."""

    help: str
    save: str  # (model, directory) -> Path, e.g. a save_pretrained method
    load: str  # (directory) -> model
    add_predict_arguments: str  # (argparse parser) -> None
    predict_rows: str  # (model, argparse namespace) -> iterable of JSON-able dicts

    def resolve(self, name: str):
        module, _, attribute = getattr(self, name).partition(":")
        target = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
        return target


def _handlers(help: str, module: str, model_class: str, arguments: str) -> TaskHandlers:
    """The handlers of a task whose model class has ``save_pretrained`` / ``from_pretrained``, whose
    module has ``predict_rows``, and whose ``jaket predict`` flags ``arguments`` adds (a function of
    a command-line module, ``"module:function"``)."""
    return TaskHandlers(help, f"{module}:{model_class}.save_pretrained", f"{module}:{model_class}.from_pretrained",
                        arguments, f"{module}:predict_rows")


#: task command name -> its handlers
REGISTRY: dict[str, TaskHandlers] = {
    "entity-classification": _handlers("a label and its probability for entities of a KG",
                                       "jaket.tasks.entity_classifier", "FinetunedEntityClassifier",
                                       "jaket.tasks.entity_classification_cli:add_predict_arguments"),
    "link-prediction": _handlers("top-k tails / heads for (h, r, ?) / (?, r, t) queries on a KG",
                                 "jaket.tasks.link_predictor", "FinetunedLinkPredictor",
                                 "jaket.tasks.link_prediction_cli:add_predict_arguments"),
    "kgqa": _handlers("ranked answers for questions over a KG", "jaket.tasks.kgqa_predict",
                      "FinetunedQuestionAnswerer", "jaket.tasks.cli:add_kgqa_predict_arguments"),
    "relation-classification": _handlers("the relation of each query sentence, given support examples (PAIR)",
                                         "jaket.tasks.relation_classification_predict", "FinetunedPairClassifier",
                                         "jaket.tasks.cli:add_relation_classification_predict_arguments"),
    "word-in-context": TaskHandlers("whether a target word means the same in two texts (WiC), with its senses",
                                    "jaket.tasks.word_in_context:FinetunedWordInContext.save_pretrained",
                                    "jaket.tasks.word_in_context:FinetunedWordInContext.from_pretrained",
                                    "jaket.tasks.word_in_context_cli:add_predict_arguments",
                                    "jaket.tasks.word_in_context_cli:predict_rows"),
}
