"""What a pre-training run records while it trains, and of the session that ran it.

:class:`RunRecord` (rank 0 writes; the other ranks only step through it): one ``metrics.jsonl`` row
per logged step (:class:`jaket.train.metrics.LossTally`'s values), the same values to the engine's
trackers (TensorBoard, W&B, MLflow: :func:`jaket.train.engine.trackers`) and the progress bar.
:class:`SessionClock`: the wall and CPU time and the machine's load of the session, the
``session`` part of ``summary.json`` (a resumed run's counts only its own session).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from jaket.atomic import json_text
from jaket.train.config import PretrainConfig


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """The leaves of a nested dict under dotted keys: ``{"optim": {"lm_lr": x}}`` ->
    ``{"optim.lm_lr": x}`` (the keys of ``--set``; how trackers and checkpoints compare configs)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


class SessionClock:
    """Wall and CPU seconds and the load average, from its creation to :meth:`figures`."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.load = os.getloadavg()

    def figures(self, resumed_from: Path | None) -> dict:
        return {"wall_seconds": round(time.perf_counter() - self.wall, 1),
                "cpu_seconds": round(time.process_time() - self.cpu, 1),
                "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
                "load_average_start": [round(x, 2) for x in self.load],
                "load_average_end": [round(x, 2) for x in os.getloadavg()],
                "resumed": resumed_from is not None,
                "resumed_from": resumed_from.name if resumed_from is not None else None}


class RunRecord:
    """The record of the steps of one session, a context manager: entering opens ``path``
    (appended: a resumed run continues it) and the trackers, leaving closes them and the bar.

    ``write``: whether this process records (rank 0); ``progress``: show the bar (on rank 0)."""

    def __init__(self, path: Path, accelerator, config: PretrainConfig, step: int,
                 progress: bool, write: bool):
        self.path = path
        self.accelerator = accelerator
        self.config = config
        self.first_step = step
        self.progress = progress and write
        self.write = write
        self.bar = None
        self.handle = None

    def __enter__(self) -> RunRecord:
        if self.write:
            self.accelerator.init_trackers("pretrain", config={
                k: v if isinstance(v, (int, float, str, bool)) else str(v)
                for k, v in flatten(self.config.model_dump(mode="json")).items()})
        self.bar = tqdm(total=self.config.steps, initial=self.first_step, disable=not self.progress,
                        desc="pretrain", dynamic_ncols=True)
        self.handle = open(self.path, "a", encoding="utf-8") if self.write else None
        return self

    def step(self, step: int, values: dict[str, float] | None) -> None:
        """Step ``step`` is done; ``values``: what it logs (None on a step not logged)."""
        if values is not None:
            if self.handle is not None:
                self.handle.write(json_text({"step": step, **values}, indent=None) + "\n")  # NaN: null
                self.handle.flush()
                self.accelerator.log(values, step=step)
            self.bar.set_postfix({k[5:]: f"{v:.3f}" for k, v in values.items() if k.startswith("loss_")},
                                 refresh=False)
        self.bar.update(1)

    def __exit__(self, *exc) -> None:
        self.bar.close()
        if self.handle is not None:
            self.handle.close()
        for tracker in self.accelerator.trackers:
            tracker.finish()
