"""Where a model runs: ``--device`` on every command, and where the entity context memory lives.

:func:`resolve_device` turns the flag into a :class:`torch.device` (default: ``cuda`` when a GPU is
visible, else ``cpu``); :func:`memory_placement` decides whether ``E^context`` is copied to the
accelerator (it fits in ``MEMORY_SHARE`` of the free device memory) or stays in host memory
(pinned when it is in RAM, the memory-mapped file otherwise), from where each step copies only the
rows it needs, without blocking (:meth:`jaket.model.memory.EntityContextMemory.entity_rows`).
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import statistics
import time

import torch

from jaket.errors import UsageError
from jaket.flags import PRECISIONS

log = logging.getLogger(__name__)

#: at most this share of the accelerator's free memory is given to the entity context memory
MEMORY_SHARE = 0.25
#: a CPU whose bf16 matrix products take more than this many times the float32 time has no native bf16
BF16_SLOWDOWN_LIMIT = 2.0


def default_device() -> str:
    """``cuda`` when a GPU is visible, else ``cpu``; ``cpu`` under ``accelerate launch --cpu``
    (which sets ``ACCELERATE_USE_CPU``)."""
    if os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes"):
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(name: str | torch.device | None = None, flag: str = "--device") -> torch.device:
    """``name`` (``cpu``, ``cuda``, ``cuda:1``, ``mps``; None = :func:`default_device`) as a
    device this machine has; :class:`UsageError` naming ``flag`` otherwise, a ``TypeError`` for a
    value that is not a name (``0``: Torch's ordinal, which read as None chose the default device)."""
    if isinstance(name, torch.device):
        return name
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{flag} {name!r}: give a device name (cpu, cuda, cuda:N, mps) or a torch.device, "
                        f"not {type(name).__name__}")
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


def native_bf16(device: torch.device | str) -> bool:
    """Whether ``device`` computes bf16 matrix products natively: a CUDA GPU that supports bf16, or
    a CPU on which a bf16 product measures at least as fast as the float32 one
    (:func:`bf16_slowdown`; the measurement, not the CPU flags, decides: ``ATEN_CPU_CAPABILITY=avx2``
    on an AVX-512 BF16 CPU emulates bf16 too). Other devices: False."""
    device = torch.device(device)
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return bf16_slowdown() <= 1.0
    return False


def choose_precision(requested: str | None, device: torch.device | str, default: str = "fp32") -> str:
    """``"bf16"`` or ``"fp32"`` for a run on ``device``: ``requested`` as given (``bf16`` on a CPU
    without native bf16 warns once, :func:`autocast`), ``auto`` = bf16 exactly where
    :func:`native_bf16`; None = ``default``."""
    requested = requested or default
    if requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {requested!r}")
    if requested == "auto":
        chosen = "bf16" if native_bf16(device) else "fp32"
        log.info("--precision auto: %s on %s", chosen, torch.device(device))
        return chosen
    if requested == "bf16" and torch.device(device).type == "cpu":
        _warn_without_native_bf16()  # once, with the measured ratio, where bf16 is emulated
    return requested


def autocast(device: torch.device | str, bf16: bool):
    """Mixed precision for a fine-tuning step or an evaluation: ``torch.autocast`` to bfloat16 on
    ``device`` when ``bf16``, else a no-op context. Parameters, gradients and the optimizer stay
    fp32 (autocast only computes eligible products in bf16); callers score in fp32. On a CPU
    without native bf16 (:func:`bf16_slowdown` above :data:`BF16_SLOWDOWN_LIMIT`) the first use warns
    once, with the measured ratio: there bf16 makes a run many times slower, not faster."""
    device_type = torch.device(device).type
    if bf16 and device_type == "cpu":
        _warn_without_native_bf16()
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=bool(bf16))


@functools.lru_cache(maxsize=1)
def bf16_slowdown(size: int = 256, repeats: int = 7) -> float:
    """How many times longer a bf16 matrix product takes than the float32 one on this CPU (one
    thread, ``size x 384 @ 384 x 384``; about 10 ms where bf16 is native, well under a second where
    it is emulated). ~0.1-1 on CPUs with AVX-512 BF16 or AMX, tens on AVX2-only CPUs.

    The median of ``repeats`` interleaved pairs, each product timed in this thread's CPU time
    (``time.thread_time``), so other processes taking the core do not count: timed by the wall
    clock over five back-to-back products, a loaded 2-core machine with native bf16 once measured
    2.4 here and ``--precision auto`` chose fp32 (``jaket bench precision``, docs/performance.md)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the product then runs in this thread, which thread_time measures
    # its own generator: the probe runs at a run's first bf16 autocast, after the run was seeded, and
    # drawing from the global one shifted that run's dropout (a grid's first cell differed from the
    # same cell run later, #36)
    generator = torch.Generator().manual_seed(0)
    try:
        operands = {dtype: (torch.randn(size, 384, generator=generator).to(dtype),
                            torch.randn(384, 384, generator=generator).to(dtype))
                    for dtype in (torch.float32, torch.bfloat16)}
        timings: dict = {dtype: [] for dtype in operands}
        for a, b in operands.values():
            a @ b  # warm-up: oneDNN builds its kernel
        for _ in range(repeats):
            for dtype, (a, b) in operands.items():
                began = time.thread_time()
                a @ b
                timings[dtype].append(time.thread_time() - began)
        return statistics.median(timings[torch.bfloat16]) / max(statistics.median(timings[torch.float32]), 1e-9)
    finally:
        torch.set_num_threads(threads)


@functools.lru_cache(maxsize=1)
def _warn_without_native_bf16() -> None:
    ratio = bf16_slowdown()
    if ratio > BF16_SLOWDOWN_LIMIT:
        log.warning("bf16 on a CPU without native bf16 (%s): a bf16 matrix product takes %.0fx the float32 "
                    "time here, so --precision bf16 makes this run much slower; use --precision auto or fp32",
                    cpu_description(), ratio)


def cpu_description() -> dict:
    """The CPU figures depend on: model name, PyTorch's vector capability (``AVX2``, ``AVX512``,
    ...), whether it advertises AVX-512 BF16 / AMX, and the core count."""
    model, flags = platform.processor() or "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name") and not model.strip():
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1]
                if model and flags:
                    break
    except OSError:
        pass
    words = set(flags.split())
    return {"model": model.strip() or platform.machine(), "capability": torch.backends.cpu.get_cpu_capability(),
            "avx512_bf16": "avx512_bf16" in words, "amx": "amx_bf16" in words, "cores": os.cpu_count()}


def machine_description() -> dict:
    """What a measured figure depends on, recorded beside it in every metrics.json, summary.json
    and benchmark JSON: the CPU (:func:`cpu_description`), whether it computes bf16 natively, the
    torch version and the GPU when one is visible."""
    cpu = cpu_description()
    machine = {"cpu": cpu, "native_bf16_cpu": bool(cpu["avx512_bf16"] or cpu["amx"]),
               "torch": torch.__version__}
    if torch.cuda.is_available():
        machine["gpu"] = torch.cuda.get_device_name()
    return machine


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
