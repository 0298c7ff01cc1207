"""The distributed engine of pre-training: Hugging Face Accelerate.

:func:`make_accelerator` builds the :class:`accelerate.Accelerator` of a run. It places the model
(``accelerator.device``: the GPU of this rank under ``accelerate launch`` / ``torchrun``, the
CPU with ``--device cpu``), wraps the objective in DistributedDataParallel when several processes
run (NCCL on GPUs, gloo on CPUs), runs the forward under autocast for ``mixed_precision``
(bf16 / fp16, with fp16's gradient scaler) and accumulates gradients over
``optim.accumulation_steps`` micro-steps (no all-reduce before the last). What Accelerate does not
do stays ours: the memory refresh split across ranks and recombined (:func:`all_reduce_delta`),
exact resume and atomic checkpoints (:mod:`jaket.train.checkpoint`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

log = logging.getLogger(__name__)

#: rows of the memory all-reduced at a time (bounds the extra copy the reduction needs)
REDUCE_ROWS = 1 << 16


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


def mixed_precision(config) -> str | None:
    """``no``, ``bf16`` or ``fp16`` from the config (``bf16: true`` is ``bf16``); None when the
    config leaves it to the launcher (``accelerate launch --mixed_precision``)."""
    if config.bf16:
        return "bf16"
    return config.mixed_precision


def trackers(config) -> list[str]:
    """The engine's trackers of a run: ``trackers`` (an error names one not installed) and
    TensorBoard when ``tensorboard`` is on and installed (``pip install jaket[tensorboard]``)."""
    from importlib.util import find_spec

    chosen = list(dict.fromkeys(config.trackers))
    missing = [name for name in chosen if find_spec(name) is None]
    if missing:
        raise ValueError(f"trackers={chosen}: {', '.join(missing)} not installed "
                         f"(pip install {' '.join(missing)})")
    if config.tensorboard and "tensorboard" not in chosen:
        if find_spec("tensorboard") is not None:
            chosen.append("tensorboard")
        else:
            log.info("tensorboard is not installed: no tensorboard/ log (metrics.jsonl has every value)")
    return chosen


def make_accelerator(config, device: torch.device, out_dir=None, log_with=None):
    """The run's Accelerator on ``device`` (``cpu`` forces the CPU; a GPU is chosen per rank by
    Accelerate), logging to ``log_with`` (default :func:`trackers`; TensorBoard into
    ``out_dir/tensorboard``). Its per-process settings are reset first, so runs with other
    settings can follow each other in one process (the tests do)."""
    from pathlib import Path

    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState
    from accelerate.utils import ProjectConfiguration

    precision = mixed_precision(config)
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError("mixed_precision=bf16: this GPU does not support bfloat16 (use fp16)")
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)  # a single process on the GPU named by --device cuda:N
    AcceleratorState._reset_state(reset_partial_state=False)
    GradientState._reset_state()
    log_with = trackers(config) if log_with is None else log_with
    project = None
    if out_dir is not None:
        project = ProjectConfiguration(project_dir=str(out_dir),
                                       logging_dir=str(Path(out_dir) / "tensorboard"))
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=precision,
                              gradient_accumulation_steps=config.optim.accumulation_steps,
                              step_scheduler_with_optimizer=False, log_with=log_with or None,
                              project_config=project)
    if accelerator.num_processes > 1:
        log.info("rank %d of %d on %s (%s)", accelerator.process_index, accelerator.num_processes,
                 accelerator.device, accelerator.distributed_type)
    return accelerator


def dist_info(accelerator) -> DistInfo:
    return DistInfo(accelerator.process_index, accelerator.num_processes)


def finish(accelerator, created: bool) -> None:
    """Wait for every rank, then leave the process group this run joined (``created``)."""
    import torch.distributed as dist
    from accelerate.state import AcceleratorState

    if accelerator.num_processes > 1:
        accelerator.wait_for_everyone()
    if created and dist.is_initialized():
        dist.destroy_process_group()
        AcceleratorState._reset_state(reset_partial_state=True)


def all_reduce_delta(accelerator, tensor: torch.Tensor, before: torch.Tensor) -> None:
    """After each rank refreshed its own disjoint rows of ``tensor`` (starting from the common
    ``before``), sum the changes so every rank holds every refreshed row. The rows go through
    the engine's device ``REDUCE_ROWS`` at a time (NCCL reduces GPU tensors only; a memory in
    host memory need not fit on the GPU)."""
    if accelerator.num_processes <= 1:
        return
    for begin in range(0, len(tensor), REDUCE_ROWS):
        rows = slice(begin, begin + REDUCE_ROWS)
        delta = (tensor[rows].float() - before[rows].float()).to(accelerator.device)
        delta = accelerator.reduce(delta, reduction="sum")
        tensor[rows] = (before[rows].float() + delta.to(before.device)).to(tensor.dtype)


def all_reduce_sum(accelerator, values: torch.Tensor) -> torch.Tensor:
    if accelerator.num_processes <= 1:
        return values
    return accelerator.reduce(values.to(accelerator.device), reduction="sum")


def any_rank_max(accelerator, value: int) -> int:
    """The largest ``value`` of every rank (e.g. the signal that asks to stop)."""
    if accelerator.num_processes <= 1:
        return value
    flags = accelerator.gather(torch.tensor([value], dtype=torch.int64, device=accelerator.device))
    return int(flags.max())
