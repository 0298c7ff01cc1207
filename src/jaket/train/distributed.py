"""torch.distributed helpers: ``torchrun`` sets RANK / WORLD_SIZE; gloo on CPU, NCCL on GPU.

Gradients are averaged across ranks with ``all_reduce`` after each backward pass (the same
arithmetic as ``DistributedDataParallel``; done by hand because the pre-training heads are called
outside the model's ``forward``). The memory refresh is split across ranks and recombined with
:func:`all_reduce_delta`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1


def init_distributed() -> DistInfo:
    """Join the process group when launched by torchrun (WORLD_SIZE > 1); otherwise single process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
    return DistInfo(dist.get_rank(), dist.get_world_size())


def average_gradients(parameters, info: DistInfo) -> None:
    if not info.active:
        return
    for param in parameters:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= info.world_size


def all_reduce_delta(tensor: torch.Tensor, before: torch.Tensor, info: DistInfo) -> None:
    """After each rank refreshed its own disjoint rows of ``tensor`` (starting from the common
    ``before``), sum the changes so every rank holds every refreshed row."""
    if not info.active:
        return
    delta = (tensor.float() - before.float())
    dist.all_reduce(delta, op=dist.ReduceOp.SUM)
    tensor.copy_((before.float() + delta).to(tensor.dtype))


def all_reduce_mean(values: torch.Tensor, info: DistInfo) -> torch.Tensor:
    if info.active:
        values = values.clone()
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        values /= info.world_size
    return values
