"""The task registry: one :class:`~jaket.tasks.spec.TaskSpec` per task, registered once, from which
``jaket finetune``, ``jaket evaluate`` and ``jaket predict`` build their subcommands,
:func:`jaket.pipelines.pipeline` finds a task's runner and :func:`load_finetuned` a fine-tuned
folder's class.

Each task builds its spec in its own package (``jaket.tasks.NAME.cli.SPEC``: its typed job class and
small functions that import its model code when first called); this module, above the task packages
and the shared base, only registers them (nothing below it imports it: a layering test holds it).
"""

from __future__ import annotations

from jaket.tasks.entity_classification import cli as entity_classification
from jaket.tasks.kgqa import cli as kgqa
from jaket.tasks.link_prediction import cli as link_prediction
from jaket.tasks.relation_classification import cli as relation_classification
from jaket.tasks.spec import FinetunedFormatError, TaskSpec
from jaket.tasks.word_in_context import cli as word_in_context
from jaket.tasks.word_sense import cli as word_sense


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


def load_finetuned(directory, device=None):
    """Any fine-tuned folder as its task's :class:`~jaket.tasks.finetuned.FinetunedModel` (the task
    named by its ``task.json``), on ``device`` when given; a ``directory`` that is not a path (a
    ``str`` or ``os.PathLike``) is a ``TypeError`` saying what was given and what is expected."""
    # --help: the model code, when a folder is read
    from jaket.tasks.finetuned import TASK_FILE, finetuned_path, read_task_config

    directory = finetuned_path(directory, "load_finetuned")
    task = read_task_config(directory).get("task")
    if task not in predictable():
        raise FinetunedFormatError(f"{directory / TASK_FILE}: unknown task {task!r}; "
                                   f"known: {', '.join(predictable())}")
    return task_spec(task).model_class().from_pretrained(directory, device=device)


ENTITY_CLASSIFICATION = register_task(entity_classification.SPEC)
LINK_PREDICTION = register_task(link_prediction.SPEC)
KGQA = register_task(kgqa.SPEC)
RELATION_CLASSIFICATION = register_task(relation_classification.SPEC)
WORD_IN_CONTEXT = register_task(word_in_context.SPEC)
SENSE_LINKING = register_task(word_sense.SENSE_LINKING_SPEC)
WORD_SENSE_DISAMBIGUATION = register_task(word_sense.SPEC)
