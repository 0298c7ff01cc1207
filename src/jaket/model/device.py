"""Where a model runs: ``--device`` on every command, and where the entity context memory lives.

:func:`resolve_device` turns the flag into a :class:`torch.device` (default: ``cuda`` when a GPU is
visible, else ``cpu``); :func:`memory_placement` decides whether ``E^context`` is copied to the
accelerator (it fits in ``MEMORY_SHARE`` of the free device memory) or stays in host memory
(pinned when it is in RAM, the memory-mapped file otherwise), from where each step copies only the
rows it needs, without blocking (:meth:`jaket.model.memory.EntityContextMemory.entity_rows`).
"""

from __future__ import annotations

import argparse
import os

import torch

from jaket.errors import UsageError

#: at most this share of the accelerator's free memory is given to the entity context memory
MEMORY_SHARE = 0.25


def default_device() -> str:
    """``cuda`` when a GPU is visible, else ``cpu``; ``cpu`` under ``accelerate launch --cpu``
    (which sets ``ACCELERATE_USE_CPU``)."""
    if os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes"):
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(name: str | torch.device | None = None, flag: str = "--device") -> torch.device:
    """``name`` (``cpu``, ``cuda``, ``cuda:1``, ``mps``; None = :func:`default_device`) as a
    device this machine has; :class:`UsageError` naming ``flag`` otherwise."""
    if isinstance(name, torch.device):
        return name
    text = (name or default_device()).strip()
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise UsageError(f"{flag} {text}: not a device (cpu, cuda, cuda:N, mps)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"{flag} {text}: no CUDA GPU is visible on this machine (use --device cpu)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UsageError(f"{flag} {text}: only {torch.cuda.device_count()} CUDA GPU(s) are visible")
    elif device.type == "mps" and not (getattr(torch.backends, "mps", None)
                                       and torch.backends.mps.is_available()):
        raise UsageError(f"{flag} {text}: MPS is not available on this machine")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"{flag} {text}: unsupported device type {device.type!r} (cpu, cuda, mps)")
    return device


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    """The shared ``--device`` flag (resolved by :func:`resolve_device`)."""
    parser.add_argument("--device", metavar="DEVICE", default=None,
                        help="cpu, cuda, cuda:N or mps (default: cuda when a GPU is visible, else cpu)")


def add_bf16_argument(parser: argparse.ArgumentParser) -> None:
    """The shared ``--bf16`` flag of the fine-tuning tasks (see :func:`autocast`)."""
    parser.add_argument("--bf16", action="store_true",
                        help="bf16 autocast for the encoder's matrix products (weights, optimizer and scores "
                             "stay fp32); 2-3x faster on CPUs with AMX / AVX512-BF16, and on GPUs")


def autocast(device: torch.device | str, bf16: bool):
    """Mixed precision for a fine-tuning step or an evaluation: ``torch.autocast`` to bfloat16 on
    ``device`` when ``bf16``, else a no-op context. Parameters, gradients and the optimizer stay
    fp32 (autocast only computes eligible products in bf16); callers score in fp32."""
    device_type = torch.device(device).type
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=bool(bf16))


def module_device(*modules) -> torch.device:
    """Where the first of ``modules`` (None skipped) that has parameters runs (``cpu`` when none
    has): the device a task moves its batches and index tensors to."""
    for module in modules:
        if module is None:
            continue
        for parameter in module.parameters():
            return parameter.device
    return torch.device("cpu")


def memory_placement(nbytes: int, device: torch.device) -> str:
    """``"device"`` when ``nbytes`` of memory rows fit in :data:`MEMORY_SHARE` of ``device``'s
    free memory (always on a CPU device), else ``"host"``."""
    if device.type == "cpu":
        return "device"
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return "device" if nbytes <= MEMORY_SHARE * free else "host"
    return "device"
