"""Relation classification's job: the task config (:class:`RelationClassificationConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "relation-classification"


@dataclass
class RelationClassificationConfig:
    variants: tuple[str, ...] = ("lm", "jaket")
    settings: tuple[tuple[int, int], ...] = ((5, 1), (5, 5))
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    num_train_relations: int = 3
    train_relations: tuple[str, ...] | None = None  # explicit list overrides the count
    #: with separate training data: drop its relations that are also evaluation relations
    #: (otherwise such an overlap is an error)
    drop_overlap: bool = False
    train_steps: int = 150
    train_way: int = 3
    train_shot: int = 1
    episodes: int = 1000
    max_length: int = 128
    lr: float = 2e-5
    head_lr: float = 1e-3
    encoder: Path | None = None
    pretrained: Path | None = None
    #: bf16 autocast for the encoder (:func:`jaket.model.device.autocast`); the score head is fp32
    bf16: bool = False
