"""Typed pre-training configuration (pydantic), loadable from YAML with ``key=value`` overrides.

The embedded default (``configs/pretrain-default.yaml`` is the same values) is the demo run:
a WordNet subset of about 10,000 entities and their usage examples with the bundled MiniLM,
budgeted to finish within 10 minutes on 2 CPU cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataConfig(_Strict):
    source: Literal["wordnet", "toy", "dir"] = "wordnet"
    path: str | None = None  # for source == "dir": a KG directory (jaket.kg.io format)
    max_entities: int = 10_000
    wordnet_roots: list[str] | None = None
    max_length: int = 48
    heldout_fraction: float = 0.05


class ModelSection(_Strict):
    encoder: str | None = None  # None = the bundled MiniLM
    lm1_layers: int | None = None
    km_layers: int = 2
    km_heads: int = 4
    composition: str = "add"
    fanouts: list[int] = Field(default_factory=lambda: [5, 5])
    description_max_length: int = 24
    memory_momentum: float = 0.8


class TaskConfig(_Strict):
    """Loss weights of the four tasks (0 switches a task off) and their sampling sizes."""

    weight_category: float = 1.0
    weight_relation: float = 1.0
    weight_mlm: float = 1.0
    weight_entity: float = 1.0
    root_entities: int = 32  # roots per step for the knowledge-module tasks
    walk_length: int = 3
    relation_pairs: int = 32  # triples predicted per step (hidden from the GNN)
    mlm_probability: float = 0.15
    entity_mask_probability: float = 0.15
    entity_random_negatives: int = 32
    entity_hard_negatives: int = 8
    use_relation_memory: bool = False  # paper: relation memory off during pre-training


class OptimConfig(_Strict):
    lm_lr: float = 1e-4  # paper 1e-5; the short demo uses a larger rate
    km_lr: float = 1e-3  # paper 1e-4
    warmup_fraction: float = 0.06
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    max_grad_norm: float = 1.0
    accumulation_steps: int = 1


class MemoryConfig(_Strict):
    """Refresh schedule (``memory.refresh_interval``): paper initial=10, growth=2, every=3,
    maximum=500. One full refresh of 10,000 MiniLM descriptions costs ~40-80 s on 2 cores, so the
    10-minute demo starts at a gap of 40 steps."""

    initial: int = 40
    growth: int = 2
    every: int = 3
    maximum: int = 500
    batch_size: int = 128


class PretrainConfig(_Strict):
    data: DataConfig = Field(default_factory=DataConfig)
    model: ModelSection = Field(default_factory=ModelSection)
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    steps: int = 120
    text_batch_size: int = 8
    seed: int = 0
    bf16: bool = False  # CPU autocast is off by default
    checkpoint_every: int = 40
    log_every: int = 1
    tensorboard: bool = True  # used only when installed
    eval_texts: int = 200


def _coerce(value: str):
    return yaml.safe_load(value)


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``a.b.c=value`` overrides (values parsed as YAML) to a nested dict in place."""
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r}: expected key=value")
        key, value = item.split("=", 1)
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {part!r} is not a section")
        node[parts[-1]] = _coerce(value)
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PretrainConfig:
    """The embedded default, updated by the YAML file at ``path`` and then by ``overrides``."""
    data: dict = {}
    if path is not None:
        with open(path, encoding="utf-8") as handle:
            try:
                loaded = yaml.safe_load(handle) or {}
            except yaml.YAMLError as error:
                mark = getattr(error, "problem_mark", None)
                line = mark.line + 1 if mark else 0
                raise ValueError(f"{path}:{line}: invalid YAML: {error}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}:1: expected a mapping at the top level")
        data = loaded
    apply_overrides(data, overrides or [])
    try:
        return PretrainConfig.model_validate(data)
    except Exception as error:
        raise ValueError(f"{path or '<overrides>'}: {error}") from None


def dump_config(config: PretrainConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
