"""The optimisation step every fine-tuning loop shares (link prediction, KGQA, relation
classification; entity classification trains full-batch and selects by dev accuracy per epoch)."""

from __future__ import annotations

import torch


def fine_tuning_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, losses: list[float],
                     progress=None) -> None:
    """One update from ``loss``: clear the gradients, back-propagate, step; the loss is appended
    to ``losses`` and ``progress`` (a tqdm bar) advances by one."""
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if progress is not None:
        progress.update(1)
