"""The output folder of a pre-training run: one writer at a time, no earlier run overwritten
unasked, and a clean stop on SIGTERM / SIGINT.

- :func:`output_lock`: an exclusive ``fcntl.flock`` on ``OUT/.jaket-lock`` held for the whole run
  (rank 0), so two runs with the same ``--out`` cannot both write it; the kernel drops the lock when
  the process dies, so a killed run never leaves a stale lock.
- :func:`prepare_output`: a fresh start refuses a folder that holds an earlier run (metrics,
  checkpoints, summary) unless told to replace it; ``--resume`` without a checkpoint is an error;
  ``--resume=auto`` without one starts afresh and keeps an earlier ``metrics.jsonl`` beside it.
- :class:`StopSignals`: the first SIGTERM or SIGINT is remembered and the loop stops after the
  current step with a checkpoint (:class:`TrainingInterrupted`, exit status 128 + signal); a
  second one stops at once.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from jaket.train.checkpoint import CHECKPOINTS, LATEST, NoCheckpointError, checkpoint_dirs

log = logging.getLogger(__name__)

LOCK_FILE = ".jaket-lock"
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
#: how ``--resume`` is given: ``never`` (fresh start), ``require`` (a checkpoint must exist) or
#: ``auto`` (resume when there is a checkpoint, else start)
ResumeMode = Literal["never", "require", "auto"]


class RunFolderError(ValueError):
    """The output folder cannot be used as asked; the message says what to do."""


class RunLockedError(RunFolderError):
    """Another process holds the output folder."""


class RunExistsError(RunFolderError):
    """A fresh start was asked for in a folder holding an earlier run."""


class TrainingInterrupted(Exception):
    """Training stopped on a signal after saving a checkpoint; exit with ``128 + signum``."""

    def __init__(self, signum: int, step: int, checkpoint: Path | None):
        self.signum, self.step, self.checkpoint = signum, step, checkpoint
        name = signal.Signals(signum).name
        saved = f"checkpoint {checkpoint} written" if checkpoint else "nothing to save yet"
        super().__init__(f"stopped by {name} after step {step}; {saved}; continue with --resume")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def resume_mode(value: bool | str | None) -> ResumeMode:
    """``False``/``None`` -> never, ``True`` -> require, or the mode's name."""
    if value is None or value is False:
        return "never"
    if value is True:
        return "require"
    if value in ("never", "require", "auto"):
        return value  # type: ignore[return-value]
    raise ValueError(f"resume must be never, require or auto, not {value!r}")


# ------------------------------------------------------------------------ the lock
_held: dict[Path, list[int]] = {}  # resolved folder -> [fd, depth]
_held_guard = threading.Lock()


@contextmanager
def output_lock(out: str | Path) -> Iterator[None]:
    """Hold the exclusive lock of ``out`` (created if needed); re-entrant within a process.
    Raises :class:`RunLockedError` naming the holder when another process has it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    key = out.resolve()
    with _held_guard:
        if key in _held:
            _held[key][1] += 1
            fd = None
        else:
            fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                os.close(fd)
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                raise RunLockedError(
                    f"{out}: another jaket pretrain is writing this folder ({holder or 'holder unknown'}); "
                    f"wait for it to finish or choose another --out") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
            _held[key] = [fd, 1]
    try:
        yield
    finally:
        with _held_guard:
            entry = _held[key]
            entry[1] -= 1
            if entry[1] == 0:
                del _held[key]
                fcntl.flock(entry[0], fcntl.LOCK_UN)  # the file stays: deleting it would race
                os.close(entry[0])


# ------------------------------------------------------------------------ earlier runs
def earlier_run(out: str | Path) -> list[str]:
    """What in ``out`` belongs to an earlier run (empty when nothing does)."""
    out = Path(out)
    found = [name for name in (METRICS, SUMMARY) if (out / name).exists()]
    steps = checkpoint_dirs(out)
    if steps:
        found.append(f"{CHECKPOINTS}/{steps[0].name}" + (f" and {len(steps) - 1} older"
                                                          if len(steps) > 1 else ""))
    return found


def prepare_output(out: str | Path, mode: ResumeMode, overwrite: bool = False, write: bool = True
                   ) -> bool:
    """Check ``out`` before a run; returns whether there is a checkpoint to resume from. Only with
    ``write`` (rank 0) is anything removed or renamed (``overwrite``, ``auto``).

    Fresh start (``never``): a folder holding an earlier run is refused
    (:class:`RunExistsError`) unless ``overwrite``, which removes its metrics, summary,
    checkpoints and TensorBoard logs. ``require`` without a checkpoint: :class:`NoCheckpointError`.
    ``auto`` without a checkpoint: a fresh start; an earlier ``metrics.jsonl`` (a run killed before
    its first checkpoint) is renamed ``metrics.restarted-N.jsonl``, not deleted.
    """
    out = Path(out)
    has_checkpoint = bool(checkpoint_dirs(out))
    if mode == "never":
        found = earlier_run(out)
        if found and not overwrite:
            raise RunExistsError(
                f"{out} holds an earlier run ({', '.join(found)}): continue it with --resume, "
                f"or choose another --out (--overwrite replaces it)")
        if found and write:
            log.warning("%s: --overwrite: removing the earlier run (%s)", out, ", ".join(found))
            for name in (METRICS, SUMMARY):
                (out / name).unlink(missing_ok=True)
            for name in (CHECKPOINTS, "tensorboard"):
                shutil.rmtree(out / name, ignore_errors=True)
        return False
    if has_checkpoint:
        return True
    if mode == "require":
        pointer = out / CHECKPOINTS / LATEST
        hint = f" ({pointer} exists, but no step-* folder)" if pointer.exists() else ""
        raise NoCheckpointError(
            f"{out / CHECKPOINTS}: no checkpoint to resume from{hint}; run without --resume to "
            f"start, or with --resume=auto to start when there is none")
    if write and (out / METRICS).exists():
        n = 1
        while (aside := out / f"metrics.restarted-{n}.jsonl").exists():
            n += 1
        (out / METRICS).rename(aside)
        log.warning("%s: --resume=auto found no checkpoint: starting afresh; the earlier %s is kept "
                    "as %s", out, METRICS, aside.name)
    return False


# ------------------------------------------------------------------------ stop signals
class StopSignals:
    """Within the block, SIGTERM and SIGINT set :attr:`received` instead of stopping the process
    (the training loop checks it after each step); a second signal stops at once. Outside the main
    thread (where handlers cannot be installed) it does nothing."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame) -> None:
        if self.received is not None:  # the second one: stop now
            self.restore()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signum)
            return
        self.received = signum
        log.warning("%s received: finishing the current step, then saving a checkpoint "
                    "(send it again to stop at once)", signal.Signals(signum).name)

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous = {}

    def __exit__(self, *exc) -> None:
        self.restore()
