"""torch.distributed helpers: ``torchrun`` sets RANK / WORLD_SIZE; gloo on CPU, NCCL on GPU.

The trainer wraps :class:`jaket.train.pretrain.PretrainingObjective` (model + the four task heads
and losses) in :class:`torch.nn.parallel.DistributedDataParallel`, so gradients are averaged
during backward. The memory refresh is split across ranks and recombined with
:func:`all_reduce_delta`; logged metrics are combined with :func:`all_reduce_sum`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)


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


def init_distributed() -> tuple[DistInfo, bool]:
    """Join the process group when launched by torchrun (WORLD_SIZE > 1).

    Returns ``(info, created)``: ``created`` is True when this call created the group (the caller
    then destroys it with :func:`finish_distributed`)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo(), False
    created = False
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
        created = True
        log.info("rank %d of %d joined the %s process group", dist.get_rank(),
                 dist.get_world_size(), backend)
    return DistInfo(dist.get_rank(), dist.get_world_size()), created


def finish_distributed(created: bool) -> None:
    if created and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def all_reduce_delta(tensor: torch.Tensor, before: torch.Tensor, info: DistInfo) -> None:
    """After each rank refreshed its own disjoint rows of ``tensor`` (starting from the common
    ``before``), sum the changes so every rank holds every refreshed row."""
    if not info.active:
        return
    delta = tensor.float() - before.float()
    dist.all_reduce(delta, op=dist.ReduceOp.SUM)
    tensor.copy_((before.float() + delta).to(tensor.dtype))


def all_reduce_sum(values: torch.Tensor, info: DistInfo) -> torch.Tensor:
    if info.active:
        values = values.clone()
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values
