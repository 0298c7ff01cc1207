"""Entity classification's job: the task config (:class:`EntityClassificationConfig`) and its data
section (:class:`EntityClassificationData`), plain dataclasses read by ``--config`` / ``--set``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from jaket.tasks.job_flags import flag
from jaket.tasks.settings import (AT_LEAST_ONE, BackboneSettings, Bound, DataSection, FRACTION, POSITIVE, PROBABILITY,
                                  TaskJob, bound_problems, list_problems, split_problems, variant_problems)


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "entity-classification"


@dataclass
class EntityClassificationConfig(BackboneSettings):
    variants: tuple[str, ...] = ("lm", "gnn", "lm+g+m", "jaket")
    #: shares of the training split to train on (one run each)
    train_fractions: tuple[float, ...] = (1.0, 0.2, 0.05)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: train / dev / test shares of the labelled entities, per seed, without split files
    split: tuple[float, float, float] = (0.2, 0.2, 0.6)
    #: training epochs
    epochs: int = 150
    #: head learning rate
    head_lr: float = 1e-3
    #: knowledge-module learning rate (0: the KM frozen, a linear probe)
    km_lr: float = 5e-4
    #: weight decay of the optimizer
    weight_decay: float = 0.01
    #: head dropout
    dropout: float = 0.2
    #: categories with fewer labelled entities are kept but reported
    min_class_size: int = 1
    #: stop after N epochs without a better dev accuracy (default: no early stopping)
    patience: int | None = field(default=None, metadata=flag(metavar="N", default=""))
    #: "fresh": a new classifier, as the paper; "category": the ``jaket`` setting's classifier
    #: starts from the pre-trained category head (pre-training task 1) for the categories it
    #: shares by name with KG' (:func:`category_prior`); other settings have no such head
    head_init: Literal["fresh", "category"] = "fresh"
    #: bf16 autocast for the KM and the head's passes in training and evaluation
    #: (:func:`jaket.model.device.autocast`; ``--precision``)
    bf16: bool = False

    def check(self) -> list[tuple[str, str]]:
        """``(key, problem)`` of every value that is well-typed but unusable."""
        problems = variant_problems(self.variants) + list_problems("train_fractions", self.train_fractions, "fraction")
        problems += [("train_fractions", f"{f} is not in (0, 1]") for f in self.train_fractions if not 0 < f <= 1]
        return problems + split_problems(self.split, "train, dev, test") + bound_problems(self, {
            "epochs": AT_LEAST_ONE, "patience": AT_LEAST_ONE, "head_lr": POSITIVE,
            "km_lr": Bound(0, text="must be positive, or 0 to freeze the KM (a linear probe)"), "dropout": PROBABILITY})


@dataclass(kw_only=True)
class EntityClassificationData(DataSection):
    """Where KG' and its labels come from."""

    bounds = {"heldout_fraction": FRACTION, "max_entities": Bound(2)}

    #: KG' folder (default: the held-out part of the WordNet subset)
    kg: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: training entities, one id a line, or id<TAB>label lines (docs/data.md); with --dev (default: a random
    #: 20/20/60 split of the labelled entities per seed)
    train: Path | None = field(default=None, metadata=flag(metavar="FILE", default=""))
    #: dev entities (select the best epoch, early stopping); same format as --train
    dev: Path | None = field(default=None, metadata=flag(metavar="FILE", default=""))
    #: test entities (optional); same format as --train
    test: Path | None = field(default=None, metadata=flag(metavar="FILE", default=""))
    #: WordNet subset size of the embedded default
    max_entities: int = 3000
    #: share of the WordNet subset held out as KG'
    heldout_fraction: float = 0.3
    #: seed of the WordNet subset and its held-out part
    data_seed: int = 0

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        given = [name for name in ("train", "dev", "test") if getattr(self, name) is not None]
        if given and self.kg is None:
            problems.append((f"data.{given[0]}", "split files name entities of a KG: give data.kg (--kg DIR)"))
        if given and (self.train is None or self.dev is None):
            missing = "train" if self.train is None else "dev"
            problems.append((f"data.{missing}", f"user splits need a {missing} file (--{missing} FILE): "
                             "train fits the model, dev selects the epoch and stops early"))
        return problems


@dataclass(kw_only=True)
class EntityClassificationJob(TaskJob, EntityClassificationConfig):
    """A fine-tuning (or evaluation) run: the task config plus its data."""

    data: EntityClassificationData = field(default_factory=EntityClassificationData)
