"""Fine-tuning logs through the engine's trackers: ``--log-with tensorboard`` (or ``wandb``,
``mlflow``) on ``jaket finetune`` and ``jaket evaluate``.

Pre-training logs through Hugging Face Accelerate's trackers (:func:`jaket.train.engine.trackers`);
the fine-tuning loops log to the same tracker classes (``accelerate.tracking``), each installed
on its own (``pip install jaket[tensorboard]``). Every training step's loss (an epoch's, for
entity classification) is logged as ``RUN/train_loss`` at the run's step, the run named as the
progress bar names it (setting, scorer, KG setting or training fraction, seed: ``lm+g+m_rotate_seed_0``), so each
run is one curve; the task's config is stored once. TensorBoard writes into ``OUT/tensorboard``.
``metrics.json`` holds the same losses (``train_loss`` of every run) with or without a tracker.

:class:`TaskProgress` is the task's progress bar with the trackers attached: the loops call
:func:`jaket.tasks.training.step_done` after each step, which advances the bar and logs the loss.
"""

from __future__ import annotations

import argparse
from importlib.util import find_spec
from pathlib import Path

from jaket.errors import UsageError

#: the trackers ``--log-with`` accepts (the engine's: pre-training's ``trackers`` config)
TRACKERS = ("tensorboard", "wandb", "mlflow")


def add_log_with_argument(parser: argparse.ArgumentParser) -> None:
    """The shared ``--log-with`` flag of ``jaket finetune`` / ``jaket evaluate``."""
    parser.add_argument("--log-with", type=lambda text: tuple(x.strip() for x in text.split(",") if x.strip()),
                        default=(), metavar="LIST",
                        help="log every training step's loss to these trackers: tensorboard (into OUT/tensorboard), "
                             "wandb, mlflow; each must be installed (pip install jaket[tensorboard])")


def check_trackers(names) -> tuple[str, ...]:
    """``names`` when each is a tracker ``--log-with`` knows and is installed, else :class:`UsageError`."""
    names = tuple(dict.fromkeys(names))
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise UsageError(f"--log-with {','.join(names)}: unknown tracker(s) {', '.join(unknown)} "
                         f"(choose from {', '.join(TRACKERS)})")
    missing = [n for n in names if find_spec(n) is None]
    if missing:
        raise UsageError(f"--log-with {','.join(names)}: {', '.join(missing)} not installed "
                         f"(pip install {' '.join(missing)})")
    return names


def start_trackers(log_with, out_dir: Path | None, project: str, config: dict) -> list:
    """The started trackers of ``log_with``: names (:data:`TRACKERS`) or ready
    ``accelerate.tracking.GeneralTracker`` objects; each stores ``config`` (flattened to scalars)."""
    if not log_with:
        return []
    from accelerate.tracking import LOGGER_TYPE_TO_CLASS, GeneralTracker

    names = check_trackers([t for t in log_with if not isinstance(t, GeneralTracker)])
    trackers = [t for t in log_with if isinstance(t, GeneralTracker)]
    for name in names:
        tracker_class = LOGGER_TYPE_TO_CLASS[name]
        if tracker_class.requires_logging_directory:
            folder = Path(out_dir if out_dir is not None else Path("runs") / project) / "tensorboard"
            trackers.append(tracker_class(project, str(folder)))
        else:
            trackers.append(tracker_class(project))
    scalars = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in config.items()}
    for tracker in trackers:
        tracker.start()
        tracker.store_init_configuration(scalars)
    return trackers


class TaskProgress:
    """A task's progress bar (``update`` / ``set_postfix_str`` as tqdm's, the postfix naming the
    run) with its trackers: :meth:`loss` logs a step's loss to each under the current run."""

    def __init__(self, total: int, desc: str, unit: str, trackers=()):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, unit=unit)
        self.trackers = list(trackers)
        self.run = "run"
        self.steps: dict[str, int] = {}

    def set_postfix_str(self, text: str) -> None:
        self.bar.set_postfix_str(text)
        self.run = "_".join(text.split()) or "run"

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def loss(self, value: float) -> None:
        step = self.steps[self.run] = self.steps.get(self.run, 0) + 1
        for tracker in self.trackers:
            tracker.log({f"{self.run}/train_loss": float(value)}, step=step)

    def close(self) -> None:
        self.bar.close()
        for tracker in self.trackers:
            tracker.finish()

    def __enter__(self) -> "TaskProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def task_progress(total: int, desc: str, unit: str, log_with=(), out_dir: Path | None = None,
                  config: dict | None = None) -> TaskProgress:
    """The progress of one ``run_*`` of a task, logging to ``log_with`` (:func:`start_trackers`;
    ``desc`` names the project, e.g. ``link prediction``)."""
    project = "finetune-" + "-".join(desc.split())
    return TaskProgress(total, desc, unit, start_trackers(log_with, out_dir, project, config or {}))
