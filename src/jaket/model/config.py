"""JaketConfig: everything needed to rebuild a :class:`jaket.model.jaket.JaketModel`.

One config for one model: the ``model:`` section of the pre-training YAML *is* a JaketConfig
(:class:`jaket.train.config.PretrainConfig`), and a model folder's ``config.json`` is its
:meth:`JaketConfig.to_dict`. The fields fall into three groups:

- the **structure** the weights depend on (:data:`STRUCTURE_FIELDS`: LM1 depth k, KM layers and
  heads, the composition f of Eq. 1, σ of Eq. 2, where Eq. 9 normalises);
- how the model is **run** (fan-outs of the sampled neighbourhood, description length and momentum
  of the memory, Eq. 7 and 12, its storage dtype, KM dropout, the relation memory);
- what the **KG** fixes (:data:`KG_FIELDS`: the category and relation heads' sizes and names),
  filled from the KG by :meth:`JaketConfig.for_kg`, never chosen by hand in pre-training.

``config.json`` carries ``config_version`` (:data:`CONFIG_VERSION`); a file without it was written
before the field existed (version 1, the same fields) and is upgraded by :meth:`from_dict`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated

from pydantic import Field

from jaket.fields import (Activation, Bool, Composition, Fanouts, FusionNormalize, Int, KMLayers,
                          MemoryDtype, NonEmptyText, NonNegativeInt, PositiveInt, Text, UnitFraction,
                          describe_errors)
from jaket.jsonio import JSONInputError, read_json
from jaket.kg.graph import KnowledgeGraph

#: the format :meth:`JaketConfig.to_dict` writes; 1 = the files written before it was recorded
CONFIG_VERSION = 2
#: filled from the KG (:meth:`JaketConfig.for_kg`)
KG_FIELDS = ("num_categories", "num_relations", "category_names", "relation_names")
#: the fields a saved model's weights were trained with: continuing from a folder keeps its values
STRUCTURE_FIELDS = ("lm1_layers", "km_layers", "km_heads", "composition", "km_activation",
                    "fusion_normalize")
#: keys of ``config.json`` that describe the file, not the model
_FILE_KEYS = ("model_type", "jaket_version", "config_version")


class ModelFolderError(ValueError):
    """A model folder (or its ``config.json``) cannot be loaded; the message names the file."""


def read_model_config(directory) -> dict:
    """The ``config.json`` of a pre-trained jaket folder as a dict: the one reading every command
    goes through (``JaketModel.from_pretrained``, the ``jaket`` setting's KM structure), so a
    missing, unreadable or foreign config is the same one line everywhere; a fine-tuned folder
    given instead says where its pre-trained part is."""
    directory = Path(directory)
    path = directory / "config.json"
    if not path.is_file():
        if (directory / "task.json").is_file():
            raise ModelFolderError(f"{directory}: a fine-tuned model folder, not a pre-trained one (its backbone is "
                                   f"{directory / 'backbone'}; jaket predict TASK --finetuned {directory} uses it)")
        raise ModelFolderError(f"{directory}: not a jaket model folder (no config.json)")
    try:
        data = read_json(path)
    except JSONInputError as error:
        raise ModelFolderError(f"{path}:{error.line or 1}: {error.reason}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ModelFolderError(f"{path}: unreadable ({error})") from None
    if not isinstance(data, dict):
        raise ModelFolderError(f"{path}: expected a JSON object, found {type(data).__name__}")
    if data.get("model_type") != "jaket":
        raise ModelFolderError(f"{path}: model_type is {data.get('model_type')!r}, not 'jaket' (a plain Transformers "
                               "folder is loaded as an encoder: JaketModel(JaketConfig(encoder=...)))")
    return data


@dataclass
class JaketConfig:
    """Everything needed to rebuild a :class:`~jaket.model.jaket.JaketModel` (paper defaults where
    it gives them; pre-training's own defaults are :data:`jaket.train.config.PRETRAIN_MODEL_DEFAULTS`).

    The field types are the bounded ones of :mod:`jaket.fields`; :meth:`from_dict` validates them
    (a saved ``config.json``), :func:`check_fits_encoder` what depends on the encoder."""

    encoder: NonEmptyText | None = None  # a local Hugging Face masked-LM folder; None = the bundled MiniLM
    lm1_layers: NonNegativeInt | None = None  # k; None = half of the encoder's layers (paper: 6 of 12)
    km_layers: KMLayers = 2
    km_heads: PositiveInt = 8
    composition: Composition = "add"  # f of Eq. 1
    km_activation: Activation = "elu"  # σ of Eq. 2
    km_dropout: UnitFraction = 0.0
    fanouts: Fanouts = (10, 10)  # neighbours sampled per hop around the KM's seed entities
    description_max_length: Annotated[Int, Field(ge=4)] = 64  # tokens of a description (Eq. 7), specials included
    memory_momentum: UnitFraction = 0.8  # m of Eq. 12
    memory_dtype: MemoryDtype = "float32"
    fusion_normalize: FusionNormalize = "all"  # Eq. 9 at every position ("all") or at mentions only
    num_categories: PositiveInt = 1
    num_relations: PositiveInt = 1
    use_relation_memory: Bool = False  # R from relation descriptions (paper: fine-tuning only)
    category_names: list[Text] = field(default_factory=list)
    relation_names: list[Text] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The fields as JSON values, with the ``config_version`` of this format."""
        data = asdict(self)
        data["fanouts"] = list(self.fanouts)
        data["config_version"] = CONFIG_VERSION
        return data

    def for_kg(self, kg: KnowledgeGraph) -> "JaketConfig":
        """A copy whose :data:`KG_FIELDS` describe ``kg`` (at least one category and relation row,
        so a KG without categories still builds)."""
        return replace(self, num_categories=max(1, kg.num_categories), num_relations=max(1, kg.num_relations),
                       category_names=list(kg.category_names), relation_names=list(kg.relation_names))

    @classmethod
    def from_dict(cls, data: dict, where: str = "config") -> "JaketConfig":
        """Validate ``data`` (types and bounds; an older ``config_version`` upgraded first);
        :class:`ModelFolderError` lists every bad field as ``where: field: problem``."""
        from pydantic import TypeAdapter, ValidationError

        if not isinstance(data, dict):
            raise ModelFolderError(f"{where}: expected a JSON object, found {type(data).__name__}")
        data = upgrade_config(data, where)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known - set(_FILE_KEYS))
        if unknown:
            raise ModelFolderError(f"{where}: unknown JaketConfig fields: {unknown}")
        try:
            return TypeAdapter(cls).validate_python({k: v for k, v in data.items() if k in known})
        except ValidationError as error:
            raise ModelFolderError("\n".join(describe_errors(error.errors(), f"{where}: "))) from None


def upgrade_config(data: dict, where: str = "config") -> dict:
    """``data`` in the current format (a copy). Version 1 (no ``config_version``: jaket 0.1.0
    before the field existed) holds the same fields; its ``encoder: ""`` meant the bundled MiniLM,
    which is ``None`` now."""
    version = data.get("config_version", 1)
    if type(version) is not int or not 1 <= version <= CONFIG_VERSION:
        raise ModelFolderError(f"{where}: config_version {version!r} is not one this jaket reads "
                               f"(1 to {CONFIG_VERSION}; a newer jaket wrote it?)")
    data = dict(data)
    if version == 1 and data.get("encoder") == "":
        data["encoder"] = None
    data["config_version"] = CONFIG_VERSION
    return data


def check_fits_encoder(config: JaketConfig, hidden_size: int, num_layers: int, where: str = "",
                       prefix: str = "") -> None:
    """The checks that need the encoder: ``km_heads`` divides its width F (each head has F / K
    dims) and ``lm1_layers`` is at most its depth. ``prefix`` names the fields as the user wrote
    them (``model.`` in the pre-training config)."""
    problems = []
    if hidden_size % config.km_heads:
        divisors = [k for k in range(1, min(hidden_size, 64) + 1) if hidden_size % k == 0]
        problems.append(f"{prefix}km_heads={config.km_heads} does not divide the encoder's width "
                        f"{hidden_size} (choose one of {divisors})")
    if config.lm1_layers is not None and config.lm1_layers > num_layers:
        problems.append(f"{prefix}lm1_layers={config.lm1_layers} exceeds the encoder's {num_layers} layers")
    if problems:
        raise ModelFolderError("\n".join(f"{where}: {p}" if where else p for p in problems))


def encoder_shape(path: str | Path) -> tuple[int, int]:
    """``(hidden_size, num_hidden_layers)`` from a Hugging Face folder's ``config.json`` (nothing
    else is read)."""
    config_path = Path(path) / "config.json"
    try:
        data = read_json(config_path)
    except FileNotFoundError:
        raise ModelFolderError(f"{path}: not a Hugging Face model folder (no config.json)") from None
    except (OSError, ValueError) as error:
        raise ModelFolderError(f"{config_path}: unreadable ({error})") from None
    sizes = [data.get(k) if isinstance(data, dict) else None for k in ("hidden_size", "num_hidden_layers")]
    if not all(type(v) is int and v > 0 for v in sizes):
        raise ModelFolderError(f"{config_path}: hidden_size and num_hidden_layers must be positive "
                               f"integers (found {sizes[0]!r}, {sizes[1]!r})")
    return sizes[0], sizes[1]
