"""The comparison settings and the backbone fields every task config shares: plain dataclasses,
no model code.

The paper's five settings (``lm``, ``gnn``, ``lm+g``, ``lm+g+m``, ``jaket``; what each builds is in
:mod:`jaket.tasks.variants`) and :class:`BackboneSettings` live here, apart from the code that
builds and trains the models, so the command line reads their defaults (``jaket --help``) without
importing the model (``torch_geometric`` alone takes seconds to import). Each task's own config
derives from them in its package's light ``job`` module (``jaket.tasks.kgqa.job.KGQAConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ConfigDict, NonNegativeInt

from jaket.model.config import read_model_config
from jaket.tasks.job_flags import flag


@dataclass(frozen=True)
class Variant:
    """What one comparison setting is made of (:mod:`jaket.tasks.variants` builds it)."""

    name: str
    #: its row label in reports, after the paper's tables
    label: str
    #: has a language module that reads the task's text (a question, a sentence)
    reads_text: bool
    #: has a knowledge module (Eq. 1-5)
    has_km: bool
    #: where the entity memory comes from: ``"encoder"`` (descriptions read by the full encoder,
    #: LM only's entity features), ``"lm1"`` (E^context of the descriptions by LM1, Eq. 7) or
    #: ``"random"`` (one fixed Gaussian vector per entity and relation)
    memory: Literal["encoder", "lm1", "random"]
    #: starts from a jointly pre-trained model folder (``--model``); else from the base encoder
    pretrained: bool = False

    @property
    def needs_encoder(self) -> bool:
        """The base (or pre-trained) encoder is loaded even for a KG-only task: the memory needs it."""
        return self.memory != "random"

    @property
    def random_memory(self) -> bool:
        return self.memory == "random"


#: the paper's five settings, in the order of its tables
VARIANT_REGISTRY: dict[str, Variant] = {v.name: v for v in (
    Variant("lm", "LM only", reads_text=True, has_km=False, memory="encoder"),
    Variant("gnn", "GNN", reads_text=False, has_km=True, memory="random"),
    Variant("lm+g", "LM+G", reads_text=True, has_km=True, memory="random"),
    Variant("lm+g+m", "LM+G+M", reads_text=True, has_km=True, memory="lm1"),
    Variant("jaket", "JAKET", reads_text=True, has_km=True, memory="lm1", pretrained=True),
)}
VARIANTS = tuple(VARIANT_REGISTRY)
#: the label of each variant in reports (:attr:`Variant.label`)
VARIANT_LABELS = {name: v.label for name, v in VARIANT_REGISTRY.items()}


def unknown_variant(name: str) -> str:
    """The one line of a name that is not one of the paper's five settings (they are listed)."""
    return f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}"


def variant(name: str) -> Variant:
    """The :class:`Variant` named ``name`` (a :class:`VariantError` listing the names otherwise)."""
    try:
        return VARIANT_REGISTRY[name]
    except KeyError:
        raise VariantError(unknown_variant(name)) from None


class VariantError(ValueError):
    """A variant cannot run with the given inputs (e.g. ``jaket`` without a pre-trained model)."""


@dataclass
class VariantConfig:
    """How to build one comparison setting."""

    variant: str = "lm+g+m"
    #: base Hugging Face encoder folder (``lm``, ``gnn``, ``lm+g``, ``lm+g+m``); None = bundled MiniLM
    encoder: Path | None = None
    #: jointly pre-trained model folder (required by ``jaket``)
    pretrained: Path | None = None
    #: LM1's layers of a setting built on the base encoder (None = half); ``jaket`` keeps its saved split
    lm1_layers: int | None = None
    #: structure of the fresh KM of ``gnn`` / ``lm+g`` / ``lm+g+m``; None = that of the
    #: pre-trained model when one is given (the paper: RoBERTa+GNN(+M) "have the same model
    #: structure as JAKET"), else 2 layers / 8 heads
    km_layers: int | None = None
    km_heads: int | None = None
    description_max_length: int = 64
    batch_size: int = 64
    #: R^context from the relation descriptions (the paper's fine-tuning); False = R = 0, an edge
    #: then carries only its direction embedding, as in pre-training (an ablation)
    relation_memory: bool = True

    def __post_init__(self) -> None:
        if variant(self.variant).pretrained and self.pretrained is None:
            raise VariantError("variant 'jaket' needs a pre-trained model folder (--model DIR)")

    def km_structure(self) -> dict:
        """``{"layers", "heads", "composition"}`` of the KM this setting uses."""
        saved: dict = {}
        if self.pretrained is not None:
            saved = read_model_config(self.pretrained)  # the same reading (and messages) as from_pretrained
        if variant(self.variant).pretrained:  # the saved KM, whatever was asked for
            return {"layers": int(saved.get("km_layers", 2)), "heads": int(saved.get("km_heads", 8)),
                    "composition": str(saved.get("composition", "add"))}
        return {"layers": int(self.km_layers if self.km_layers is not None else saved.get("km_layers", 2)),
                "heads": int(self.km_heads if self.km_heads is not None else saved.get("km_heads", 8)),
                "composition": str(saved.get("composition", "add"))}


def list_problems(key: str, values, noun: str, *, required: bool = True) -> list[tuple[str, str]]:
    """``(key, problem)`` of a list setting each of whose values makes runs of its own (seeds,
    training fractions): none given (when ``required``), or a value given twice, which would run
    the same thing twice and count it twice in the mean ± std."""
    problems = [] if values or not required else [(key, f"give at least one {noun}")]
    counts: dict = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    problems += [(key, f"{noun} {value} given {'twice' if n == 2 else f'{n} times'}")
                 for value, n in counts.items() if n > 1]
    return problems


@dataclass(frozen=True)
class Bound:
    """The values a number setting may take, ``low`` to ``high`` (``low_open`` / ``high_open``: the
    end itself excluded), and the one problem line of a value outside them."""

    low: float
    high: float = float("inf")
    low_open: bool = False
    high_open: bool = True
    #: what a value outside says instead of the range (``"a training episode needs at least 2 relations"``)
    text: str | None = None

    def problem(self, value) -> str | None:
        """None when ``value`` is inside (or unset: None), else ``"must be at least 1, got 0"``."""
        if value is None:
            return None
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return None if above and below else f"{self.text or self._words()}, got {value}"

    def _words(self) -> str:
        low, high = (int(x) if float(x).is_integer() else x for x in (self.low, self.high))
        if self.high == float("inf"):
            if self.low_open:
                return "must be positive" if low == 0 else f"must be more than {low}"
            return "must be 0 or more" if low == 0 else f"must be at least {low}"
        return f"must be in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"


#: the bounds most settings have: a count of at least one, a rate above 0, a count that may be 0,
#: a share strictly between 0 and 1, a dropout probability in [0, 1)
AT_LEAST_ONE = Bound(1)
POSITIVE = Bound(0, low_open=True)
NOT_NEGATIVE = Bound(0)
FRACTION = Bound(0, 1, low_open=True)
PROBABILITY = Bound(0, 1)


def bound_problems(source, bounds: Mapping[str, Bound], prefix: str = "") -> list[tuple[str, str]]:
    """``(key, problem)`` of each field of ``source`` outside its :class:`Bound` (None: unset, no
    problem), the key after ``prefix`` (``"data."`` for a job's data section): every task job's
    ``check()`` says its ranges as one table instead of one ``if`` each."""
    return [(prefix + key, problem) for key, bound in bounds.items()
            if (problem := bound.problem(getattr(source, key))) is not None]


def variant_problems(variants, supported: tuple[str, ...] = VARIANTS, why: str = "") -> list[tuple[str, str]]:
    """``("variants", problem)`` of each setting that is not one of the paper's five (the five listed)
    or, with ``supported``, not one this task runs (``"variant 'gnn' "`` followed by ``why``, which
    says why and names the task's settings)."""
    return [("variants", unknown_variant(v) if v not in VARIANTS else f"variant {v!r} {why}")
            for v in variants if v not in supported]


def split_problems(split, parts: str) -> list[tuple[str, str]]:
    """``("split", problem)`` unless ``split`` is three non-negative fractions summing to 1; ``parts``
    names them (``"train, dev, test"``)."""
    if len(split) != 3 or abs(sum(split) - 1.0) > 1e-6 or min(split, default=0) < 0:
        return [("split", f"three non-negative fractions summing to 1 ({parts}), got {list(split)}")]
    return []


@dataclass(kw_only=True)
class BackboneSettings:
    """The backbone fields every task config shares; ``variant_config`` turns them into the
    :class:`VariantConfig` of one comparison setting."""

    #: base Hugging Face encoder (default: the bundled MiniLM)
    encoder: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: jointly pre-trained model folder (enables the variant jaket)
    pretrained: Path | None = field(default=None, metadata=flag("model", metavar="DIR", default=""))
    #: LM1's layers of lm+g / lm+g+m, where the KG is fused (default: half the encoder's; give a
    #: pre-trained model's own split to pair it; jaket keeps its saved split)
    lm1_layers: NonNegativeInt | None = field(default=None, metadata=flag(metavar="N", default=""))
    #: layers of the fresh KM of gnn / lm+g / lm+g+m (default: --model's, else 2)
    km_layers: int | None = field(default=None, metadata=flag(metavar="N", default=""))
    #: heads of the fresh KM of gnn / lm+g / lm+g+m (default: --model's, else 8)
    km_heads: int | None = field(default=None, metadata=flag(metavar="N", default=""))
    #: tokens of each description read by LM1
    description_max_length: int = 64
    #: R = 0 in the KM (ablation; default: R from the relation descriptions, as the paper)
    relation_memory: bool = True

    def variant_config(self, variant: str) -> VariantConfig:
        return VariantConfig(variant=variant, encoder=self.encoder, pretrained=self.pretrained,
                             lm1_layers=self.lm1_layers, km_layers=self.km_layers, km_heads=self.km_heads,
                             description_max_length=self.description_max_length,
                             relation_memory=self.relation_memory)


@dataclass(kw_only=True)
class DataSection:
    """A task job's ``data`` section: where the task's data come from. ``bounds`` (a table of the
    class, ``{field: Bound}``) are its ranges, which :meth:`check` says; a section adds the rules
    between its fields by extending :meth:`check`. An unknown key is an error, not ignored."""

    bounds: ClassVar[Mapping[str, Bound]] = {}

    __pydantic_config__ = ConfigDict(extra="forbid")

    def check(self) -> list[tuple[str, str]]:
        """``("data.KEY", problem)`` of every value that is well-typed but unusable."""
        return bound_problems(self, self.bounds, "data.")


@dataclass(kw_only=True)
class TaskJob:
    """What a task's typed job adds to its config, first among its bases (``class XJob(TaskJob,
    XConfig)``, with its own ``data`` section): ``variants`` / ``seeds`` left empty are filled by
    :func:`jaket.tasks.cli_common.resolve_job` (``finetune``: ``jaket`` with a pre-trained model,
    else the spec's ``finetune_variant``, seed 0; ``evaluate``: every setting of the spec that
    applies, seeds 0-4), and an unknown key is an error, not ignored. :meth:`check` says the
    config's problems, then those of the :class:`DataSection`."""

    variants: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()

    __pydantic_config__ = ConfigDict(extra="forbid")

    def check(self) -> list[tuple[str, str]]:
        """``(key, problem)`` of every value that is well-typed but unusable, the data section's last."""
        return super().check() + self.data.check()


def builtin_wordnet_notice(logger, task: str, what: str, flags: str) -> None:
    """The one line (a warning, on stderr from the command line) of a task whose job names no data:
    it runs on the built-in WordNet, ``what`` says which part, ``flags`` how to give one's own."""
    logger.warning("%s: no data given, so this runs on the built-in WordNet (%s); %s runs on yours",
                   task, what, flags)
