"""Link prediction's job: the task config (:class:`LinkPredictionConfig`), its scorers and objectives,
and the job the command line and :func:`jaket.pipelines.pipeline` run (:class:`LinkPredictionJob`: the
config, its data section :class:`LinkPredictionData`, and the settings whose default depends on the
mode, resolved by :meth:`LinkPredictionJob.resolved`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from jaket.tasks.job_flags import flag
from jaket.tasks.settings import BackboneSettings, Bound, DataSection, TaskJob, bound_problems, variant_problems


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
    #: training steps
    steps: int = 300
    #: training triples per step
    batch_size: int = 256
    #: uniformly drawn entities shared by a step's batch, each scored as tail and as head
    negatives: int = 256
    #: neighbours sampled per hop around a step's entities (training; evaluation reads the whole graph)
    fanouts: tuple[int, ...] = (10, 10)
    #: also score each positive against its own head as a tail and its own tail as a head: with
    #: description-based entity vectors the query entity is the nearest one to itself, and
    #: uniform negatives almost never contain it (the "self-negatives" of text-based KG completion)
    self_negatives: bool = True
    #: scorer learning rate
    lr: float = 1e-3
    #: knowledge-module learning rate
    km_lr: float = 5e-4
    #: triples scored at once in evaluation
    eval_batch_size: int = 256
    #: evaluate at most this many triples per file
    max_eval_triples: int | None = field(default=None, metadata=flag("max-eval", metavar="N", default="all"))
    #: inductive split: drop the training triples touching this share of the evaluation entities
    holdout_fraction: float = field(default=0.0, metadata=flag("heldout-fraction", metavar="F",
                                                               aliases=("--holdout-fraction",)))
    #: fine-tune LM1 on the descriptions with a contrastive loss (:mod:`jaket.tasks.link_prediction.model`);
    #: False = the frozen memory (the paper's fine-tuning, the quick default)
    train_encoder: bool = False
    #: learning rate of LM1 (``train_encoder``)
    encoder_lr: float = 5e-5
    #: what ``train_encoder`` minimises: ``"in-batch"``, the scorer's own function in a softmax over
    #: the step's entities (all described by LM1 in that step), or ``"contrastive"`` (SimKGC's cosine
    #: InfoNCE over in-batch and queued candidates with a learnable temperature)
    objective: str = field(default="in-batch", metadata=flag(choices=OBJECTIVES))
    #: ``train_encoder``: steps of the frozen mode (KM and relation map on the fixed first-fill
    #: memory) before LM1 joins (0 = LM1 trains from the first step)
    frozen_warmup_steps: int = 0
    #: ``train_encoder``: LM1's dropout while it trains (False: LM1 computes the step's rows in eval
    #: mode, as the memory refreshes and the evaluation do)
    encoder_dropout: bool = False
    #: initial temperature tau of the contrastive loss (learned) and its additive margin
    temperature: float = 0.05
    #: additive margin of the contrastive loss
    margin: float = 0.02
    #: previous steps whose entity vectors are extra negatives (0 = in-batch negatives only)
    queue_batches: int = 0
    #: Eq. 11 for the full memory refresh while LM1 trains: the first after ``refresh_initial``
    #: steps, then intervals growing by ``refresh_growth`` (0 = only the batch's own rows follow LM1)
    refresh_initial: int = 200
    #: Eq. 11: growth of the interval between two full memory refreshes while LM1 trains
    refresh_growth: int = 2
    #: graph-neighbourhood hard negatives per training triple (``train_encoder``; 0 = none)
    hard_negatives: int = 0
    #: bf16 autocast for LM1 (``train_encoder``: its steps and refreshes)
    bf16: bool = False
    #: stop training (``train_encoder``) once this many process CPU seconds are spent (None or 0 =
    #: run every step): equal-CPU-time comparisons on a shared machine
    budget_cpu_seconds: float | None = None

    def __post_init__(self) -> None:
        problems = self.check()
        if problems:
            raise ValueError("; ".join(f"{key}: {message}" for key, message in problems))

    def check(self) -> list[tuple[str, str]]:
        """``(key, problem)`` of every value that is well-typed but unusable."""
        problems = variant_problems(self.variants)
        problems += [("scorers", f"unknown scorer {s!r}; choose from {', '.join(SCORERS)}")
                     for s in self.scorers if s not in SCORERS]
        if self.objective not in OBJECTIVES:
            problems.append(("objective", f"unknown objective {self.objective!r}; choose from {', '.join(OBJECTIVES)}"))
        without = [v for v in self.variants if v not in ("lm", "lm+g+m", "jaket")] if self.train_encoder else []
        if without:
            problems.append(("variants", f"--train-encoder trains the LM1 that computes the memory: settings lm (LM1 "
                                         f"without KM), lm+g+m and jaket only, not {', '.join(without)}"))
        problems += bound_problems(self, dict.fromkeys(("frozen_warmup_steps", "hard_negatives"),
                                                       Bound(0, text="must be >= 0 (0 = none)")))
        if self.frozen_warmup_steps > 0 and (not self.train_encoder or self.objective != "in-batch"):
            problems.append(("frozen_warmup_steps", "needs train_encoder (--train-encoder) with the in-batch "
                                                    "objective (the frozen mode trains the scorer's own function)"))
        return problems

    @property
    def metric(self) -> str:
        """The :class:`~jaket.tasks.link_prediction.model.LinkScorer` metric the objective trains."""
        return "cosine" if self.train_encoder and self.objective == "contrastive" else "native"


#: the frozen mode's values of the settings whose default depends on the mode (those of
#: :data:`TRAIN_ENCODER_DEFAULTS`): :class:`LinkPredictionConfig`'s defaults
FROZEN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(LinkPredictionConfig) if f.name in TRAIN_ENCODER_DEFAULTS}


@dataclass(kw_only=True)
class LinkPredictionData(DataSection):
    """Where the KG and its training and evaluation triples come from
    (:func:`jaket.tasks.link_prediction.data.load_data`)."""

    #: a WN18RR-format folder (``train.txt``, ``valid.txt``[, ``test.txt``]): the KG is its training triples
    data: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: else a KG folder whose triples all train (``eval`` gives the evaluation triples); neither: a
    #: WordNet subset of ``max_entities`` synsets, its triples split 90/10
    kg: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: evaluation files in the WN18RR format (added to ``data``'s splits), evaluated only
    eval: tuple[Path, ...] = field(default=(), metadata=flag("test", aliases=("--eval",), default=""))
    #: WordNet subset size (the default KG)
    max_entities: int = 2000
    #: use at most this many training triples (a seeded sample)
    max_train: int | None = None
    #: with ``data``: a quick trial on about this many entities (those of random training triples)
    sample_entities: int | None = None

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        if self.sample_entities is not None and self.sample_entities != 0 and self.sample_entities < 2:
            problems.append(("data.sample_entities", f"needs at least 2 entities (0: all), got {self.sample_entities}"))
        if self.data is None and self.kg is not None and not self.eval:
            problems.append(("data.eval", "a KG folder's triples all train: give the evaluation triples "
                                          "(--test FILE, WN18RR format)"))
        return problems


def _by_mode(key: str, help: str):
    """A key whose default depends on the mode: None in the job (:meth:`LinkPredictionJob.resolved` sets it),
    its flag's help showing both defaults."""
    def shown(value) -> str:
        if isinstance(value, tuple):
            return ",".join(map(str, value))
        return "none" if value is None else f"{value:g}"
    both = f"{shown(FROZEN_DEFAULTS[key])}; {shown(TRAIN_ENCODER_DEFAULTS[key])} with --train-encoder"
    return field(default=None, metadata=flag(help=help, default=both))


@dataclass(kw_only=True)
class LinkPredictionJob(TaskJob, LinkPredictionConfig):
    """A fine-tuning (or evaluation) run: the task config plus its data.

    ``variants`` / ``seeds`` left empty are filled by :func:`jaket.tasks.cli_common.resolve_job`;
    the keys of :data:`TRAIN_ENCODER_DEFAULTS` left None take the mode's default
    (:meth:`resolved`): :data:`TRAIN_ENCODER_DEFAULTS` with ``train_encoder``, else
    :data:`FROZEN_DEFAULTS`. ``budget_cpu_seconds: 0`` means no budget."""

    data: LinkPredictionData = field(default_factory=LinkPredictionData)
    scorers: tuple[str, ...] | None = _by_mode("scorers", "comma list of distmult, transe, rotate")
    steps: int | None = _by_mode("steps", "training steps")
    batch_size: int | None = _by_mode("batch_size", "training triples per step")
    fanouts: tuple[int, ...] | None = _by_mode("fanouts", "neighbours sampled per hop in training")
    description_max_length: int | None = _by_mode("description_max_length", "tokens of each description read by LM1")
    encoder_lr: float | None = _by_mode("encoder_lr", "LM1 learning rate with --train-encoder")
    queue_batches: int | None = _by_mode("queue_batches", "previous steps whose entity vectors are extra "
                                         "negatives, with --train-encoder")
    refresh_initial: int | None = _by_mode("refresh_initial", "steps before the first full memory refresh with "
                                           "--train-encoder (Eq. 11 I_init; 0 = none)")
    budget_cpu_seconds: float | None = _by_mode("budget_cpu_seconds", "with --train-encoder: stop training after "
                                                "S process CPU seconds (memory fills included; 0 = every step)")
    frozen_warmup_steps: int | None = _by_mode("frozen_warmup_steps", "with --train-encoder: N steps of the "
                                               "frozen mode (KM and relation map on the fixed memory) before LM1 "
                                               "joins (0 with the contrastive objective)")

    def __post_init__(self) -> None:
        """Nothing: :meth:`check` reports the bad values (:func:`jaket.tasks.config.load_task_config`)."""

    def resolved(self) -> "LinkPredictionJob":
        """The job with every mode-dependent key left None set to the mode's default (the frozen
        warm-up belongs to the in-batch objective: 0 with another one);
        :func:`jaket.tasks.cli_common.resolve_job` calls it, so ``--print-config`` shows the values."""
        defaults = TRAIN_ENCODER_DEFAULTS if self.train_encoder else FROZEN_DEFAULTS
        if self.objective != "in-batch":
            defaults = {**defaults, "frozen_warmup_steps": 0}
        unset = {key: defaults[key] for key in TRAIN_ENCODER_DEFAULTS if getattr(self, key) is None}
        return dataclasses.replace(self, **unset) if unset else self

    def check(self) -> list[tuple[str, str]]:
        """The config's problems with the mode's defaults filled in (:meth:`resolved`), then the data's."""
        return LinkPredictionConfig.check(self.resolved()) + self.data.check()
