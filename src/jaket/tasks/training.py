"""The optimisation step every fine-tuning loop shares (link prediction, KGQA, relation
classification; entity classification trains full-batch and selects by dev accuracy per epoch)."""

from __future__ import annotations

import numpy as np
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


def length_grouped_batches(order: np.ndarray, lengths, batch_size: int, rng: np.random.Generator,
                           window: int = 50) -> list[np.ndarray]:
    """An epoch's training batches of examples of like length (the training counterpart of the
    inference passes' :func:`jaket.model.memory.length_sorted_batches`): ``order`` (an epoch's
    shuffled example indices) is cut into windows of ``window`` batches, each window is sorted by
    ``lengths[i]`` (the example's token count, longest first, stable) and cut into batches of
    ``batch_size``, and the batches of every window are shuffled together with ``rng``. Every
    example is in exactly one batch; a batch is padded to its longest text, so like lengths carry
    little padding (WiC: 56% of the token positions in random batches, about 5% so), while the
    windows keep the epoch's order random at the scale of a window."""
    if batch_size < 1 or window < 1:
        raise ValueError(f"batch_size and window must be at least 1, got {batch_size} and {window}")
    order, lengths = np.asarray(order), np.asarray(lengths)
    batches = []
    span = batch_size * window
    for begin in range(0, len(order), span):
        part = order[begin:begin + span]
        part = part[np.argsort(-lengths[part], kind="stable")]
        batches += [part[b:b + batch_size] for b in range(0, len(part), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]
