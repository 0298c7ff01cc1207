"""The optimisation step every fine-tuning loop shares (link prediction, KGQA, relation
classification; entity classification trains full-batch and selects by dev accuracy per epoch)."""

from __future__ import annotations

import torch

from jaket.tasks.tracking import TaskProgress


def step_done(progress, loss: float) -> None:
    """A training step is done: ``progress`` (a tqdm bar, or None) advances by one, and a
    :class:`jaket.tasks.tracking.TaskProgress` also logs ``loss`` to its trackers."""
    if progress is None:
        return
    progress.update(1)
    if isinstance(progress, TaskProgress):
        progress.loss(loss)


def fine_tuning_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, losses: list[float],
                     progress=None) -> None:
    """One update from ``loss``: clear the gradients, back-propagate, step; the loss is appended
    to ``losses`` (read back: a scalar copy from the device) and reported (:func:`step_done`)."""
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    step_done(progress, losses[-1])
