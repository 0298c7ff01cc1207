"""The task registry: one :class:`TaskSpec` per task, registered once, from which ``jaket finetune``,
``jaket evaluate`` and ``jaket predict`` build their subcommands and a fine-tuned folder
(:mod:`jaket.tasks.finetuned`) finds its class.

A spec names its task package (split as every task package is: ``job``, ``data``, ``model``,
``finetuned``, ``run``, ``cli``) and holds its typed job class, its default settings, its grid task,
its fine-tuned model class and the command line's functions. The job classes are light (plain
dataclasses); everything else is a name in one of the package's modules, imported on first use, so
``jaket --help`` builds every subcommand from the light ``cli`` modules without the model code. This
module registers each task once, under the name its package gives it (``job.TASK``); nothing else
outside the task's package names it (a test checks it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from jaket.tasks.entity_classification import job as entity_classification
from jaket.tasks.kgqa import job as kgqa
from jaket.tasks.link_prediction import job as link_prediction
from jaket.tasks.relation_classification import job as relation_classification
from jaket.tasks.word_in_context import job as word_in_context
from jaket.tasks.word_sense import job as word_sense

#: every setting of the paper's tables, in their order
ALL_SETTINGS = ("lm", "gnn", "lm+g", "lm+g+m", "jaket")


class FinetunedFormatError(ValueError):
    """A folder is not a fine-tuned model of the expected task (the message says what it is)."""


@dataclass(frozen=True)
class TaskSpec:
    """One task: its command name, its package and what the command line and ``jaket predict`` use.

    ``job``: the typed config (with a data section where the task has one) that ``--config`` / ``--set``
    / ``--print-config`` read and the flags of ``FLAG_KEYS`` fill; ``default_variants``: ``evaluate``'s
    settings when ``--variants`` is not given (``jaket`` only with ``--model``); ``finetune_variant``:
    ``finetune``'s without ``--model`` or ``--variant``; ``grid_task``: the
    :class:`~jaket.tasks.grid.GridTask` of ``run``; ``model``: the
    :class:`~jaket.tasks.finetuned.FinetunedModel` of ``finetuned`` (None: nothing to predict with);
    ``add_arguments``: the function of ``cli`` that adds the task's flags and sets the handler,
    ``(parser, evaluate)``; ``cli``: that module when it is not the package's."""

    name: str
    package: str
    help: str
    job: type | None
    default_variants: tuple[str, ...] = ALL_SETTINGS
    finetune_variant: str = "lm+g+m"
    grid_task: str | None = None
    model: str | None = None
    predict_help: str | None = None
    commands: tuple[str, ...] = ("finetune", "evaluate")
    #: the flags of every finetune / evaluate command (:func:`jaket.tasks.cli_common.add_common_arguments`)
    common_flags: bool = True
    add_arguments: str = "add_arguments"
    #: the dict of ``cli`` that maps the task's flags to its job's keys (destination -> key); a
    #: second name where two commands share one ``cli`` module (word sense's)
    flag_keys: str = "FLAG_KEYS"
    cli: str | None = None
    #: the function of ``run`` that runs a resolved job, ``(job, out_dir, *, save_dir, device,
    #: log_with, keep_model) -> TaskResult``: what the command and :func:`jaket.pipeline.pipeline`
    #: call (every registered task has one; tested)
    runner: str | None = None
    #: the module of :attr:`runner` when it is not the package's ``run``
    run_module: str | None = None
    #: the function of ``run`` that prints a run's result as the command's table
    table: str = "results_table"
    #: ``jaket predict``'s input flags, shown after a fine-tuning (``--kg KG``)
    predict_usage: str | None = None
    #: the keys of the result that ``--json`` prints (None: its ``summary``)
    json_keys: tuple[str, ...] | None = None

    def module(self, part: str):
        """The package's module ``part`` (``"run"``, ``"finetuned"``, ...), imported now."""
        if part == "cli" and self.cli is not None:
            return importlib.import_module(self.cli)
        if part == "run" and self.run_module is not None:
            return importlib.import_module(self.run_module)
        return importlib.import_module(f"{self.package}.{part}")

    def model_class(self):
        """The fine-tuned model class (``save_pretrained`` / ``from_pretrained`` / ``predict``)."""
        if self.model is None:
            raise ValueError(f"task {self.name!r} saves no fine-tuned model")
        return getattr(self.module("finetuned"), self.model)

    def run_function(self):
        """:attr:`runner` of the package's ``run`` module, imported now (None without one)."""
        return None if self.runner is None else getattr(self.module("run"), self.runner)

    def grid_task_class(self):
        return None if self.grid_task is None else getattr(self.module("run"), self.grid_task)

    def command(self, function: str):
        """A function of the task's command-line module: ``add_arguments``, ``add_predict_arguments``
        (``jaket predict``'s flags) or ``predict_from_flags`` (``(model, namespace) -> rows``, the
        command line's adapter to the model's typed ``predict``)."""
        return getattr(self.module("cli"), function)


#: task command name -> its spec, in the order of ``jaket finetune|evaluate --help``
TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task (a second spec of the same name is refused)."""
    if spec.name in TASKS:
        raise ValueError(f"task {spec.name!r} is registered already")
    TASKS[spec.name] = spec
    return spec


def task_spec(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; registered: {', '.join(TASKS)}") from None


def predictable() -> dict[str, TaskSpec]:
    """The tasks that save a fine-tuned model (``jaket predict``'s subcommands)."""
    return {name: spec for name, spec in TASKS.items() if spec.model is not None}


ENTITY_CLASSIFICATION = register_task(TaskSpec(
    entity_classification.TASK, "jaket.tasks.entity_classification",
    "categories of an unseen KG's entities (Table 3)", entity_classification.EntityClassificationJob,
    default_variants=("lm", "gnn", "lm+g+m", "jaket"), grid_task="EntityClassificationRuns",
    model="FinetunedEntityClassifier", predict_help="a label and its probability for entities of a KG",
    runner="run_job", table="scores_and_paired_table", predict_usage="--kg KG"))
LINK_PREDICTION = register_task(TaskSpec(
    link_prediction.TASK, "jaket.tasks.link_prediction",
    "filtered MRR / Hits@k over descriptions + KM", link_prediction.LinkPredictionJob,
    default_variants=("lm", "gnn", "lm+g+m", "jaket"), grid_task="LinkPredictionRuns",
    model="FinetunedLinkPredictor", predict_help="top-k tails / heads for (h, r, ?) / (?, r, t) queries on a KG",
    runner="run_job", predict_usage="--kg KG --queries FILE"))
KGQA = register_task(TaskSpec(
    kgqa.TASK, "jaket.tasks.kgqa",
    "question answering over the KG, Hits@1 (Table 2)", kgqa.KGQAJob,
    default_variants=("lm", "lm+g", "lm+g+m", "jaket"), grid_task="QuestionAnsweringRuns",
    model="FinetunedQuestionAnswerer", predict_help="ranked answers for questions over a KG", runner="run_job",
    predict_usage="--questions FILE"))
RELATION_CLASSIFICATION = register_task(TaskSpec(
    relation_classification.TASK, "jaket.tasks.relation_classification",
    "few-shot relation classification, PAIR (Table 1)", relation_classification.RelationClassificationJob,
    default_variants=("lm", "jaket"), finetune_variant="lm",  # no KM setting
    grid_task="RelationClassificationRuns", model="FinetunedPairClassifier",
    predict_help="the relation of each query sentence, given support examples (PAIR)", runner="run_job",
    predict_usage="--support FILE --queries FILE"))
WORD_IN_CONTEXT = register_task(TaskSpec(
    word_in_context.TASK, "jaket.tasks.word_in_context",
    "does a target word mean the same in two texts? (WiC; senses from the KG)", word_in_context.WordInContextJob,
    default_variants=("lm", "lm+g+m", "jaket"), finetune_variant="lm", grid_task="WordInContextRuns",
    model="FinetunedWordInContext",
    predict_help="whether a target word means the same in two texts (WiC), with its senses", runner="run_job",
    predict_usage="--pairs FILE", json_keys=("summary", "paired", "majority_class", "frozen_features")))
SENSE_LINKING = register_task(TaskSpec(
    word_sense.SENSE_LINKING, "jaket.tasks.word_sense",
    "choose a word's WordNet sense in context (WSD) on held-out linked texts of a pre-training run",
    word_sense.SenseLinkingJob, commands=("evaluate",), common_flags=False, add_arguments="add_sense_linking_arguments",
    flag_keys="SENSE_LINKING_FLAG_KEYS", runner="run_sense_linking_job", table="sense_linking_table"))
WORD_SENSE_DISAMBIGUATION = register_task(TaskSpec(
    word_sense.TASK, "jaket.tasks.word_sense",
    "all-words WSD in the unified framework (SemEval-2007 ...): every scorer of a word's WordNet senses "
    "on the same targets, F1", word_sense.WordSenseJob,
    default_variants=("lm", "lm+g+m", "jaket"), commands=("evaluate",), runner="run_job", table="scores_table"))
