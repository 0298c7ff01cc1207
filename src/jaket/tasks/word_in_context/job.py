"""Word in context's job: the task config (:class:`WordInContextConfig`) and its data section
(:class:`WordInContextData`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jaket.tasks.job_flags import flag
from jaket.tasks.settings import (AT_LEAST_ONE, POSITIVE, PROBABILITY, BackboneSettings, Bound, DataSection,
                                  TaskJob, bound_problems, variant_problems)


#: the task's command name (jaket finetune|evaluate|predict NAME), registered in jaket.tasks.registry
TASK = "word-in-context"


#: the settings of word-in-context (``gnn`` reads no text; ``lm+g``'s random memory knows no sense)
SUPPORTED_VARIANTS = ("lm", "lm+g+m", "jaket")

#: how the word-in-context task's KM settings pick the sense fused at the target word
SENSE_FUSION = ("attention", "first", "none")


@dataclass
class WordInContextConfig(BackboneSettings):
    """Word-in-context (WiC): does the target word mean the same in both texts?

    Every setting fine-tunes its whole language module with the same head on the two target-word
    representations ``[t1, t2, |t1 - t2|, t1 * t2]`` (the usual WiC head), the same epochs,
    learning rates and batch size, and keeps the epoch with the best accuracy on a selection part
    of the training pairs. The KM settings (``lm+g+m``, ``jaket``) also read the target's candidate
    senses (:class:`jaket.senses.inventory.SenseInventory`): the masked-entity head scores them from
    the context (Eq. of masked entity prediction, restricted to the candidates), their KM
    embeddings are averaged with these weights and fused at the target (Eq. 8-9) before LM2, and
    the two texts' sense distributions add their agreement ``p1 . p2`` to the head's input.
    """

    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: training epochs
    epochs: int = 3
    #: pairs per step
    batch_size: int = 32
    #: training batches of pairs of like length, as pre-training's data.group_by_length (windows of
    #: 32 batches of the shuffled pairs, each sorted by length, its batches in random order): about
    #: 2x fewer token positions on WiC's short texts; off: the shuffled pairs cut in turn (the
    #: documented MiniLM figures)
    group_by_length: bool = False
    #: learning rate of the language module (LM1 + LM2)
    lr: float = 5e-5
    #: learning rate of the pair head
    head_lr: float = 1e-3
    #: learning rate of the KM, the fusion and the masked-entity head
    km_lr: float = 1e-4
    #: share of the training steps of the learning-rate warm-up
    warmup_fraction: float = 0.1
    #: weight decay of the optimizer
    weight_decay: float = 0.01
    #: head dropout
    dropout: float = 0.1
    #: tokens of a text
    max_length: int = 96
    #: candidate senses read per target (WordNet's most frequent first)
    max_candidates: int = 64
    fanouts: tuple[int, ...] = (5, 5)
    #: ``attention``: the candidates' KM embeddings weighted by the sense scores; ``first``: the
    #: most frequent sense's alone (no scorer); ``none``: no fusion (sense agreement only)
    sense_fusion: str = field(default="attention", metadata=flag(choices=SENSE_FUSION))
    #: share of the training pairs kept for choosing the epoch (per seed); 0 = the last epoch
    selection_fraction: float = 0.1
    description_max_length: int = 32
    bf16: bool = False

    def check(self) -> list[tuple[str, str]]:
        problems = variant_problems(self.variants, SUPPORTED_VARIANTS,
                                    f"is not a setting of word-in-context, which runs {', '.join(SUPPORTED_VARIANTS)}")
        problems += bound_problems(self, {
            "epochs": AT_LEAST_ONE, "batch_size": AT_LEAST_ONE, "max_candidates": AT_LEAST_ONE, "lr": POSITIVE,
            "head_lr": POSITIVE, "km_lr": POSITIVE, "selection_fraction": Bound(0, 0.5), "dropout": PROBABILITY,
            "max_length": Bound(8)})
        if self.sense_fusion not in SENSE_FUSION:
            problems.append(("sense_fusion", f"one of {', '.join(SENSE_FUSION)}, got {self.sense_fusion!r}"))
        return problems


@dataclass(kw_only=True)
class WordInContextData(DataSection):
    """Where the pairs and the senses come from."""

    bounds = {"wordnet_pairs": Bound(10)}

    #: training pairs: WiC *.data.txt (labels from the *.gold.txt beside it) or JSONL (default: pairs built from
    #: WordNet's usage examples)
    train: Path | None = field(default=None, metadata=flag(metavar="FILE", default=""))
    #: evaluation pairs, evaluated only, same formats (WiC: the dev split; its test labels are not public)
    eval: Path | None = field(default=None, metadata=flag("test", metavar="FILE", aliases=("--eval",), default=""))
    #: the sense KG folder (default: WordNet 3.0, all 117,659 synsets)
    kg: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: WordNet-derived pairs (no --train): how many
    wordnet_pairs: int = 2000
    #: seed of the WordNet-derived pairs
    data_seed: int = 0

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        if (self.train is None) != (self.eval is None):
            given, missing = ("train", "eval") if self.eval is None else ("eval", "train")
            flags = {"train": "--train", "eval": "--test"}
            problems.append((f"data.{missing}", f"{flags[given]} needs {flags[missing]} FILE too"))
        return problems


@dataclass(kw_only=True)
class WordInContextJob(TaskJob, WordInContextConfig):
    """A run: the task config plus its data; empty ``variants`` / ``seeds``: ``finetune`` runs
    ``jaket`` with ``--model`` (else ``lm``) on seed 0, ``evaluate`` every setting on seeds 0-4."""

    data: WordInContextData = field(default_factory=WordInContextData)
