"""The comparison settings and every task's config: plain dataclasses, no model code.

The paper's five settings (``lm``, ``gnn``, ``lm+g``, ``lm+g+m``, ``jaket``; what each builds is in
:mod:`jaket.tasks.variants`) and the typed config of each task live here, apart from the code that
builds and trains the models, so the command line reads their defaults (``jaket --help``) without
importing the model (``torch_geometric`` alone takes seconds to import). Each task module re-exports
its config (``from jaket.tasks.kgqa import KGQAConfig`` works).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jaket.model.config import read_model_config


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


def variant(name: str) -> Variant:
    """The :class:`Variant` named ``name`` (a :class:`VariantError` listing the names otherwise)."""
    try:
        return VARIANT_REGISTRY[name]
    except KeyError:
        raise VariantError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}") from None


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
        if self.variant not in VARIANTS:
            raise VariantError(f"unknown variant {self.variant!r}; choose from {', '.join(VARIANTS)}")
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


@dataclass(kw_only=True)
class BackboneSettings:
    """The backbone fields every task config shares; ``variant_config`` turns them into the
    :class:`VariantConfig` of one comparison setting."""

    #: base Hugging Face encoder folder; None = the bundled MiniLM
    encoder: Path | None = None
    #: jointly pre-trained model folder (enables ``jaket``)
    pretrained: Path | None = None
    #: structure of the fresh KM; None = the pre-trained model's, else 2 layers / 8 heads
    km_layers: int | None = None
    km_heads: int | None = None
    description_max_length: int = 64
    #: False: R = 0 (an ablation, see :class:`VariantConfig`)
    relation_memory: bool = True

    def variant_config(self, variant: str) -> VariantConfig:
        return VariantConfig(variant=variant, encoder=self.encoder, pretrained=self.pretrained,
                             km_layers=self.km_layers, km_heads=self.km_heads,
                             description_max_length=self.description_max_length,
                             relation_memory=self.relation_memory)


# ----------------------------------------------------------------------------- the task configs


@dataclass
class EntityClassificationConfig(BackboneSettings):
    variants: tuple[str, ...] = ("lm", "gnn", "lm+g+m", "jaket")
    train_fractions: tuple[float, ...] = (1.0, 0.2, 0.05)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    split: tuple[float, float, float] = (0.2, 0.2, 0.6)
    epochs: int = 150
    head_lr: float = 1e-3
    km_lr: float = 5e-4
    weight_decay: float = 0.01
    dropout: float = 0.2
    min_class_size: int = 1  # categories with fewer labelled entities are kept but reported
    #: stop when the dev accuracy has not improved for this many epochs (None: run every epoch)
    patience: int | None = None
    #: "fresh": a new classifier, as the paper; "category": the ``jaket`` setting's classifier
    #: starts from the pre-trained category head (pre-training task 1) for the categories it
    #: shares by name with KG' (:func:`category_prior`); other settings have no such head
    head_init: Literal["fresh", "category"] = "fresh"

    def check(self) -> list[tuple[str, str]]:
        """``(key, problem)`` of every value that is well-typed but unusable."""
        problems = [("variants", f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
                    for v in self.variants if v not in VARIANTS]
        problems += [("train_fractions", f"{f} is not in (0, 1]") for f in self.train_fractions if not 0 < f <= 1]
        if len(self.split) != 3 or abs(sum(self.split) - 1.0) > 1e-6 or min(self.split, default=0) < 0:
            problems.append(("split", f"three non-negative fractions summing to 1 (train, dev, test), got {list(self.split)}"))
        for key in ("epochs", "patience"):
            value = getattr(self, key)
            if value is not None and value < 1:
                problems.append((key, f"must be at least 1, got {value}"))
        if self.head_lr <= 0:
            problems.append(("head_lr", f"must be positive, got {self.head_lr}"))
        if self.km_lr < 0:
            problems.append(("km_lr", f"must be positive, or 0 to freeze the KM (a linear probe), got {self.km_lr}"))
        if not 0 <= self.dropout < 1:
            problems.append(("dropout", f"must be in [0, 1), got {self.dropout}"))
        return problems


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
    #: fine-tune LM1 on the descriptions with a contrastive loss (:mod:`jaket.tasks.link_training`);
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
        """The :class:`~jaket.tasks.link_prediction.LinkScorer` metric the objective trains."""
        return "cosine" if self.train_encoder and self.objective == "contrastive" else "native"


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


#: how the word-in-context task's KM settings pick the sense fused at the target word
SENSE_FUSION = ("attention", "first", "none")


@dataclass
class WordInContextConfig(BackboneSettings):
    """Word-in-context (WiC): does the target word mean the same in both texts?

    Every setting fine-tunes its whole language module with the same head on the two target-word
    representations ``[t1, t2, |t1 - t2|, t1 * t2]`` (the usual WiC head), the same epochs,
    learning rates and batch size, and keeps the epoch with the best accuracy on a selection part
    of the training pairs. The KM settings (``lm+g+m``, ``jaket``) also read the target's candidate
    senses (:class:`jaket.tasks.wic_data.SenseInventory`): the masked-entity head scores them from
    the context (Eq. of masked entity prediction, restricted to the candidates), their KM
    embeddings are averaged with these weights and fused at the target (Eq. 8-9) before LM2, and
    the two texts' sense distributions add their agreement ``p1 . p2`` to the head's input.
    """

    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    epochs: int = 3
    batch_size: int = 32
    #: learning rate of the language module (LM1 + LM2)
    lr: float = 5e-5
    #: learning rate of the pair head
    head_lr: float = 1e-3
    #: learning rate of the KM, the fusion and the masked-entity head
    km_lr: float = 1e-4
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    max_length: int = 96
    #: candidate senses read per target (WordNet's most frequent first)
    max_candidates: int = 64
    fanouts: tuple[int, ...] = (5, 5)
    #: ``attention``: the candidates' KM embeddings weighted by the sense scores; ``first``: the
    #: most frequent sense's alone (no scorer); ``none``: no fusion (sense agreement only)
    sense_fusion: str = "attention"
    #: share of the training pairs kept for choosing the epoch (per seed); 0 = the last epoch
    selection_fraction: float = 0.1
    description_max_length: int = 32
    bf16: bool = False

    def check(self) -> list[tuple[str, str]]:
        problems = [("variants", f"{v!r}: word-in-context runs lm, lm+g+m and jaket")
                    for v in self.variants if v not in ("lm", "lm+g+m", "jaket")]
        for key in ("epochs", "batch_size", "max_candidates"):
            if getattr(self, key) < 1:
                problems.append((key, f"must be at least 1, got {getattr(self, key)}"))
        for key in ("lr", "head_lr", "km_lr"):
            if getattr(self, key) <= 0:
                problems.append((key, f"must be positive, got {getattr(self, key)}"))
        if not 0 <= self.selection_fraction < 0.5:
            problems.append(("selection_fraction", f"must be in [0, 0.5), got {self.selection_fraction}"))
        if not 0 <= self.dropout < 1:
            problems.append(("dropout", f"must be in [0, 1), got {self.dropout}"))
        if self.sense_fusion not in SENSE_FUSION:
            problems.append(("sense_fusion", f"one of {', '.join(SENSE_FUSION)}, got {self.sense_fusion!r}"))
        if self.max_length < 8:
            problems.append(("max_length", f"must be at least 8, got {self.max_length}"))
        return problems


@dataclass
class WordSenseConfig(BackboneSettings):
    """Word-sense disambiguation (all-words, the unified framework of Raganato et al., 2017): each
    target's sense among its lemma's candidates in the sense KG, by the scorers of
    :mod:`jaket.tasks.sense_scoring`, none of them fine-tuned. First sense, random and ``jaket
    link``'s Lesk rule always run; ``variants`` adds the encoder scorers: ``lm`` (the base
    encoder's cosine), ``lm+g+m`` (a fresh KM per seed, its structure as every task's:
    :meth:`VariantConfig.km_structure`) and ``jaket`` (the pre-trained masked-entity head, pre-training
    task 4, restricted to the candidates, and the pre-trained encoder's cosine).
    """

    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: tokens of a description read for the ``lm`` / ``lm+g+m`` / ``jaket (cosine)`` rows
    description_max_length: int = 32
    #: tokens of a target's sentence (special tokens included; a target beyond them is an error)
    max_length: int = 256
    #: weights ``w`` of WordNet's sense order as a prior, each reported beside the scorers alone:
    #: ``log softmax(s / T) + w log p(rank)``, ``p(r) ∝ 1 / (r + 1)`` (:func:`jaket.tasks.sense_scoring.with_prior`);
    #: empty = not used. Choose ``w`` on the development set (SemEval-2007) only
    first_sense_prior: tuple[float, ...] = ()
    #: resamples of the targets for the paired differences of scorers without seeds
    bootstrap: int = 10000
    bootstrap_seed: int = 0

    def check(self) -> list[tuple[str, str]]:
        problems = [("variants", f"{v!r}: word-sense disambiguation runs lm, lm+g+m and jaket")
                    for v in self.variants if v not in ("lm", "lm+g+m", "jaket")]
        problems += [("first_sense_prior", f"weights must be finite and positive, got {w}")
                     for w in self.first_sense_prior if not 0 < w < float("inf")]
        if self.max_length < 8:
            problems.append(("max_length", f"must be at least 8, got {self.max_length}"))
        if self.description_max_length < 4:
            problems.append(("description_max_length", f"must be at least 4, got {self.description_max_length}"))
        if self.bootstrap < 100:
            problems.append(("bootstrap", f"must be at least 100 resamples, got {self.bootstrap}"))
        return problems
