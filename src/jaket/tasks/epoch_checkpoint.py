"""Resumable fine-tuning: a run's state after each epoch, so that a stopped run continues exactly.

A comparison whose runs take hours (word in context with a 110M encoder: 2-3 CPU-hours a run,
docs/performance.md) writes, after every epoch of every run, ``OUT/checkpoints/<variant>-seed<S>/``:

- ``state.safetensors``: the model's parameters and buffers (``model.*``), the AdamW moments
  (``optimizer.*``), the weights of the best epoch so far (``best.*``) and torch's CPU generator
  (``torch_rng``: dropout);
- ``state.json``: the epochs done, the history, the best selection score, the learning-rate
  schedule's and the optimizer's scalar state, the states of the run's numpy generators, and the
  run's fingerprint (a SHA-256 of its configuration, its data and its setting and seed).

A checkpoint is written into a temporary folder and renamed into place (a folder that has its
name is whole) and holds safetensors and JSON only. The same command into the same ``--out``
resumes every run after its last finished epoch, bit for bit the uninterrupted run
(``tests/tasks/test_word_in_context.py``); a checkpoint of another configuration is refused before
any work, never silently restarted (``--overwrite`` starts afresh); the folder goes when the
comparison's ``metrics.json`` is written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from jaket.atomic import atomic_directory, write_json
from jaket.errors import UsageError
from jaket.train.checkpoint import generator_state, optimizer_from_tensors, optimizer_tensors

logger = logging.getLogger(__name__)

#: the folder of a run's checkpoints, inside its ``--out``
CHECKPOINTS = "checkpoints"
_TENSORS, _STATE = "state.safetensors", "state.json"
#: what an epoch checkpoint's state.json says it is
KIND = "jaket fine-tuning epoch checkpoint"


def run_fingerprint(settings: dict) -> str:
    """SHA-256 of a run's settings (JSON values: its configuration, data, setting and seed)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class EpochCheckpoint:
    """The checkpoint folder of one run and the fingerprint the run must match."""

    folder: Path
    fingerprint: str

    def check(self) -> None:
        """Before any work: an existing checkpoint must be this run's (a ``UsageError`` naming the
        folder otherwise); a folder without its state file is an unfinished write, ignored."""
        state = self.folder / _STATE
        if not state.exists():
            return
        try:
            saved = json.loads(state.read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError) as error:
            raise UsageError(f"{state}: unreadable ({error}); pass --overwrite to start the runs again") from None
        if saved != self.fingerprint:
            raise UsageError(f"{self.folder}: a stopped run of another configuration or data; give the same "
                             "command to resume it, --overwrite to start again, or a new --out")

    def save(self, epochs_done: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, schedule,
             generators: dict[str, np.random.Generator], history: dict, best: float,
             best_state: dict[str, torch.Tensor] | None) -> None:
        """The state after ``epochs_done`` epochs, atomically."""
        tensors = {f"model.{k}": v.detach().contiguous().clone() for k, v in model.state_dict().items()}
        moments, optimizer_meta = optimizer_tensors(optimizer)
        tensors.update({f"optimizer.{k}": v for k, v in moments.items()})
        tensors.update({f"best.{k}": v.contiguous() for k, v in (best_state or {}).items()})
        tensors["torch_rng"] = torch.get_rng_state()
        scheduler = schedule.state_dict()
        scheduler.pop("lr_lambdas", None)
        state = {"kind": KIND, "fingerprint": self.fingerprint, "epochs_done": epochs_done, "history": history,
                 "best": best, "has_best": best_state is not None, "optimizer": optimizer_meta, "scheduler": scheduler,
                 "generators": {name: generator_state(g) for name, g in generators.items()}}
        with atomic_directory(self.folder, durable=True) as temporary:
            save_file(tensors, temporary / _TENSORS)
            write_json(temporary / _STATE, state)

    def restore(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, schedule,
                generators: dict[str, np.random.Generator]) -> dict | None:
        """Put the saved state back into ``model``, ``optimizer``, ``schedule``, ``generators`` and
        torch's generator; ``{"epochs_done", "history", "best", "best_state"}``, or None when there
        is no checkpoint (a fresh run)."""
        if not (self.folder / _STATE).exists():
            return None
        self.check()
        state = json.loads((self.folder / _STATE).read_text(encoding="utf-8"))
        tensors = load_file(self.folder / _TENSORS)
        part = {prefix: {k[len(prefix) + 1:]: v for k, v in tensors.items() if k.startswith(prefix + ".")}
                for prefix in ("model", "optimizer", "best")}
        model.load_state_dict(part["model"])
        optimizer.load_state_dict(optimizer_from_tensors(part["optimizer"], state["optimizer"]))
        schedule.load_state_dict(state["scheduler"] | {"lr_lambdas": [None] * len(optimizer.param_groups)})  # rebuilt
        for name, generator in generators.items():
            generator.bit_generator.state = state["generators"][name]
        torch.set_rng_state(tensors["torch_rng"])
        logger.info("resuming after epoch %d from %s", state["epochs_done"], self.folder)
        return {"epochs_done": int(state["epochs_done"]), "history": state["history"], "best": float(state["best"]),
                "best_state": part["best"] if state["has_best"] else None}


def checkpoints_of(out_dir: Path | None, fingerprints: dict[str, str]) -> dict[str, EpochCheckpoint]:
    """The checkpoint of each run (``fingerprints``: the run's folder name -> its fingerprint) in
    ``out_dir``, each checked before any work (:meth:`EpochCheckpoint.check`); none without a folder."""
    if out_dir is None:
        return {}
    found = {name: EpochCheckpoint(Path(out_dir) / CHECKPOINTS / name, value) for name, value in fingerprints.items()}
    for checkpoint in found.values():
        checkpoint.check()
    return found


def remove_checkpoints(out_dir: Path | None) -> None:
    """The comparison is written (``metrics.json``), or ``--overwrite`` starts it afresh: its epoch
    checkpoints go. Only folders this module wrote (their ``state.json`` says :data:`KIND`): a
    pre-training run's ``step-*`` checkpoints in a folder named by mistake are never touched."""
    if out_dir is None or not (Path(out_dir) / CHECKPOINTS).is_dir():
        return
    root = Path(out_dir) / CHECKPOINTS
    for folder in root.iterdir():
        try:
            state = json.loads((folder / _STATE).read_text(encoding="utf-8"))
            # the first checkpoints (2026-12-02) had no kind: their epochs_done and fingerprint say it
            ours = state.get("kind") == KIND or {"epochs_done", "fingerprint"} <= set(state)
        except (OSError, ValueError, AttributeError, TypeError):
            ours = False
        if ours:
            shutil.rmtree(folder, ignore_errors=True)
    if not any(root.iterdir()):
        root.rmdir()
