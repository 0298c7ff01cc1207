"""AdamW with two parameter groups (paper, Implementation Details).

The language module is warmed up linearly to its peak rate and then decayed linearly to zero; the
knowledge module (GNN, fusion, heads) starts at its own rate and decays linearly. Biases and
LayerNorm weights get no weight decay. The fused AdamW kernel is used where torch has one (CPU,
CUDA).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR


def _split_decay(named) -> tuple[list, list]:
    decay, no_decay = [], []
    for name, param in named:
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    return decay, no_decay


def build_optimizer(model: nn.Module, lm_lr: float, km_lr: float, weight_decay: float = 0.01,
                    betas=(0.9, 0.999), eps: float = 1e-8, language_attr: str = "language"
                    ) -> torch.optim.AdamW:
    """Groups 0/1: language module (decay / no decay); groups 2/3: everything else."""
    language = getattr(model, language_attr)
    lm_ids = {id(p) for p in language.parameters()}
    lm_named = [(n, p) for n, p in model.named_parameters() if id(p) in lm_ids]
    km_named = [(n, p) for n, p in model.named_parameters() if id(p) not in lm_ids]
    lm_decay, lm_plain = _split_decay(lm_named)
    km_decay, km_plain = _split_decay(km_named)
    groups = [
        {"params": lm_decay, "lr": lm_lr, "weight_decay": weight_decay, "module": "language"},
        {"params": lm_plain, "lr": lm_lr, "weight_decay": 0.0, "module": "language"},
        {"params": km_decay, "lr": km_lr, "weight_decay": weight_decay, "module": "knowledge"},
        {"params": km_plain, "lr": km_lr, "weight_decay": 0.0, "module": "knowledge"},
    ]
    params = [p for g in groups for p in g["params"]]
    # the fused kernel updates each tensor in one pass: on a shared CPU (threads descheduled by
    # other processes) it is several times faster than the per-op `foreach` path
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") and p.is_floating_point()
                                 for p in params)
    return torch.optim.AdamW(groups, betas=tuple(betas), eps=eps, fused=fused or None)


def warmup_linear(warmup: int, total: int):
    """Factor rising linearly over ``warmup`` steps to 1, then falling linearly to 0 at ``total``."""
    def factor(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))
    return factor


def build_scheduler(optimizer: torch.optim.Optimizer, total_steps: int, warmup_steps: int) -> LambdaLR:
    """One LambdaLR with a per-group factor: warm-up + linear decay for the language groups,
    linear decay from the start for the knowledge groups."""
    lambdas = [warmup_linear(warmup_steps, total_steps) if g.get("module") == "language"
               else warmup_linear(0, total_steps) for g in optimizer.param_groups]
    return LambdaLR(optimizer, lambdas)
