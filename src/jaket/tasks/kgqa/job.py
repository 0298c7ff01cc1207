"""KGQA's job: the task config (:class:`KGQAConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass

from jaket.tasks.settings import BackboneSettings


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "kgqa"


@dataclass
class KGQAConfig(BackboneSettings):
    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    kg_settings: tuple[str, ...] = ("full", "50%")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-5
    head_lr: float = 1e-3
    km_lr: float = 5e-4
    max_length: int = 48
    #: train / selection / test shares of the questions, per seed, when no split is given
    split: tuple[float, float, float] = (0.6, 0.1, 0.3)
    max_candidates: int = 2000
    #: Hits@1 on the selection questions every N steps (and after the last), best state kept; 0 = off
    select_every: int = 100
    #: selection questions read at each of those checks (the first N of the selection part)
    max_selection: int = 500
    #: False: one KM pass over the whole KG per step (the reference for the subgraph pass)
    subgraph: bool = True
    #: > 0: training samples at most this many in-edges per node and hop of the step's subgraph
    #: (seeded; like pre-training's fan-out), 0 = every edge, exact; evaluation always reads every edge
    km_fanout: int = 0
    #: bf16 autocast for the question's and the candidates' passes in training and evaluation
    #: (:func:`jaket.model.device.autocast`; ``--precision``)
    bf16: bool = False
