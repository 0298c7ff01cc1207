"""The flags of ``jaket finetune|evaluate TASK``, made from the task's typed job.

Hugging Face's ``HfArgumentParser`` is the model (written here, not copied): every field of the job
dataclass, its data section's included, is one flag. The field gives the flag its name (``head_lr`` ->
``--head-lr``; a data field by its own name: ``data.kg`` -> ``--kg``), its type (``int``, ``float``,
``str``, a path; a tuple as a comma list, a tuple of paths as one or more files; a ``Literal`` as
choices), its default (shown in the help, never set: a flag given on the command line is layered over
the defaults, ``--config`` and ``--set``, the others leave the job's value alone) and its help (the
field's :func:`flag` metadata, else the ``#:`` comment above it). A ``bool`` field is a switch: ``--name``
when it defaults to False, ``--no-name`` when it defaults to True.

:func:`flag` is the field metadata where the vocabulary of docs/cli.md needs it: the flag's name
(``pretrained`` is ``--model``), its metavar, its help, and the old spellings kept as hidden
deprecated aliases (:func:`jaket.flags.deprecated_alias`). Four fields are how every task command
spells them: ``variants`` (``--variants LIST`` to evaluate, ``--variant NAME`` to fine-tune),
``seeds`` (``--seeds N`` with ``--first-seed S``: seeds S .. S+N-1) and ``bf16`` (``--precision``,
resolved on ``--device``). The flags of how and where to run (:data:`RUN_FLAGS`) are no job field.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import re
import textwrap
import types
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Union

from jaket.flags import PRECISIONS, add_device_argument, deprecated_alias
from jaket.overrides import add_config_flags
from jaket.tasks.tracking import add_log_with_argument

#: the metadata key of :func:`flag`
FLAG = "jaket.flag"

#: the metavar of a value flag by its type (where the field names none)
METAVARS = {int: "N", float: "X", str: "TEXT"}

#: the fields every task command spells its own way (not field name = flag name): see the module
SPECIAL_FIELDS = ("variants", "seeds", "bf16")

#: the flags of how and where to run, or of the config itself: no job field (listed once, here)
RUN_FLAGS = ("--out", "--overwrite", "--json", "--device", "--log-with", "--config", "--set", "--print-config",
             "--first-seed")


def flag(name: str | None = None, *, help: str | None = None, metavar: str | None = None,
         aliases: tuple[str, ...] = (), default: str | None = None, choices: tuple | None = None) -> dict:
    """A job field's flag metadata (``field(default=..., metadata=flag(...))``): ``name`` the flag
    without ``--`` where it is not the field's name, ``help`` where the ``#:`` comment above the field
    is not the help, ``aliases`` the old spellings (hidden, each printing one deprecation line),
    ``default`` the default as the help shows it (where the field's value is not what runs; ``""``:
    none shown, the help says it), ``choices`` the values a text field takes."""
    return {FLAG: {"name": name, "help": help, "metavar": metavar, "aliases": tuple(aliases), "default": default,
                   "choices": choices}}


# ----------------------------------------------------------------------------- the fields


def _meta(field: dataclasses.Field) -> dict:
    return dict(field.metadata.get(FLAG) or {})


@lru_cache(maxsize=None)
def _comments(cls: type) -> dict[str, str]:
    """Field name -> the ``#:`` comment lines above it in ``cls``'s source (a field's help)."""
    try:
        lines, _ = inspect.getsourcelines(cls)
        source = "".join(lines)
        tree = ast.parse(textwrap.dedent(source))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    text = [line.strip() for line in lines]
    found: dict[str, str] = {}
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above, row = [], node.lineno - 2
            while row >= 0 and text[row].startswith("#:"):
                above.insert(0, text[row][2:].strip())
                row -= 1
            if above:
                found[node.target.id] = " ".join(above)
    return found


def _comment(cls: type, name: str) -> str:
    for base in cls.__mro__:
        if dataclasses.is_dataclass(base) and name in _comments(base):
            return _comments(base)[name]
    return ""


def _plain(text: str) -> str:
    """Plain help text: reST's double backticks and :role:`x` markup as plain words, ``%`` escaped
    for argparse's template."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", lambda m: m.group(1).split(".")[-1], text)
    return text.replace("``", "").replace("%", "%%")


def _shown(value: Any) -> str:
    if isinstance(value, (tuple, list)):  # a list of pairs (N-way K-shot settings) as 5-1,5-5
        if value and all(isinstance(v, (tuple, list)) for v in value):
            return ",".join("-".join(_shown(x) for x in v) for v in value)
        return ",".join(_shown(v) for v in value) if value else "none"
    if isinstance(value, float):
        return f"{value:g}"
    return "none" if value is None else str(value)


def _unwrap(hint):
    """``X | None`` -> ``X``; other hints as they are."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint


def _csv(convert):
    def parse(text: str) -> tuple:
        items = [x.strip() for x in text.split(",") if x.strip()]
        try:
            return tuple(convert(x) for x in items)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma list of {convert.__name__} values, got {text!r}") \
                from None
    parse.__name__ = f"list of {convert.__name__}"
    return parse


def _argparse_kwargs(hint, default) -> dict:
    """How argparse reads the field's value from text (its type, nargs or choices)."""
    if typing.get_origin(hint) is typing.Annotated:  # a type with its own text form (N-K pairs): pydantic reads it
        return {"type": str}
    hint = _unwrap(hint)
    origin = typing.get_origin(hint)
    if origin is Literal:
        return {"choices": typing.get_args(hint)}
    if origin is tuple:
        item = next((a for a in typing.get_args(hint) if a is not Ellipsis), str)
        item = _unwrap(item)
        if item is Path:
            return {"type": Path, "nargs": "+", "action": "extend"}
        if item in (int, float, str):
            return {"type": _csv(item), "metavar": "LIST"}
        return {"type": str}
    if hint in (int, float, str, Path):
        return {"type": hint}
    return {"type": str}


def _fields(job_type: type, prefix: str = ""):
    """``(key, field, owner class, type hint)`` of every field, a nested dataclass's by its own."""
    hints = typing.get_type_hints(job_type, include_extras=True)
    for field in dataclasses.fields(job_type):
        if field.name.startswith("_"):
            continue
        hint = hints[field.name]
        if dataclasses.is_dataclass(_unwrap(hint)) and isinstance(_unwrap(hint), type):
            yield from _fields(_unwrap(hint), f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}", field, job_type, hint


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def field_flags(job_type: type) -> list[tuple[str, dict]]:
    """``(key, argparse settings)`` of every field of ``job_type`` that is not one of
    :data:`SPECIAL_FIELDS`: its option, dest, help and type (see the module)."""
    flags = []
    for key, field, owner, hint in _fields(job_type):
        if key in SPECIAL_FIELDS:
            continue
        meta = _meta(field)
        name = meta.get("name") or field.name.replace("_", "-")
        default = _default(field)
        help_text = meta.get("help") or _comment(owner, field.name)
        settings: dict[str, Any] = {}
        if _unwrap(hint) is bool:
            if default is True:
                name = meta.get("name") or f"no-{name}"
                settings = {"action": "store_const", "const": False}
                help_text = help_text.removeprefix("False:").removeprefix("False =").strip()
                help_text = help_text or f"{field.name.replace('_', ' ')}: off"
            else:
                settings = {"action": "store_const", "const": True}
            shown = None
        else:
            settings = _argparse_kwargs(hint, default)
            shown = meta["default"] if meta.get("default") is not None else _shown(default)
        if meta.get("choices"):
            settings["choices"] = tuple(meta["choices"])
        if meta.get("metavar"):
            settings["metavar"] = meta["metavar"]
        elif settings.get("type") is Path:
            settings["metavar"] = "FILE" if settings.get("nargs") else "PATH"
        elif settings.get("type") in METAVARS and "choices" not in settings:
            settings["metavar"] = METAVARS[settings["type"]]
        text = _plain(help_text.rstrip(". "))
        if shown:
            text = f"{text} (default {_plain(shown)})" if text else f"default {_plain(shown)}"
        dest = key.replace(".", "__")
        flags.append((key, {"option": f"--{name}", "dest": dest, "help": text, "aliases": meta.get("aliases", ()),
                            "settings": settings}))
    return flags


def _has(job_type: type, key: str) -> bool:
    return any(f.name == key for f in dataclasses.fields(job_type))


def add_job_arguments(parser: argparse.ArgumentParser, job_type: type, evaluate: bool, *,
                      config_help: str, set_example: str, default_seeds: int | None = None) -> dict[str, str]:
    """The flags of a task command made from its job (see the module), with ``--config`` / ``--set`` /
    ``--print-config`` and the run flags; returns ``{dest: job key}`` of the field flags (what
    :func:`jaket.tasks.config.flag_values` layers). Every flag's default is None (the job's stands)."""
    data = parser.add_argument_group("data")
    settings = parser.add_argument_group("settings (keys of the job: --print-config shows them all)")
    keys: dict[str, str] = {}
    if _has(job_type, "variants"):
        if evaluate:
            settings.add_argument("--variants", type=_csv(str), metavar="LIST",
                                  help="comma list of the variants compared: lm, gnn, lm+g, lm+g+m, jaket "
                                       "(default: those of the task that apply; jaket with --model)")
        else:
            settings.add_argument("--variant", metavar="NAME",
                                  help="the variant fine-tuned: lm, gnn, lm+g, lm+g+m or jaket (default: jaket "
                                       "with --model, else the task's)")
    if _has(job_type, "seeds"):
        count = default_seeds if default_seeds is not None else (5 if evaluate else 1)
        settings.add_argument("--seeds", type=int, metavar="N",
                              help=f"number of seeds: --first-seed .. --first-seed + N - 1 (default {count}, or the "
                                   "job's seeds from --config / --set)")
        settings.add_argument("--first-seed", type=int, default=0, metavar="S",
                              help="first seed (default 0): a table can be built seed by seed in separate runs")
    for key, spec in field_flags(job_type):
        group = data if key.startswith("data.") else settings
        group.add_argument(spec["option"], dest=spec["dest"], default=None, help=spec["help"], **spec["settings"])
        for old in spec["aliases"]:
            deprecated_alias(parser, old, spec["option"])
        keys[spec["dest"]] = key
    if _has(job_type, "bf16"):
        settings.add_argument("--precision", choices=PRECISIONS, default=None,
                              help="bf16 autocast for the encoder's matrix products (weights, optimizer and "
                                   "scores stay fp32), fp32, or auto: bf16 only where the device computes it "
                                   "natively (default fp32, unless --config or --set says otherwise)")
        deprecated_alias(parser, "--bf16", "--precision", store_const="bf16")
    add_config_flags(parser, config_help, set_example)
    run = parser.add_argument_group("run")
    run.add_argument("--out", type=Path, metavar="DIR", help="output folder (default runs/TASK)")
    run.add_argument("--overwrite", action="store_true",
                     help="replace the results of an earlier run in --out (refused otherwise)")
    run.add_argument("--json", action="store_true", help="print metrics.json's summary as JSON on stdout (alone)")
    add_device_argument(run)
    add_log_with_argument(run)
    return keys


def option_of(keys: dict[str, str], parser: argparse.ArgumentParser) -> dict[str, str]:
    """``{job key: its flag}`` of a parser built by :func:`add_job_arguments` (error messages)."""
    by_dest = {a.dest: a.option_strings[0] for a in parser._actions
               if a.option_strings and a.help != argparse.SUPPRESS}
    return {key: by_dest[dest] for dest, key in keys.items() if dest in by_dest}
