"""``from jaket.pipeline import pipeline``: a whole fine-tuning experiment from Python, the library
the command line stands on.

PyKEEN's ``from pykeen.pipeline import pipeline`` is the model: one call runs a task's comparison
(or one fine-tuning) and returns a typed result with ``to_dataframe()``, the paired differences and
the fine-tuned model in memory::

    from jaket.pipeline import pipeline

    result = pipeline("word-in-context", model="runs/reference-wic/model", variants=["lm", "jaket"], seeds=3,
                      out="runs/wic", data__train="wic/train.data.txt", data__eval="wic/dev.data.txt")
    result.to_dataframe().groupby("variant")["accuracy"].agg(["mean", "std"])
    result.paired                                   # the paired differences, as metrics.json's "paired"
    result.model.predict(pairs, kg)                 # the first run's fine-tuned model, in memory

Settings are spelled as the task's job keys (``jaket evaluate TASK --print-config`` lists them): a
nested key either as a dict (``data={"kg": "my_kg"}``) or with ``__`` (``data__kg="my_kg"``); both
are ``data.kg``. ``model`` is the job's ``pretrained``, ``seeds`` a count (seeds 0 .. N-1) or the
seeds themselves.

Every task is called directly: its spec's ``runner`` (no argv, no subprocess, nothing read back
from disk), the same function ``jaket finetune|evaluate TASK`` runs
(:func:`jaket.tasks.cli_common.run_task`, the thin layer over it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaket.model.device import resolve_device
from jaket.output import check_run_folder
from jaket.tasks.cli_common import task_job
from jaket.tasks.registry import TaskSpec, task_spec
from jaket.tasks.results import TaskResult
from jaket.tasks.tracking import check_trackers


def pipeline(task: str, *, out: str | Path | None = None, evaluate: bool = True, model: str | Path | None = None,
             encoder: str | Path | None = None, variants: list[str] | str | None = None,
             seeds: int | Sequence[int] | None = None, config: str | Path | None = None, overwrite: bool = False,
             device: str | None = None, log_with: Sequence[str] = (), **settings: Any) -> TaskResult:
    """Run ``jaket evaluate TASK`` (``evaluate=False``: ``jaket finetune TASK``, one setting) and
    return what it measured, with ``model`` the first run's fine-tuned model in memory.

    ``out``: the run's folder (``metrics.json``, ``report.md``; a fine-tuning's ``out/model``), checked
    before any work (``overwrite`` replaces an earlier run); None writes nothing. ``model``: a jointly
    pre-trained folder (the ``jaket`` setting); ``encoder``: the base encoder (default: the bundled
    MiniLM); ``variants``: the settings to compare (one for finetune); ``seeds``: how many, or which;
    ``config``: a YAML file of the job; ``settings``: any other job key (see the module). A bad
    setting is a ``ValueError`` naming the key."""
    spec = task_spec(task)
    if spec.runner is None:
        raise ValueError(f"task {task!r} has no runner: its spec cannot be run from Python")
    job = _job(spec, evaluate, model, encoder, variants, seeds, config, settings)
    where = resolve_device(device)
    check_trackers(tuple(log_with))
    if out is not None:
        check_run_folder(Path(out), overwrite)
    save_dir = None if evaluate or out is None else Path(out) / "model"
    return spec.run_function()(job, None if out is None else Path(out), save_dir=save_dir, device=where,
                               log_with=tuple(log_with), keep_model=True)


def _job(spec: TaskSpec, evaluate: bool, model, encoder, variants, seeds, config, settings: Mapping):
    """The task's typed job: its defaults < ``config`` < the keyword settings."""
    values = _dotted(settings)
    for key, value in (("pretrained", model), ("encoder", encoder)):
        if value is not None:
            values[key] = value
    if variants is not None:
        values["variants"] = [variants] if isinstance(variants, str) else list(variants)
    if seeds is not None:
        values["seeds"] = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    return task_job(spec.job, spec.name, evaluate, config, [], values)


def _dotted(settings: Mapping, prefix: str = "") -> dict[str, Any]:
    """``{"data": {"kg": x}}`` and ``{"data__kg": x}`` both as ``{"data.kg": x}``."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        name = prefix + key.replace("__", ".")
        if isinstance(value, Mapping):
            flat.update(_dotted(value, name + "."))
        else:
            flat[name] = value
    return flat
