"""Relation classification's job: the task config (:class:`RelationClassificationConfig`) and its
data section (:class:`RelationClassificationData`), plain dataclasses read by ``--config`` / ``--set``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

from jaket.tasks.job_flags import flag
from jaket.tasks.settings import (AT_LEAST_ONE, Bound, DataSection, NOT_NEGATIVE, POSITIVE, TaskJob, bound_problems,
                                  variant_problems)


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "relation-classification"

#: the settings that can read a FewRel pair (the others need its entities in the KG)
SUPPORTED_VARIANTS = ("lm", "jaket")


def way_shot_pairs(value: Any) -> Any:
    """N-way K-shot settings as ``--settings`` spells them: one comma text (``"5-1,5-5"``) or a list
    whose items are ``"N-K"`` texts or ``[N, K]`` pairs; anything else is left to the type check."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value
    pairs = []
    for item in items:
        if isinstance(item, str):
            way, dash, shot = item.strip().partition("-")
            if not item.strip():
                continue  # "5-1," as the flag reads it
            if not (way.isdigit() and dash and shot.isdigit()):
                raise ValueError(f"{item.strip()!r} is not N-K (N ways, K shots), e.g. 5-1")
            item = (int(way), int(shot))
        pairs.append(item)
    return pairs


#: ``(way, shot)`` pairs, read from ``"N-K"`` texts too and written as them (``--print-config``)
WayShots = Annotated[tuple[tuple[int, int], ...], BeforeValidator(way_shot_pairs),
                     PlainSerializer(lambda pairs: [f"{way}-{shot}" for way, shot in pairs], when_used="json")]


@dataclass
class RelationClassificationConfig:
    variants: tuple[str, ...] = ("lm", "jaket")
    #: the N-way K-shot settings evaluated (``--settings 5-1,5-5``)
    settings: WayShots = ((5, 1), (5, 5))
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: without separate training data: the first N relations of the data train, the others evaluate
    num_train_relations: int = field(default=3, metadata=flag("train-relations", metavar="N"))
    #: the training relations by name (overrides --train-relations N)
    train_relations: tuple[str, ...] | None = field(default=None, metadata=flag("train-relation-names", default=""))
    #: training episodes
    train_steps: int = field(default=150, metadata=flag("steps", metavar="N", aliases=("--train-steps",)))
    #: relations per training episode
    train_way: int = 3
    #: supports per relation in training
    train_shot: int = 1
    #: evaluation episodes per N-way K-shot setting
    episodes: int = 1000
    #: tokens of a sentence
    max_length: int = 128
    #: encoder learning rate
    lr: float = 2e-5
    #: score head learning rate
    head_lr: float = 1e-3
    encoder: Path | None = field(default=None, metadata=flag(
        metavar="DIR", help="base Hugging Face encoder (default: the bundled MiniLM)", default=""))
    pretrained: Path | None = field(default=None, metadata=flag(
        "model", metavar="DIR", help="jointly pre-trained model folder (enables the variant jaket)", default=""))
    #: bf16 autocast for the encoder (:func:`jaket.model.device.autocast`); the score head is fp32
    bf16: bool = False

    def check(self) -> list[tuple[str, str]]:
        """``(key, problem)`` of every value that is well-typed but unusable."""
        problems = variant_problems(self.variants, SUPPORTED_VARIANTS, "needs the FewRel entities in the KG; "
                                    f"relation classification supports {', '.join(SUPPORTED_VARIANTS)}")
        problems += [("settings", f"{way}-{shot} is not N-K with N >= 2 ways and K >= 1 shots, e.g. 5-1")
                     for way, shot in self.settings if way < 2 or shot < 1]
        if not self.settings:
            problems.append(("settings", "give at least one N-way K-shot setting, e.g. 5-1"))
        return problems + bound_problems(self, {
            **dict.fromkeys(("num_train_relations", "train_shot", "episodes", "max_length"), AT_LEAST_ONE),
            "train_steps": NOT_NEGATIVE, "train_way": Bound(2, text="a training episode needs at least 2 relations"),
            "lr": POSITIVE, "head_lr": POSITIVE})


@dataclass(kw_only=True)
class RelationClassificationData(DataSection):
    """Where the evaluation and the training relations come from."""

    bounds = {"max_entities": Bound(2)}

    #: FewRel JSON file or folder (:mod:`jaket.tasks.relation_classification.data`): the evaluation
    #: relations; None = a WordNet-derived set (:func:`kg_relation_instances`)
    data: Path | None = field(default=None, metadata=flag(metavar="PATH", default=""))
    #: FewRel JSON file(s) of the training relations; then every relation of ``data`` is evaluated
    #: (empty: ``data``'s relations are split, ``num_train_relations`` / ``train_relations``)
    train_data: tuple[Path, ...] = field(default=(), metadata=flag("train", aliases=("--train-data",), default=""))
    #: with ``train_data``: train without the relations ``data`` evaluates (otherwise such an
    #: overlap is an error)
    drop_overlap: bool = False
    #: the WordNet subset of the WordNet-derived set (no ``data``)
    max_entities: int = 3000

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        if self.train_data and self.data is None:
            problems.append(("data.train_data", "--train needs --data FILE (data.data): the evaluation relations"))
        if self.drop_overlap and not self.train_data:
            problems.append(("data.drop_overlap", "--drop-overlap needs --train FILE ... (data.train_data)"))
        return problems


@dataclass(kw_only=True)
class RelationClassificationJob(TaskJob, RelationClassificationConfig):
    """A fine-tuning (or evaluation) run: the task config plus its data.

    ``variants`` / ``seeds`` left empty mean: ``finetune`` runs ``jaket`` with a pre-trained model
    (``pretrained``, the ``--model`` folder), else ``lm``, with seed 0; ``evaluate`` runs ``lm`` and
    (with a pre-trained model) ``jaket`` over seeds 0-4. ``lm1_layers`` / ``km_layers`` / ``km_heads``
    (the common ``--lm1-layers`` / ``--km-layers`` / ``--km-heads``) must stay unset: no setting of this task has a KM."""

    data: RelationClassificationData = field(default_factory=RelationClassificationData)
    lm1_layers: int | None = None
    km_layers: int | None = None
    km_heads: int | None = None

    def check(self) -> list[tuple[str, str]]:
        no_km = f"relation classification has no KM (settings {', '.join(SUPPORTED_VARIANTS)}): leave it unset"
        return super().check() + [(key, no_km) for key in ("lm1_layers", "km_layers", "km_heads")
                                  if getattr(self, key) is not None]
