"""Atomic, pickle-free training checkpoints.

A checkpoint is a directory ``step-XXXXXXX/`` holding
``model.safetensors`` (parameters and buffers), ``optimizer.safetensors`` (AdamW moments, flattened
``state.<param>.<key>``), ``memory.safetensors`` (the entity / relation memory), ``rng.safetensors``
(torch CPU generator state) and ``state.json`` (step, refresh counter, data position, scheduler
state, optimizer hyper-parameters, python / numpy RNG states). Everything is written into a
temporary directory first and moved into place with ``os.replace``; ``latest`` names the newest.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o666 & ~_umask())
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_tree(directory: Path) -> None:
    """Flush every file of ``directory`` and the directory itself to disk (before it is renamed
    into place, so a checkpoint that has a name is complete even after a power cut)."""
    for item in directory.iterdir():
        with open(item, "rb") as handle:
            os.fsync(handle.fileno())
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rng_state() -> tuple[dict, dict]:
    """(json-able states of python and numpy's global RNG, tensors of torch's)."""
    version, internal, gauss = random.getstate()
    np_state = np.random.get_state()
    state = {"python": [version, list(internal), gauss],
             "numpy": [np_state[0], np_state[1].tolist(), *map(_py, np_state[2:])]}
    return state, {"torch_cpu": torch.get_rng_state()}


def _py(value):
    return value.item() if hasattr(value, "item") else value


def set_rng_state(state: dict, tensors: dict) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(tensors["torch_cpu"])


def generator_state(generator: np.random.Generator) -> dict:
    """A numpy Generator's bit-generator state as JSON (PCG64 ints are arbitrary-precision)."""
    return json.loads(json.dumps(generator.bit_generator.state))


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, state in sd["state"].items():
        for key, value in state.items():
            if torch.is_tensor(value):
                tensors[f"state.{pid}.{key}"] = value.contiguous()
            else:
                scalars[f"{pid}.{key}"] = value
    groups = [{k: v for k, v in g.items() if k != "params"} | {"params": list(g["params"])}
              for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars}


def _load_optimizer(optimizer: torch.optim.Optimizer, tensors: dict, meta: dict) -> None:
    state: dict = {}
    for name, value in tensors.items():
        _, pid, key = name.split(".", 2)
        state.setdefault(int(pid), {})[key] = value
    for name, value in meta["scalars"].items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def save_checkpoint(out_dir: str | Path, step: int, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, scheduler, memory_tensors: dict[str, torch.Tensor],
                    state: dict, keep: int | None = None) -> Path:
    """Write ``out_dir/checkpoints/step-<step>`` atomically, point ``latest`` at it and keep only
    the ``keep`` newest checkpoints (all when None)."""
    root = Path(out_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:07d}"
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; a checkpoint is ordinary output
    try:
        model_tensors = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
        save_file(_dedupe(model_tensors), tmp / "model.safetensors")
        opt_tensors, opt_meta = _optimizer_tensors(optimizer)
        save_file(opt_tensors, tmp / "optimizer.safetensors")
        save_file({k: v.detach().contiguous() for k, v in memory_tensors.items()},
                  tmp / "memory.safetensors")
        py_rng, torch_rng = rng_state()
        save_file(torch_rng, tmp / "rng.safetensors")
        meta = dict(state, step=step, optimizer=opt_meta, scheduler=scheduler.state_dict(),
                    rng=py_rng)
        meta["scheduler"].pop("lr_lambdas", None)
        (tmp / "state.json").write_text(json.dumps(meta), encoding="utf-8")
        _fsync_tree(tmp)
        if final.exists():  # a resumed run writing the same step again: move the old one aside
            stale = root / f".stale-{final.name}-{os.getpid()}"
            os.replace(final, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _atomic_write_text(root / "latest", final.name + "\n")
    _prune(root, keep, final)
    return final


def _prune(root: Path, keep: int | None, newest: Path) -> None:
    """Remove all but the ``keep`` newest ``step-*`` directories (never ``newest``) and the
    temporary directories of writes that were killed."""
    for stale in root.glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    if keep is None:
        return
    steps = sorted(p for p in root.glob("step-*") if p.is_dir())
    for old in steps[:-keep] if keep > 0 else steps:
        if old != newest:
            shutil.rmtree(old, ignore_errors=True)


def _dedupe(tensors: dict) -> dict:
    """safetensors refuses shared storage (tied embeddings): store clones."""
    return {k: v.clone() for k, v in tensors.items()}


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    pointer = Path(out_dir) / "checkpoints" / "latest"
    if not pointer.exists():
        return None
    path = pointer.parent / pointer.read_text(encoding="utf-8").strip()
    return path if path.exists() else None


def load_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler) -> tuple[dict, dict[str, torch.Tensor]]:
    """Restore model, optimizer, scheduler and global RNGs; return (state.json, memory tensors)."""
    path = Path(path)
    meta = json.loads((path / "state.json").read_text(encoding="utf-8"))
    missing, unexpected = model.load_state_dict(load_file(path / "model.safetensors"), strict=False)
    if unexpected or [m for m in missing if m not in _tied(model)]:
        raise ValueError(f"{path}/model.safetensors: missing {missing}, unexpected {unexpected}")
    _load_optimizer(optimizer, load_file(path / "optimizer.safetensors"), meta["optimizer"])
    sched = dict(meta["scheduler"])
    sched["lr_lambdas"] = [None] * len(optimizer.param_groups)  # plain functions: rebuilt, not stored
    scheduler.load_state_dict(sched)
    set_rng_state(meta["rng"], load_file(path / "rng.safetensors"))
    return meta, load_file(path / "memory.safetensors")


def _tied(model: torch.nn.Module) -> set[str]:
    return set()
