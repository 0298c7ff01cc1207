"""Typed pre-training configuration (pydantic), loadable from YAML with ``key=value`` overrides.

The embedded default (``configs/pretrain-default.yaml`` holds the same values) is the demo run:
a WordNet subset of 10,000 entities and their usage examples with the bundled MiniLM, sized to
finish within 10 minutes on 2 CPU cores (docs/pretraining.md, "The embedded default").

Errors name where the bad value came from: ``FILE:LINE: key: message`` for the YAML file,
``--set key=value: message`` for an override. The keys of earlier versions (``model.init``,
``model.memory_path``, ``tasks.use_relation_memory``: :data:`MOVED_KEYS`) are still read.
"""

from __future__ import annotations

from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator,
                      model_validator)
from pydantic_core import PydanticCustomError

from jaket.errors import UsageError
from jaket.fields import (Bool, Int, NonEmptyText, NonNegativeFloat, NonNegativeInt, PositiveFloat,
                          PositiveInt, UnitFraction)
from jaket.model.config import KG_FIELDS, JaketConfig
from jaket.overrides import describe_error, layer_overrides, read_yaml_mapping, set_value


class ConfigError(UsageError):
    """A config value is wrong; one line per problem, each naming the file and line or the flag."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataConfig(_Strict):
    """Where the KG and its mention corpus come from.

    ``source``: ``wordnet`` (the embedded default: ``max_entities`` synsets and their usage
    examples), ``toy`` (:func:`jaket.kg.toy.toy_kg`) or ``dir`` (a KG directory in the
    :mod:`jaket.kg.io` format at ``path``, with its ``corpus.jsonl``). ``corpus``: a corpus file
    (``jaket.kg.io`` JSONL) that replaces the source's own texts.
    """

    source: Literal["wordnet", "toy", "dir"] = "wordnet"
    path: NonEmptyText | None = None
    corpus: NonEmptyText | None = None
    max_entities: PositiveInt = 10_000
    wordnet_roots: list[NonEmptyText] | None = Field(None, min_length=1)
    max_length: Int = Field(48, ge=4)  # text tokens, special tokens included
    heldout_fraction: UnitFraction = 0.05
    #: files whose sentences are dropped from the corpus before anything else (a benchmark's
    #: train/dev/test sentences: :mod:`jaket.kg.exclusion`); counted in the data report
    exclude_texts: list[NonEmptyText] | None = None
    group_by_length: Bool = True  # batches of similar length (less padding), see Pretrainer
    #: worker processes building the batches ahead of the model step (None: 2 next to a GPU,
    #: 0 on a CPU); any number gives the same batches (each depends on its step alone)
    workers: NonNegativeInt | None = None
    prefetch: PositiveInt = 2  # batches each worker builds ahead

    @model_validator(mode="after")
    def _path_for_dir(self) -> "DataConfig":
        if self.source == "dir" and not self.path:
            raise ValueError("data.source=dir needs data.path (a KG directory; `--kg DIR`)")
        return self


#: pre-training's own choices where they differ from :class:`JaketConfig`'s defaults: 4 heads of
#: 96 dims on MiniLM's 384, 5 neighbours per hop (the cost of a CPU step), 16 description tokens
#: (WordNet: the lemmas come first)
PRETRAIN_MODEL_DEFAULTS = {"km_heads": 4, "fanouts": (5, 5), "description_max_length": 16}
#: keys of earlier versions of this config and where they are now (still read: :func:`upgrade_keys`)
MOVED_KEYS = {"model.init": "init", "model.memory_path": "memory.path",
              "tasks.use_relation_memory": "model.use_relation_memory"}


def pretraining_model(**values) -> JaketConfig:
    """The ``model:`` section of the embedded default (``values`` replacing fields)."""
    return JaketConfig(**{**PRETRAIN_MODEL_DEFAULTS, **values})


class TaskConfig(_Strict):
    """Loss weights of the four tasks (0 switches a task off) and their sampling sizes."""

    weight_category: NonNegativeFloat = 1.0
    weight_relation: NonNegativeFloat = 1.0
    weight_mlm: NonNegativeFloat = 1.0
    weight_entity: NonNegativeFloat = 1.0
    root_entities: PositiveInt = 32  # roots per step for the knowledge-module tasks
    walk_length: NonNegativeInt = 3
    relation_pairs: NonNegativeInt = 32  # triples predicted per step (hidden from the GNN)
    mlm_probability: PositiveFloat = Field(0.15, lt=1.0)
    entity_mask_probability: PositiveFloat = Field(0.15, le=1.0)
    entity_random_negatives: NonNegativeInt = 128
    entity_hard_negatives: NonNegativeInt = 8
    #: beyond the paper: negatives drawn from the entities sharing a name or alias with the true
    #: one (the other senses of its words; :func:`jaket.train.tasks.homonym_index`), so masked
    #: entity prediction learns sense disambiguation (0 = the paper's candidates)
    entity_homonym_negatives: NonNegativeInt = 0
    #: beyond the paper: negatives drawn from the entities playing a relation role of the true one
    #: (the other tails of a relation it is a tail of, the other heads of one it heads;
    #: :func:`jaket.train.tasks.role_index`), so masked entity prediction must tell apart entities of
    #: the same kind, e.g. one director from the others (0 = the paper's candidates)
    entity_role_negatives: NonNegativeInt = 0
    #: beyond the paper: score a removed mention against every entity of the memory (a softmax over
    #: the whole E^context, the ranking the masked-entity evaluation, the knowledge probe and KGQA
    #: use) instead of the sampled candidates above; the memory rows carry no gradient, so this costs
    #: one (removed mentions x entities) product a step (False = the paper's sampled negatives)
    entity_all_candidates: bool = False
    #: beyond the paper: this many of each step's KM seed entities (walked entities and predicted
    #: pairs) take E^(0) = LM1(description) computed *with* gradients instead of their memory row,
    #: so the category and relation losses train LM1 on descriptions too (0 = the paper: LM1
    #: learns from text only and the memory is read without gradients)
    description_rows: NonNegativeInt = 0
    #: beyond the paper: the probability that a removed mention (masked entity prediction) is hidden
    #: from the text too, all its tokens masked and predicted by the masked-token loss
    #: (:func:`jaket.train.tasks.mask_mention_tokens`): the entity must be named from what its
    #: context says of it, not read -- entity-level masking as ERNIE (Baidu) and salient spans as
    #: REALM; 0 = the paper (a removed mention's words stay: the task links a name it reads)
    mention_token_masking: NonNegativeFloat = Field(0.0, le=1.0)


class OptimConfig(_Strict):
    """AdamW (paper: 0.9, 0.999, 1e-8, weight decay 0.01); the language module warms up over
    ``warmup_fraction`` of the steps and decays linearly, the rest decays linearly from ``km_lr``."""

    lm_lr: PositiveFloat = 1e-4  # paper 1e-5; a run of a few hundred steps needs more
    km_lr: PositiveFloat = 1e-3  # paper 1e-4
    warmup_fraction: UnitFraction = 0.06
    weight_decay: NonNegativeFloat = 0.01
    betas: tuple[UnitFraction, UnitFraction] = (0.9, 0.999)
    eps: PositiveFloat = 1e-8
    max_grad_norm: PositiveFloat = 1.0
    accumulation_steps: PositiveInt = 1
    #: ablation: LM1 (embeddings and the first k layers) is not trained, only LM2, the KM, the
    #: fusion and the heads; the memory then stays what the base LM1 gives
    freeze_lm1: Bool = False


class MemoryConfig(_Strict):
    """Refresh schedule of Eq. 11 (paper: initial=10, growth=2, every=3, maximum=500).

    A full refresh of 10,000 MiniLM descriptions costs 30-60 s on 2 cores, as much as 20-100
    training steps, so the 120-step default refreshes once, before step 60 (docs/pretraining.md)."""

    initial: PositiveInt = 60
    growth: PositiveInt = 2
    every: PositiveInt = 3
    maximum: PositiveInt = 500
    batch_size: PositiveInt = 128
    #: the first fill read from the description-row cache when LM1's weights, the KG, the window and
    #: the precision match an earlier run's, else computed and stored there ($JAKET_CACHE/memory;
    #: off: always computed, as with JAKET_CACHE=off)
    cache: Bool = True
    #: a .npy file to memory-map E^context from (created when absent; when it exists with the
    #: right shape its rows are the first fill, e.g. from `jaket embed --layer memory`)
    path: NonEmptyText | None = None

    @field_validator("path")
    @classmethod
    def _a_file(cls, value: str | None) -> str | None:
        if value is not None and Path(value).is_dir():
            raise ValueError(f"{value} is a folder; name the .npy file to memory-map, e.g. "
                             f"{Path(value) / 'memory.npy'}")
        return value


class PretrainConfig(_Strict):
    """A pre-training run. ``model`` is the :class:`JaketConfig` of the model to train (saved as its
    folder's ``config.json``) with pre-training's defaults (:data:`PRETRAIN_MODEL_DEFAULTS`); the
    fields the KG fixes (:data:`KG_FIELDS`) are filled from it when the model is built and cannot
    be given. ``init``: a jaket model folder to continue from (``--init``): its encoder and the
    fields its weights depend on (:data:`jaket.model.config.STRUCTURE_FIELDS`) replace
    ``model.encoder`` and those fields; its weights are loaded where they fit."""

    data: DataConfig = Field(default_factory=DataConfig)
    model: JaketConfig = Field(default_factory=pretraining_model)
    init: NonEmptyText | None = None
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    steps: PositiveInt = 120
    text_batch_size: PositiveInt = 32  # texts per rank and micro-step
    seed: NonNegativeInt = 0
    bf16: Bool = False  # bf16 autocast (CPU: supported, but not faster on most CPUs)
    #: the engine's mixed precision: no, bf16 or fp16 (with a gradient scaler); None = what the
    #: launcher says (`accelerate launch --mixed_precision`), else no. bf16=true means bf16
    mixed_precision: Literal["no", "bf16", "fp16"] | None = None
    checkpoint_every: NonNegativeInt = 60  # 0 = only at the end
    keep_checkpoints: PositiveInt = 2  # the newest N step-* directories are kept
    log_every: PositiveInt = 1
    tensorboard: Bool = True  # a TensorBoard log (OUT/tensorboard) when tensorboard is installed
    #: more of the engine's trackers (each must be installed): wandb, mlflow, tensorboard
    trackers: list[Literal["tensorboard", "wandb", "mlflow"]] = Field(default_factory=list)
    eval_texts: NonNegativeInt = 200  # held-out texts for the masked-entity evaluation

    @field_validator("model", mode="before")
    @classmethod
    def _pretraining_defaults(cls, value: Any) -> Any:
        if isinstance(value, dict):
            given = [key for key in KG_FIELDS if key in value]
            if given:
                raise PydanticCustomError(
                    "kg_field", "filled from the KG when the model is built ({fields}); remove it",
                    {"at": given[0], "fields": ", ".join(KG_FIELDS)})
            value = {**PRETRAIN_MODEL_DEFAULTS, **value}
        return value

    @field_serializer("model", mode="wrap")
    def _without_kg_fields(self, value: JaketConfig, handler) -> dict:
        return {k: v for k, v in handler(value).items() if k not in KG_FIELDS}

    @model_validator(mode="after")
    def _consistent(self) -> "PretrainConfig":
        if self.bf16 and self.mixed_precision not in (None, "bf16"):
            raise ValueError(f"bf16=true contradicts mixed_precision={self.mixed_precision}; set one")
        if self.init is not None and self.model.encoder is not None:
            raise ValueError("give model.encoder (a base encoder) or init (a jaket folder: --init), not both")
        return self


def upgrade_keys(data: dict, where: str) -> dict:
    """Move the keys of earlier versions (:data:`MOVED_KEYS`) of a config dict (a YAML file, a
    checkpoint's saved config) to where they are now, in place; giving both names is refused."""
    for old, new in MOVED_KEYS.items():
        section, name = old.split(".")
        if not isinstance(data.get(section), dict) or name not in data[section]:
            continue
        value = data[section].pop(name)
        *parents, last = new.split(".")
        node = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and last in node and node[last] != value:
            raise ValueError(f"{where}: {old} (the old name of {new}) and {new} are both given; keep {new}")
        set_value(data, new, value, where)
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | None = None,
                values: dict[str, Any] | None = None) -> PretrainConfig:
    """The embedded default, updated by the YAML file at ``path``, then by ``overrides``
    (``"a.b=value"`` strings, values parsed as YAML), then by ``values`` (``{"a.b": value}``,
    values used as given: for paths that YAML would misread)."""
    data: dict = {}
    if path is not None:
        path = Path(path)
        try:
            data = read_yaml_mapping(path)
        except ValueError as error:
            raise ConfigError([str(error)]) from None
    try:
        upgrade_keys(data, str(path))
        origins = layer_overrides(data, overrides, values, moved=MOVED_KEYS)
    except ValueError as error:
        raise ConfigError([str(error)]) from None
    try:
        return PretrainConfig.model_validate(data)
    except ValidationError as error:
        located = sorted((describe_error(_model_key(e), path, origins) for e in error.errors()),
                         key=lambda d: d[0])
        raise ConfigError([text for _, text in located]) from None


def _model_key(error: dict) -> dict:
    """A ``model:`` error located at its key: a KG-derived field given, an unknown key (with the
    keys there are)."""
    if error["type"] == "kg_field":
        return {**error, "loc": (*error["loc"], error["ctx"]["at"])}
    if error["type"] == "unexpected_keyword_argument" and error["loc"][:1] == ("model",):
        names = ", ".join(f.name for f in dataclass_fields(JaketConfig) if f.name not in KG_FIELDS)
        return {**error, "msg": f"unknown key; the model keys are: {names}"}
    return error


def dump_config(config: PretrainConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
