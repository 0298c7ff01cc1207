"""Typed, bounded config fields shared by every config of jaket (pydantic annotations).

Numbers are strict where YAML or JSON could smuggle in another type: ``steps: true`` is not the
integer 1 and ``km_heads: "2"`` is not 2. Floats accept integers and numeric strings, because
YAML 1.1 reads ``1e-4`` (no dot) as a string, but never a boolean, NaN or infinity. Choices are
``Literal`` types whose values the model modules define (a test keeps them equal).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer, Strict, StrictBool, StrictStr


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"expected a number, not the text {value!r}") from None
    return value


Bool = StrictBool
Text = StrictStr
NonEmptyText = Annotated[str, Strict(), Field(min_length=1)]
Int = Annotated[int, Strict()]
PositiveInt = Annotated[int, Strict(), Field(ge=1)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
Float = Annotated[float, BeforeValidator(_number), Field(allow_inf_nan=False)]
PositiveFloat = Annotated[float, BeforeValidator(_number), Field(gt=0.0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, BeforeValidator(_number), Field(ge=0.0, allow_inf_nan=False)]
#: a value in [0, 1): momentum, Adam's betas, held-out shares
UnitFraction = Annotated[float, BeforeValidator(_number), Field(ge=0.0, lt=1.0)]
#: knowledge-module layers (paper: 2; more than 64 is a typo, not a model)
KMLayers = Annotated[int, Strict(), Field(ge=1, le=64)]
#: neighbours sampled per hop (at least one hop, each at least one neighbour); read as a list
#: (YAML and JSON write one), kept as a tuple
Fanouts = Annotated[list[PositiveInt], Field(min_length=1), AfterValidator(tuple),
                    PlainSerializer(list, return_type=list[int])]

#: f of Eq. 1 (:data:`jaket.model.knowledge.COMPOSITIONS`)
Composition = Literal["add", "sub", "mult", "mlp"]
#: σ of Eq. 2 (the activations of :mod:`jaket.model.knowledge`)
Activation = Literal["elu", "gelu", "relu", "identity"]
#: where Eq. 9's LayerNorm applies (:data:`jaket.model.fusion.NORMALIZE`)
FusionNormalize = Literal["all", "mentions"]
#: storage of E^context (:data:`jaket.model.memory.DTYPES`)
MemoryDtype = Literal["float32", "float16", "bfloat16"]


def error_text(error: dict) -> str:
    """A pydantic error's message with the offending value: ``message (got value)``."""
    message = error["msg"].removeprefix("Value error, ")
    value = error.get("input")
    if isinstance(value, (bool, int, float, str)) and error["type"] not in ("missing", "extra_forbidden"):
        return f"{message} (got {value!r})"
    return message


def describe_errors(errors: list[dict], prefix: str = "") -> list[str]:
    """One line per pydantic error: ``prefix`` + ``a.b.c: message (got value)``."""
    return [f"{prefix}{'.'.join(str(p) for p in e['loc']) or '<config>'}: {error_text(e)}"
            for e in errors]
