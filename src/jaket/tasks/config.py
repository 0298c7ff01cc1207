"""Fine-tuning configs from YAML with ``--set key=value`` overrides, as pre-training's.

A task's config is a dataclass (e.g. :class:`jaket.tasks.entity_classification.job.EntityClassificationConfig`);
:func:`load_task_config` fills it from the dataclass defaults, then a YAML file, then ``--set``
overrides, then values the command's own flags give, and validates the result with pydantic. The
override syntax and the error format are those of :mod:`jaket.train.config`:
``FILE:LINE: key: message`` for a bad value in the file, ``--set key=value: key: message`` for an
override (the machinery is :mod:`jaket.overrides`, shared with pre-training).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar, get_type_hints

import yaml
from pydantic import TypeAdapter, ValidationError

from jaket.errors import UsageError
from jaket.overrides import describe_error, layer_overrides, read_yaml_mapping
from jaket.tasks.settings import list_problems

T = TypeVar("T")


def load_task_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | None = None,
                     values: dict[str, Any] | None = None, what: str = "fine-tuning",
                     origin: Callable[[str, Any], str] | None = None) -> T:
    """``cls`` (a dataclass) from its defaults < the YAML file at ``path`` < ``overrides``
    (``"a.b=value"``, values parsed as YAML) < ``values`` (``{"a.b": value}``, used as given;
    ``origin(key, value)`` names where each was given in the error messages, as the caller wrote it:
    ``--epochs 0`` on the command line, ``epochs=0`` from Python; default: ``key=value``).

    After pydantic's type checks, ``cls.check()`` (when defined) returns ``(key, message)`` pairs
    of values that are well-typed but wrong, and a ``seeds`` list is checked for a seed given twice
    (:func:`jaket.tasks.settings.list_problems`; left empty, a job's seeds are its defaults); they
    are reported like type errors, as are a negative seed, a variant given twice (it ran twice) and a
    ``true`` / ``false`` given for a number (pydantic read it as 1 or 0: ``head_lr: true`` trained
    at a learning rate of 1.0)."""
    path = Path(path) if path is not None else None
    data = read_yaml_mapping(path) if path is not None else {}
    origins = layer_overrides(data, overrides, values, origin or (lambda key, value: f"{key}={value!r}"))
    try:
        config = TypeAdapter(cls).validate_python(data)
    except ValidationError as error:
        located = sorted((describe_error(_known_key(e, cls), path, origins) for e in error.errors()),
                         key=lambda described: described[0])
        raise UsageError(f"invalid {what} config:\n" + "\n".join(text for _, text in located)) from None
    check = getattr(config, "check", None)
    problems = _not_numbers(data, config)
    said = {key for key, _ in problems}  # a NaN is out of every range too: one line a key, the first
    problems += [(key, text) for key, text in (check() if callable(check) else []) if key not in said]
    seeds = getattr(config, "seeds", None) or ()
    problems += list_problems("seeds", seeds, "seed", required=False)
    problems += [("seeds", f"seed {seed} is negative (seeds are 0 or more)") for seed in seeds if seed < 0]
    problems += list_problems("variants", getattr(config, "variants", None) or (), "variant", required=False)
    if problems:
        raise UsageError(f"invalid {what} config:\n" + "\n".join(
            describe_error({"loc": tuple(key.split(".")), "msg": message}, path, origins)[1] for key, message in problems))
    return config


def _not_numbers(data: Mapping, config, prefix: str = "") -> list[tuple[str, str]]:
    """``(key, problem)`` of each value of ``data`` (the layered values) that the validated ``config``
    holds as a number but is none: ``true`` / ``false`` (read as 1 / 0) or a NaN or infinity (a learning
    rate of NaN trained on NaN without a word), in a field or an item of a list field."""
    problems: list[tuple[str, str]] = []
    for key, value in data.items():
        typed = config.get(key) if isinstance(config, Mapping) else getattr(config, str(key), None)
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            problems += _not_numbers(value, typed, name + ".")
        elif _not_a_number(value, typed):
            problems.append((name, f"expected a finite number, got {str(value).lower()}"))
        elif isinstance(value, (list, tuple)) and isinstance(typed, (list, tuple)):
            wrong = next((v for v, t in zip(value, typed) if _not_a_number(v, t)), None)
            if wrong is not None:
                problems.append((name, f"expected finite numbers, got {str(wrong).lower()} among them"))
    return problems


def _not_a_number(given, typed) -> bool:
    """``given`` is a bool, NaN or infinity where the job holds a number ``typed`` (not a bool)."""
    if not isinstance(typed, (int, float)) or isinstance(typed, bool):
        return False
    return isinstance(given, bool) or (isinstance(given, float) and not math.isfinite(given))


def flag_values(args, flag_keys: dict[str, str]) -> dict[str, Any]:
    """The config values a task command's own flags give (``{dest: key}``: the flags set, not
    None), with ``--variant`` / ``--variants`` and ``--seeds N --first-seed S`` as ``variants`` and
    ``seeds`` (``--first-seed S`` alone: the command's default count of seeds from S): what
    :func:`load_task_config` layers over the file and ``--set``."""
    values = {key: getattr(args, dest) for dest, key in flag_keys.items() if getattr(args, dest, None) is not None}
    if getattr(args, "variant", None):
        values["variants"] = [args.variant]
    if getattr(args, "variants", None):
        values["variants"] = list(args.variants)
    first = getattr(args, "first_seed", 0) or 0
    count = getattr(args, "seeds", None)
    if count is None and first:  # --first-seed alone: the command's default count (5 to evaluate, 1 to fine-tune)
        count = getattr(args, "_seed_count", None) or (5 if getattr(args, "evaluate", True) else 1)
    if count is not None:
        if count < 1 or first < 0:
            raise UsageError(f"--seeds {count} --first-seed {first}: need at least one seed, from seed 0 or later")
        values["seeds"] = list(range(first, first + count))
    return values


def shown_value(value) -> str:
    """A flag's value as typed: a list as its items, space-separated (``--train a.json b.json``)."""
    if isinstance(value, (list, tuple)):
        return " ".join(str(item) for item in value)
    return str(value)


def _known_key(error: dict, cls) -> dict:
    """Pydantic names an unknown key ``unexpected_keyword_argument``; say which keys exist."""
    if error.get("type") == "unexpected_keyword_argument" and is_dataclass(cls):
        node = cls
        for part in error["loc"][:-1]:
            node = get_type_hints(node).get(str(part)) if is_dataclass(node) else None
        if node is not None and is_dataclass(node):
            names = ", ".join(f.name for f in fields(node) if not f.name.startswith("_"))
            return {**error, "msg": f"unknown key; the keys are: {names}"}
    return error


def dump_task_config(config) -> str:
    """The resolved config as YAML (paths as strings, tuples as lists)."""
    return yaml.safe_dump(TypeAdapter(type(config)).dump_python(config, mode="json"), sort_keys=False)
