"""Link prediction's job: the task config (:class:`LinkPredictionConfig`), its scorers and objectives.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaket.tasks.settings import BackboneSettings


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "link-prediction"


#: link prediction's scoring functions and the metric they score with
SCORERS = ("distmult", "transe", "rotate")
METRICS = ("native", "cosine")
#: what ``--train-encoder`` minimises (:class:`LinkPredictionConfig`)
OBJECTIVES = ("in-batch", "contrastive")
#: the defaults of ``--train-encoder`` where they differ from the frozen mode's: the settings of
#: the documented WN18RR run (docs/results.md, "Training LM1 on the descriptions"): the in-batch
#: objective over 128 triples a step (no queue), LM1 at 5e-5, 55 CPU-minutes of training on one thread
#: (WN18RR valid MRR 0.478 with ``--bf16``)
TRAIN_ENCODER_DEFAULTS = {"scorers": ("rotate",), "steps": 3500, "batch_size": 128, "fanouts": (5, 5),
                          "description_max_length": 32, "encoder_lr": 5e-5, "queue_batches": 0,
                          "refresh_initial": 150, "budget_cpu_seconds": 3300.0, "frozen_warmup_steps": 300}


@dataclass
class LinkPredictionConfig(BackboneSettings):
    variants: tuple[str, ...] = ("lm+g+m",)
    scorers: tuple[str, ...] = ("distmult", "transe")
    seeds: tuple[int, ...] = (0,)
    steps: int = 300
    batch_size: int = 256
    #: uniformly drawn entities shared by a step's batch, each scored as tail and as head
    negatives: int = 256
    #: neighbours sampled per hop around a step's entities (training; evaluation reads the whole graph)
    fanouts: tuple[int, ...] = (10, 10)
    #: also score each positive against its own head as a tail and its own tail as a head: with
    #: description-based entity vectors the query entity is the nearest one to itself, and
    #: uniform negatives almost never contain it (the "self-negatives" of text-based KG completion)
    self_negatives: bool = True
    lr: float = 1e-3
    km_lr: float = 5e-4
    eval_batch_size: int = 256
    max_eval_triples: int | None = None
    holdout_fraction: float = 0.0
    #: fine-tune LM1 on the descriptions with a contrastive loss (:mod:`jaket.tasks.link_prediction.model`);
    #: False = the frozen memory (the paper's fine-tuning, the quick default)
    train_encoder: bool = False
    #: learning rate of LM1 (``train_encoder``)
    encoder_lr: float = 5e-5
    #: what ``train_encoder`` minimises: ``"in-batch"``, the scorer's own function in a softmax over
    #: the step's entities (all described by LM1 in that step), or ``"contrastive"`` (SimKGC's cosine
    #: InfoNCE over in-batch and queued candidates with a learnable temperature)
    objective: str = "in-batch"
    #: ``train_encoder``: steps of the frozen mode (KM and relation map on the fixed first-fill
    #: memory) before LM1 joins (0 = LM1 trains from the first step)
    frozen_warmup_steps: int = 0
    #: ``train_encoder``: LM1's dropout while it trains (False: LM1 computes the step's rows in eval
    #: mode, as the memory refreshes and the evaluation do)
    encoder_dropout: bool = False
    #: initial temperature tau of the contrastive loss (learned) and its additive margin
    temperature: float = 0.05
    margin: float = 0.02
    #: previous steps whose entity vectors are extra negatives (0 = in-batch negatives only)
    queue_batches: int = 0
    #: Eq. 11 for the full memory refresh while LM1 trains: the first after ``refresh_initial``
    #: steps, then intervals growing by ``refresh_growth`` (0 = only the batch's own rows follow LM1)
    refresh_initial: int = 200
    refresh_growth: int = 2
    #: graph-neighbourhood hard negatives per training triple (``train_encoder``; 0 = none)
    hard_negatives: int = 0
    #: bf16 autocast for LM1 (``train_encoder``: its steps and refreshes)
    bf16: bool = False
    #: stop training (``train_encoder``) once this many process CPU seconds are spent (None = run
    #: every step): equal-CPU-time comparisons on a shared machine
    budget_cpu_seconds: float | None = None

    def __post_init__(self) -> None:
        for s in self.scorers:
            if s not in SCORERS:
                raise ValueError(f"unknown scorer {s!r}; choose from {', '.join(SCORERS)}")
        if self.train_encoder:
            without = [v for v in self.variants if v not in ("lm", "lm+g+m", "jaket")]
            if without:
                raise ValueError(f"--train-encoder trains the LM1 that computes the memory: settings lm (LM1 "
                                 f"without KM), lm+g+m and jaket only, not {', '.join(without)}")
        if self.frozen_warmup_steps < 0:
            raise ValueError(f"--frozen-warmup-steps {self.frozen_warmup_steps}: must be >= 0 (0 = none)")
        if self.frozen_warmup_steps and (not self.train_encoder or self.objective != "in-batch"):
            raise ValueError("--frozen-warmup-steps needs --train-encoder with the in-batch objective "
                             "(the frozen mode trains the scorer's own function)")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {self.objective!r}; choose from {', '.join(OBJECTIVES)}")
        if self.hard_negatives < 0:
            raise ValueError(f"--hard-negatives {self.hard_negatives}: must be >= 0 (0 = none)")


    @property
    def metric(self) -> str:
        """The :class:`~jaket.tasks.link_prediction.model.LinkScorer` metric the objective trains."""
        return "cosine" if self.train_encoder and self.objective == "contrastive" else "native"
