"""``from jaket.pipelines import pipeline``: a whole fine-tuning experiment from Python, the library
the command line stands on.

PyKEEN's ``from pykeen.pipeline import pipeline`` is the model: one call runs a task's comparison
(or one fine-tuning) and returns a typed result with ``to_dataframe()``, the paired differences and
the fine-tuned model in memory::

    from jaket.pipelines import pipeline

    result = pipeline("word-in-context", model="runs/reference-wic/model", variants=["lm", "jaket"], seeds=3,
                      out="runs/wic", data__train="wic/train.data.txt", data__eval="wic/dev.data.txt")
    result.to_dataframe().groupby("variant")["accuracy"].agg(["mean", "std"])
    result.paired                                   # the paired differences, as metrics.json's "paired"
    result.finetuned.predict(pairs, kg)             # the first run's fine-tuned model, in memory

Settings are spelled as the task's job keys (``jaket evaluate TASK --print-config`` lists them): a
nested key either as a dict (``data={"kg": "my_kg"}``) or with ``__`` (``data__kg="my_kg"``); both
are ``data.kg``. ``model`` is the job's ``pretrained`` (the jointly pre-trained input, as ``--model``
everywhere), ``seeds`` a count (seeds 0 .. N-1) or the seeds themselves; the fine-tuned model comes
back as ``result.finetuned``.

Every task is called directly: its spec's ``runner`` (no argv, no subprocess, nothing read back
from disk). ``jaket finetune|evaluate TASK`` is a thin layer over this function
(:func:`jaket.tasks.cli.run_task`: the job its flags describe, handed to :func:`pipeline`), and the
checks before any work (the device, the trackers, ``out``) are written once, in :func:`prepare_run`.
A bad argument is a ``ValueError`` (or ``TypeError``) naming the keyword as the caller wrote it;
nothing here exits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral
from pathlib import Path
from typing import Any

from jaket.model.device import choose_precision, resolve_device
from jaket.output import check_folder_to_replace, check_run_folder
from jaket.overrides import dotted_settings
from jaket.tasks.cli_common import task_job
from jaket.tasks.epoch_checkpoint import remove_checkpoints
from jaket.tasks.registry import TaskSpec, task_spec
from jaket.tasks.results import TaskResult
from jaket.tasks.tracking import check_trackers


def pipeline(task: str, *, out: str | Path | None = None, evaluate: bool = True, model: str | Path | None = None,
             encoder: str | Path | None = None, variants: list[str] | str | None = None,
             seeds: int | Sequence[int] | None = None, config: str | Path | None = None, overwrite: bool = False,
             device: str | None = None, log_with: Sequence[str] = (), precision: str | None = None,
             job: Any = None, **settings: Any) -> TaskResult:
    """Run ``jaket evaluate TASK`` (``evaluate=False``: ``jaket finetune TASK``, one variant) and
    return what it measured, with ``finetuned`` the first run's fine-tuned model in memory.

    ``out``: the run's folder (``metrics.json``, ``report.md``; a fine-tuning's ``out/model``), checked
    before any work (``overwrite`` replaces an earlier run); None writes nothing. ``model``: a jointly
    pre-trained folder (the ``jaket`` setting); ``encoder``: the base encoder (default: the bundled
    MiniLM); ``variants``: the settings to compare (one for finetune); ``seeds``: how many, or which;
    ``config``: a YAML file of the job; ``settings``: any other job key (see the module);
    ``log_with``: tracker names (one name alone is one tracker); ``precision``: ``auto``, ``fp32`` or
    ``bf16`` (``--precision``: the encoder's products in bfloat16 where ``auto`` finds them native on
    ``device``). A bad setting is a ``ValueError`` naming the key, and so is a key given twice
    (``data={"kg": a}`` beside ``data__kg=b``, ``model`` beside ``pretrained``); a value of the wrong
    type (``seeds=True``, ``device=0``) a ``TypeError``.

    ``job``: the task's typed job, complete (what ``jaket finetune|evaluate`` builds from its flags,
    :func:`jaket.tasks.cli_common.task_job`), run as it is: it is built and checked once, so it comes
    alone, without ``config``, ``model``, ``encoder``, ``variants``, ``seeds``, ``precision`` or settings."""
    spec = task_spec(task)
    if spec.runner is None:
        raise ValueError(f"task {task!r} has no runner: its spec cannot be run from Python")
    if job is None:
        if precision is not None:  # --precision wins over the file's and the settings' bf16
            settings = {**settings, "bf16": choose_precision(precision, resolve_device(device)) == "bf16"}
        job = _job(spec, evaluate, model, encoder, variants, seeds, config, settings)
    else:
        given = [name for name, value in (("config", config), ("model", model), ("encoder", encoder),
                                          ("variants", variants), ("seeds", seeds), ("precision", precision))
                 if value is not None] + sorted(settings)
        if given:
            raise ValueError(f"job= is a complete job: give {', '.join(given)} in it, not beside it")
        if not isinstance(job, spec.job):
            raise TypeError(f"job={type(job).__name__}: task {task!r} takes a {spec.job.__name__}")
    where, out, save_dir, log_with = prepare_run(out, evaluate=evaluate, overwrite=overwrite, device=device,
                                                 log_with=log_with)
    return spec.run_function()(job, out, save_dir=save_dir, device=where, log_with=log_with, keep_model=True)


def prepare_run(out: str | Path | None, *, evaluate: bool, overwrite: bool = False, device: str | None = None,
                log_with: Sequence[str] | str = ()) -> tuple[str, Path | None, Path | None, tuple[str, ...]]:
    """The checks before any work, the one place of them (``pipeline()`` and so every command):
    ``(device, out, save_dir, trackers)`` once the device exists here, the trackers are installed and
    ``out`` is not an earlier run's folder (``overwrite`` replaces it, and a stopped run's epoch
    checkpoints go; a fine-tuning's ``out/model``, its ``save_dir``, is refused now when it holds
    something else, not after the first run)."""
    where = resolve_device(device)
    log_with = (log_with,) if isinstance(log_with, str) else tuple(log_with)
    check_trackers(log_with)
    out = None if out is None else Path(out)
    if out is not None:
        check_run_folder(out, overwrite)
        if overwrite:  # a stopped run's epoch checkpoints would be resumed: the new run starts afresh
            remove_checkpoints(out)
    save_dir = None if evaluate or out is None else out / "model"
    if save_dir is not None:
        check_folder_to_replace(save_dir, "task.json", "fine-tuned model")  # jaket.tasks.finetuned.TASK_FILE
    return where, out, save_dir, log_with


def _job(spec: TaskSpec, evaluate: bool, model, encoder, variants, seeds, config, settings: Mapping):
    """The task's typed job: its defaults < ``config`` < the keyword settings; a bad value is named
    as the caller wrote it (``trian=3: trian: unknown key ...``, ``data__kg=...``, ``model=...``)."""
    spelled: dict[str, str] = {}
    values = dotted_settings(settings, spelled=spelled)
    for key, argument, value in (("pretrained", "model", model), ("encoder", "encoder", encoder)):
        if value is not None:
            if key in values:
                raise ValueError(f"{key}: given twice, as {argument}= and as the setting {key}; give it once")
            values[key] = value
            spelled[key] = argument
    if variants is not None:
        values["variants"] = [variants] if isinstance(variants, str) else list(variants)
        if not values["variants"]:
            raise ValueError("variants=[]: give at least one variant, or None for the task's default variants")
    if seeds is not None:
        values["seeds"] = _seeds(seeds)

    def origin(key: str, value) -> str:
        return f"{spelled.get(key, key)}={value!r}"

    return task_job(spec.job, evaluate, config, [], values, what=spec.name, origin=origin,
                    default_variants=spec.default_variants, finetune_variant=spec.finetune_variant)


def _seeds(seeds) -> list[int]:
    """``seeds`` as the job's list: a count ``N`` (seeds 0 .. N-1, N at least 1) or the seeds
    themselves (integers, at least one; a bool is neither). Negative and repeated seeds are refused
    with the job (:func:`jaket.tasks.config.load_task_config`)."""
    if isinstance(seeds, Integral) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds={seeds}: give a number of seeds of at least 1, or the seeds themselves "
                             "(None: the task's default)")
        return list(range(int(seeds)))
    if isinstance(seeds, (str, bytes, bool)) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds={seeds!r}: give a number of seeds (an int) or the seeds themselves (a list of ints)")
    chosen = list(seeds)
    wrong = [s for s in chosen if isinstance(s, bool) or not isinstance(s, Integral)]
    if wrong:
        raise TypeError(f"seeds: {wrong[0]!r} is not an integer seed")
    if not chosen:
        raise ValueError("seeds=[]: give at least one seed, or None for the task's default seeds")
    return [int(s) for s in chosen]
