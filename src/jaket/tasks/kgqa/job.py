"""KGQA's job: the task config (:class:`KGQAConfig`) and its data section (:class:`KGQAData`),
plain dataclasses read by ``--config`` / ``--set``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jaket.tasks.job_flags import flag
from jaket.tasks.settings import (AT_LEAST_ONE, FRACTION, NOT_NEGATIVE, POSITIVE, BackboneSettings, Bound, DataSection,
                                  TaskJob, bound_problems, split_problems, variant_problems)


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "kgqa"

#: the settings that can answer a question (``gnn`` cannot read one)
SUPPORTED_VARIANTS = ("lm", "lm+g", "lm+g+m", "jaket")

#: the KGs a run answers over: every triple, or each triple dropped with p = 0.5 (seeded)
KG_SETTINGS = ("full", "50%")


@dataclass
class KGQAConfig(BackboneSettings):
    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    #: full (every triple) and/or 50% (each triple dropped with p = 0.5, seeded)
    kg_settings: tuple[str, ...] = KG_SETTINGS
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: entity descriptions: "questions" (the paper's: one sampled training question naming the entity) or
    #: "kg" (made from the triples of the KG each setting gives, jaket.kg.verbalize: the 50% KG for KG-50%)
    descriptions: str = field(default="questions", metadata=flag(
        metavar="FROM", help="entity descriptions: questions (the paper's: a sampled training question naming "
                             "the entity) or kg (made from the triples of the setting's KG, the 50%% KG for KG-50%%)"))
    #: training steps
    steps: int = 300
    #: questions per step
    batch_size: int = 16
    #: LM2 learning rate
    lr: float = 3e-5
    #: fusion and projections learning rate
    head_lr: float = 1e-3
    #: knowledge-module learning rate
    km_lr: float = 5e-4
    #: tokens of a question
    max_length: int = 48
    #: train / selection / test shares of the questions, per seed, when no split is given
    split: tuple[float, float, float] = (0.6, 0.1, 0.3)
    #: candidates per question, nearest hops first
    max_candidates: int = 2000
    #: Hits@1 on the selection questions every N steps (and after the last), best state kept; 0 = off
    select_every: int = 100
    #: selection questions read at each of those checks (the first N of the selection part)
    max_selection: int = 500
    #: False: one KM pass over the whole KG per step (the reference for the subgraph pass)
    subgraph: bool = True
    #: > 0: training samples at most this many in-edges per node and hop of the step's subgraph
    #: (seeded; like pre-training's fan-out), 0 = every edge, exact; evaluation always reads every edge
    km_fanout: int = field(default=0, metadata=flag(
        "fanouts", metavar="N", aliases=("--km-fanout",),
        help="training only: sample at most N in-edges per node and hop of each step's KM subgraph (faster next "
             "to hubs, not exact); 0 = every edge"))
    #: bf16 autocast for the question's and the candidates' passes in training and evaluation
    #: (:func:`jaket.model.device.autocast`; ``--precision``)
    bf16: bool = False

    def check(self) -> list[tuple[str, str]]:
        """``(key, problem)`` of every value that is well-typed but unusable."""
        problems = variant_problems(self.variants, SUPPORTED_VARIANTS,
                                    f"cannot read a question; KGQA supports {', '.join(SUPPORTED_VARIANTS)}")
        problems += [("kg_settings", f"unknown KG setting {s!r}; choose from {', '.join(KG_SETTINGS)}")
                     for s in self.kg_settings if s not in KG_SETTINGS]
        if not self.kg_settings:
            problems.append(("kg_settings", f"give at least one of {', '.join(KG_SETTINGS)}"))
        if self.descriptions not in ("questions", "kg"):
            problems.append(("descriptions", f"{self.descriptions!r}: choose questions or kg"))
        problems += bound_problems(self, {
            **dict.fromkeys(("steps", "batch_size", "max_length", "max_candidates", "description_max_length"),
                            AT_LEAST_ONE),
            **dict.fromkeys(("select_every", "max_selection", "km_fanout"), NOT_NEGATIVE),
            **dict.fromkeys(("lr", "head_lr", "km_lr"), POSITIVE)})
        return problems + split_problems(self.split, "train, selection, test")


@dataclass(kw_only=True)
class KGQAData(DataSection):
    """Where the KG and the questions come from: a MetaQA-format folder, or templated questions
    over a WordNet subset (:func:`jaket.tasks.kgqa.data.load_data`)."""

    bounds = {"selection_fraction": FRACTION, "max_entities": Bound(2), "max_questions": AT_LEAST_ONE}

    #: a MetaQA-format folder (``kb.txt``, ``{1,2}-hop/qa_SPLIT.txt``); None = the WordNet questions
    metaqa: Path | None = field(default=None, metadata=flag(
        "data", metavar="DIR", aliases=("--metaqa",),
        help="a MetaQA-format folder: kb.txt and {1,2}-hop/qa_SPLIT.txt (default: templated questions over a "
             "WordNet subset)", default=""))
    #: the MetaQA split whose questions train and select the model
    train_split: str = field(default="dev", metadata=flag(
        "train", metavar="NAME", aliases=("--train-split",),
        help="the MetaQA split whose questions train and select the model"))
    #: a MetaQA split that is only evaluated (e.g. ``test``); None = ``test_fraction`` of the train split
    eval_split: str | None = field(default=None, metadata=flag(
        "test", metavar="NAME", aliases=("--eval-split",),
        help="a MetaQA split that is only evaluated, e.g. test (default: none; --test-fraction of the train "
             "split is held out as the test part)", default=""))
    #: the MetaQA hop counts read
    hops: tuple[int, ...] = (1, 2)
    #: share of the train split held out for model selection
    selection_fraction: float = 0.1
    #: without --test: share of the train split held out as test
    test_fraction: float = 0.3
    #: seed of the MetaQA question split, the same for every training seed
    split_seed: int = field(default=0, metadata=flag("data-seed", metavar="N", aliases=("--split-seed",)))
    #: without MetaQA: the WordNet subset's size
    max_entities: int = 2000
    #: without MetaQA: the templated questions over the WordNet subset
    max_questions: int = 1500

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        held_out = self.eval_split is None and 0 < self.selection_fraction < 1  # the test share is bounded by it
        if held_out and not 0 < self.test_fraction < 1 - self.selection_fraction:
            problems.append(("data.test_fraction", "must be in (0, 1 - data.selection_fraction), got "
                             f"{self.test_fraction}"))
        if self.eval_split is not None and self.eval_split == self.train_split:
            problems.append(("data.eval_split", f"{self.eval_split} is also data.train_split: evaluate a split the "
                             "model is not trained or selected on, or leave it out to hold out part of it"))
        if not self.hops or min(self.hops) < 1:
            problems.append(("data.hops", f"hop counts of at least 1, got {list(self.hops)}"))
        return problems


@dataclass(kw_only=True)
class KGQAJob(TaskJob, KGQAConfig):
    """A fine-tuning (or evaluation) run: the task config plus its data."""

    data: KGQAData = field(default_factory=KGQAData)
