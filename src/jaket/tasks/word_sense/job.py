"""The word-sense jobs: word-sense disambiguation's task config (:class:`WordSenseConfig`), its data
section (:class:`WordSenseData`) and run (:class:`WordSenseJob`); sense linking's run
(:class:`SenseLinkingJob`) and its data section (:class:`SenseLinkingData`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ConfigDict

from jaket.tasks.job_flags import flag
from jaket.tasks.settings import (AT_LEAST_ONE, BackboneSettings, Bound, DataSection, TaskJob, bound_problems,
                                  variant_problems)


#: the command names of all-words WSD and of sense linking, registered in :mod:`jaket.tasks.registry`
TASK = "word-sense-disambiguation"
SENSE_LINKING = "sense-linking"
#: the settings that score senses (``gnn`` reads no text; ``lm+g``'s random memory knows no sense)
SUPPORTED_VARIANTS = ("lm", "lm+g+m", "jaket")
#: the weight of a sense's KG neighbours (0: none)
WEIGHT = Bound(0, text="must be finite and not negative")


@dataclass
class WordSenseConfig(BackboneSettings):
    """Word-sense disambiguation (all-words, the unified framework of Raganato et al., 2017): each
    target's sense among its lemma's candidates in the sense KG, by the scorers of
    :mod:`jaket.senses.scorers`, none of them fine-tuned. First sense, random and ``jaket
    link``'s Lesk rule always run; ``variants`` adds the encoder scorers: ``lm`` (the base
    encoder's cosine), ``lm+g+m`` (a fresh KM per seed, its structure as every task's:
    :meth:`VariantConfig.km_structure`) and ``jaket`` (the pre-trained masked-entity head, pre-training
    task 4, restricted to the candidates, and the pre-trained encoder's cosine); ``lm`` and ``jaket``
    also bring their encoder's ``(text)`` and ``(text + kg)`` scorers (the candidates' texts, and
    those plus their KG neighbours': :mod:`jaket.senses.scorers`).
    """

    variants: tuple[str, ...] = ("lm", "lm+g+m", "jaket")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: tokens of a description read for the ``lm`` / ``lm+g+m`` / ``jaket (cosine)`` rows
    description_max_length: int = 32
    #: tokens of a target's sentence (special tokens included; a target beyond them is an error)
    max_length: int = 256
    #: weights ``w`` of WordNet's sense order as a prior, each reported beside the scorers alone:
    #: ``log softmax(s / T) + w log p(rank)``, ``p(r) ∝ 1 / (r + 1)`` (:func:`jaket.senses.scorers.with_prior`);
    #: empty = not used. Choose ``w`` on the development set (SemEval-2007) only
    first_sense_prior: tuple[float, ...] = ()
    #: ``β`` of the ``(text + kg)`` scorers: a candidate's row is its text's vector plus ``β`` times the
    #: mean of its KG neighbours'; read on SemEval-2007 (a plateau from 1 to 3: results.wsd_neighbour_weight)
    neighbour_weight: float = 1.0
    #: a WordNet sense's text holds its usage examples (never a sentence of the evaluated file)
    usage_examples: bool = True
    #: tokens of a sense's text read by the ``(text)`` scorers (special tokens included)
    text_max_length: int = 128
    #: resamples of the targets for the paired differences of scorers without seeds
    bootstrap: int = 10000
    bootstrap_seed: int = 0
    #: bf16 autocast for the encoder scorers' passes (:func:`jaket.model.device.autocast`; ``--precision``)
    bf16: bool = False

    def check(self) -> list[tuple[str, str]]:
        problems = variant_problems(self.variants, SUPPORTED_VARIANTS, "is not a scorer of word-sense "
                                    f"disambiguation, which runs {', '.join(SUPPORTED_VARIANTS)}")
        problems += [("first_sense_prior", f"weights must be finite and positive, got {w}")
                     for w in self.first_sense_prior if not 0 < w < float("inf")]
        return problems + bound_problems(self, {
            "max_length": Bound(8), "description_max_length": Bound(4), "neighbour_weight": WEIGHT,
            "text_max_length": Bound(8), "bootstrap": Bound(100, text="must be at least 100 resamples")})


@dataclass(kw_only=True)
class WordSenseData(DataSection):
    """Where the targets and the senses come from."""

    #: the targets: the WSD framework's *.data.xml or JSONL (docs/data.md; required)
    path: Path | None = field(default=None, metadata=flag("data", metavar="FILE", default=""))
    #: the framework's key file (default: the *.gold.key.txt beside --data, if any)
    gold: Path | None = field(default=None, metadata=flag(metavar="FILE", default=""))
    #: the sense KG folder (default: WordNet 3.0, all 117,659 synsets)
    kg: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))

    def check(self) -> list[tuple[str, str]]:
        return super().check() + ([("data.path", "--data FILE is required (a framework *.data.xml or JSONL)")]
                                  if self.path is None else [])


@dataclass(kw_only=True)
class WordSenseJob(TaskJob, WordSenseConfig):
    """A run: the task config plus its data; empty ``variants`` / ``seeds``: every encoder scorer
    that applies (``jaket`` with ``--model``) and seeds 0-4."""

    data: WordSenseData = field(default_factory=WordSenseData)


@dataclass(kw_only=True)
class SenseLinkingData(DataSection):
    """Where the linked texts come from: a pre-training run's held-out share or the texts of an
    unseen KG' (exactly one of the two)."""

    bounds = {"max_examples": AT_LEAST_ONE}

    #: a pre-training run folder: its held-out linked texts (rebuilt from RUN/config.yaml) are the examples
    heldout_of: Path | None = field(default=None, metadata=flag(metavar="RUN", default=""))
    #: a 'jaket prepare wordnet-reference' folder: the texts of its unseen KG' (DATA/kg-unseen), which
    #: pre-training never saw, are the examples
    unseen_of: Path | None = field(default=None, metadata=flag(metavar="DATA", default=""))
    #: with ``unseen_of``: a word's candidates are its KG' senses only (a KG never seen at all)
    unseen_candidates_only: bool = False
    #: the sense KG folder (default: WordNet 3.0, all synsets)
    kg: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: use the first N examples only
    max_examples: int | None = field(default=None, metadata=flag(metavar="N", default="all"))

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        if self.heldout_of is None and self.unseen_of is None:
            problems.append(("data.heldout_of", "give the examples: --heldout-of RUN (a pre-training run's "
                                                "held-out texts) or --unseen-of DATA"))
        elif self.heldout_of is not None and self.unseen_of is not None:
            problems.append(("data.unseen_of", "give the examples once: --heldout-of RUN or --unseen-of DATA, "
                                               "not both"))
        return problems


@dataclass(kw_only=True)
class SenseLinkingJob:
    """Sense linking (:func:`jaket.tasks.word_sense.run.evaluate_sense_linking`): each linked
    mention's synset among the senses of the word as written, by every scorer of
    :mod:`jaket.senses.scorers`; nothing is fine-tuned, and no setting is compared, so
    :func:`jaket.tasks.cli_common.resolve_job` leaves the job as it is."""

    #: jointly pre-trained model folder (the jaket scorers)
    pretrained: Path | None = field(default=None, metadata=flag("model", metavar="DIR", default=""))
    #: base Hugging Face encoder (default: the bundled MiniLM)
    encoder: Path | None = field(default=None, metadata=flag(metavar="DIR", default=""))
    #: the fresh KMs of the ``lm+g+m`` scorer (``--seeds N``: 0 .. N-1)
    seeds: tuple[int, ...] = (0, 1, 2)
    #: only the first-sense, random and --model scorers (to compare pre-trained models)
    baselines: bool = True
    #: bf16 autocast for the encoder scorers' passes (``--precision``)
    bf16: bool = False
    #: ``β`` of the ``(text + kg)`` scorers (:class:`WordSenseConfig`'s); their texts hold no usage example
    neighbour_weight: float = 1.0
    data: SenseLinkingData = field(default_factory=SenseLinkingData)

    __pydantic_config__ = ConfigDict(extra="forbid")

    def check(self) -> list[tuple[str, str]]:
        problems = self.data.check()
        if not self.seeds:  # negative and repeated seeds: every job's check (jaket.tasks.config.load_task_config)
            problems.append(("seeds", "give at least one seed (the fresh KMs of lm+g+m)"))
        return problems + bound_problems(self, {"neighbour_weight": WEIGHT})
