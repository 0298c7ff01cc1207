"""What a task is to the command line, ``jaket predict`` and :func:`jaket.pipelines.pipeline`: its
:class:`TaskSpec`, built by the task in its own package (``jaket.tasks.NAME.cli.SPEC``) from
classes and functions, and registered once by :mod:`jaket.tasks.registry`.

Shared base: this module imports no task and no registry. A spec holds its typed job class (light:
a plain dataclass) and, for what needs the model code (the runner, the table, the grid task, the
fine-tuned class, the input reader), a :data:`Reference`: ``"module:name"`` in the task's package,
imported when first used, so ``jaket --help`` builds every command without loading torch. The
runner and the table default to the template's ``run:run_job`` and ``run:results_table``, so a task
writes its spec once, naming only what differs (every reference of every registered spec resolves:
``tests/tasks/test_layout.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

#: where a spec finds what needs the model code: ``"module:name"`` in the task's package, or a function
#: that returns it (a task registered from outside a package, e.g. a test's)
Reference = str | Callable[[], object]

#: every variant of the paper's tables, in their order
ALL_VARIANTS = ("lm", "gnn", "lm+g", "lm+g+m", "jaket")


class FinetunedFormatError(ValueError):
    """A folder is not a fine-tuned model of the expected task (the message says what it is)."""


@dataclass(frozen=True)
class TaskSpec:
    """One task: its command name, its typed job and what the command line and ``jaket predict`` use.

    ``job``: the typed config (with a data section where the task has one) that ``--config`` / ``--set``
    / ``--print-config`` read and whose fields make the command's flags (:mod:`jaket.tasks.job_flags`);
    ``default_variants``: ``evaluate``'s variants when ``--variants`` is not given (``jaket`` only with
    ``--model``); ``finetune_variant``: ``finetune``'s without ``--model`` or ``--variant``;
    ``runner`` (a :data:`Reference`, as the next four): the function that runs a resolved job, ``(job, out_dir, *, save_dir, device,
    log_with, keep_model) -> TaskResult`` (and ``inputs=`` with ``read_inputs``); ``read_inputs``:
    the function that reads and checks a resolved job's files, ``job -> inputs``, called before
    the runner's model code is imported (a malformed file is refused in the time it takes to parse it)
    and handed to the runner as ``inputs=``, read once (None: the runner reads its own); ``table``:
    the function that prints a result as the command's table; ``grid_task``: the
    :class:`~jaket.tasks.grid.GridTask` class (None: the task runs no grid); ``model``: the :class:`~jaket.tasks.finetuned.FinetunedModel` class
    (None: nothing to predict with), whose ``jaket predict`` flags ``add_predict_arguments`` adds;
    ``read_predict_inputs`` (``data:read_prediction_inputs``) reads and checks them before the model
    is loaded (no model code imported), called with the values of ``predict_input_flags`` in order
    (the namespace's names; ``settings``: the fine-tuned folder's ``task.json`` settings), and
    ``predict_rows`` (``finetuned:predict_rows``) predicts, ``(model, *values of predict_flags,
    inputs=) -> rows``: the flags are named once, so a task writes no glue between them."""

    name: str
    help: str
    job: type
    runner: Reference = "run:run_job"
    table: Reference = "run:results_table"
    default_variants: tuple[str, ...] = ALL_VARIANTS
    finetune_variant: str = "lm+g+m"
    grid_task: Reference | None = None
    model: Reference | None = None
    predict_help: str | None = None
    add_predict_arguments: Callable | None = None
    read_predict_inputs: Reference = "data:read_prediction_inputs"
    predict_input_flags: tuple[str, ...] = ()
    predict_rows: Reference = "finetuned:predict_rows"
    predict_flags: tuple[str, ...] = ()
    commands: tuple[str, ...] = ("finetune", "evaluate")
    #: an example of ``--set`` in the commands' help
    set_example: str = "--set seeds=[0]"
    #: the seeds ``--first-seed S`` alone runs (None: 5 to evaluate, 1 to fine-tune)
    default_seeds: int | None = None
    #: ``jaket predict``'s input flags, shown after a fine-tuning (``--kg KG``)
    predict_usage: str | None = None
    #: the keys of the result that ``--json`` prints (None: its ``summary``)
    json_keys: tuple[str, ...] | None = None
    read_inputs: Reference | None = None

    def resolve(self, reference: Reference):
        """What a reference names: ``"module:name"`` in the task's package, imported now (the model
        code loads when the task runs, never at ``jaket --help``), or a function that returns it."""
        if callable(reference):
            return reference()
        module, _, name = reference.partition(":")
        return getattr(importlib.import_module(f"{self.package}.{module}"), name)

    @property
    def package(self) -> str:
        """The task's package (its job's), e.g. ``jaket.tasks.kgqa``."""
        return self.job.__module__.rsplit(".", 1)[0]

    def run_function(self) -> Callable:
        """The function that runs a resolved job: the runner, or, with ``read_inputs``, one that reads
        the job's files first and imports the runner (the model code) only then (:func:`read_then_run`)."""
        return self.resolve(self.runner) if self.read_inputs is None else partial(read_then_run, self)

    def table_function(self) -> Callable:
        return self.resolve(self.table)

    def model_class(self) -> type:
        """The fine-tuned model class (``save_pretrained`` / ``from_pretrained`` / ``predict``)."""
        if self.model is None:
            raise ValueError(f"task {self.name!r} saves no fine-tuned model")
        return self.resolve(self.model)

    def grid_task_class(self) -> type | None:
        return None if self.grid_task is None else self.resolve(self.grid_task)

    def read_prediction_inputs(self, args, settings: dict):
        """``jaket predict``'s inputs read and checked from its flags, before the model is loaded."""
        values = {**vars(args), "settings": settings}
        return self.resolve(self.read_predict_inputs)(*(values[name] for name in self.predict_input_flags))

    def predict(self, model, args, inputs=None) -> list[dict]:
        """``jaket predict``'s rows: the task's ``predict_rows`` on the model and the flags' values."""
        return self.resolve(self.predict_rows)(model, *(getattr(args, name) for name in self.predict_flags),
                                               inputs=inputs)


def read_then_run(spec: TaskSpec, job, out_dir=None, **options):
    """Every task's runner with a ``read_inputs``: the job's files read and checked, then the model
    code imported and run on what was read (``inputs=``), so that a bad line costs no model import."""
    inputs = spec.resolve(spec.read_inputs)(job)
    return spec.resolve(spec.runner)(job, out_dir, inputs=inputs, **options)
