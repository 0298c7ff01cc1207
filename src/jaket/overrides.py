"""Settings from a YAML file and ``--set key=value`` overrides: the one machinery every command uses.

Pre-training (:mod:`jaket.train.config`), the tasks' typed jobs (:mod:`jaket.tasks.config`) and
the flag configs of the other commands (:func:`apply_flag_config`) all layer their settings the
same way: defaults < the YAML file of ``--config FILE`` < ``--set key=value`` (values parsed as
YAML, ``a.b=value`` for nested keys) < the command's own flags. A bad value is reported where it
was given: ``FILE:LINE: key: message`` for the file, ``--set key=value: key: message`` for an
override, ``--flag value: key: message`` for a flag. Every config file and ``--set`` value is read
by one YAML loader (:func:`load_yaml`): PyYAML's safe loader refusing a key given twice in one
mapping, at any depth (plain YAML keeps the last value silently), as the JSON readers do
(:mod:`jaket.jsonio`); ``--set`` of a key the file sets is an override, not a repeat.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from jaket.errors import UsageError
from jaket.fields import error_text
from jaket.jsonio import quote, wide_encoding


class ConfigFileError(UsageError):
    """A config file cannot be read as a YAML mapping: ``path:line: problem`` (a usage error: exit
    status 2, docs/cli.md "Exit status")."""


class RepeatedKeyError(yaml.YAMLError):
    """A mapping of a YAML text gives a key twice; ``line`` and ``first`` are 1-based lines."""

    def __init__(self, key: str, line: int, first: int):
        super().__init__(f"key {quote(key)} given twice (first at line {first})")
        self.line, self.first = line, first


class _ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (:class:`RepeatedKeyError`).
    Keys that Python holds as one (``1``, ``1.0`` and ``true``) are the same key; a key that a merge
    (``<<: *base``) brings may be set again, as YAML means it to be."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise RepeatedKeyError(str(key_node.value), line, seen[key])
                    seen[key] = line
                except TypeError:  # an unhashable key: the safe loader names it
                    continue
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """The value of a YAML text (safe types only), refusing a key given twice in one mapping
    (:class:`RepeatedKeyError`); other problems are PyYAML's ``YAMLError``."""
    return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader: plain data, no Python objects


def read_yaml_mapping(path: Path) -> dict:
    """The top-level mapping of a YAML config file (``path:line: message`` on any problem, a key
    given twice included)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise ConfigFileError(f"{path}: cannot read the config: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        if wide_encoding(raw):
            raise ConfigFileError(f"{path}:1: {wide_encoding(raw)}") from None
        line = raw[:error.start].count(b"\n") + 1
        raise ConfigFileError(f"{path}:{line}: not UTF-8 text (byte {error.start} of the file)") from None
    try:
        loaded = load_yaml(text)
    except RepeatedKeyError as error:
        raise ConfigFileError(f"{path}:{error.line}: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigFileError(f"{path}:{mark.line + 1 if mark else 1}: invalid YAML: {problem}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigFileError(f"{path}:1: expected a mapping (key: value lines) at the top level")
    return loaded


def set_value(data: dict, key: str, value: Any, origin: str) -> None:
    """Set ``data[a][b][c] = value`` for ``key = "a.b.c"`` (sections created as needed)."""
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"{origin}: {part!r} is not a section (it holds a value)")
    node[parts[-1]] = value


def parse_override(item: str) -> tuple[str, Any]:
    """``"a.b=value"`` -> ``("a.b", value parsed as YAML)``."""
    if "=" not in item:
        raise UsageError(f"--set {item}: expected KEY=VALUE")
    key, value = item.split("=", 1)
    try:
        return key.strip(), load_yaml(value)
    except RepeatedKeyError as error:
        raise UsageError(f"--set {item}: {error}") from None
    except yaml.YAMLError as error:
        raise UsageError(f"--set {item}: invalid YAML value: {error}") from None


def apply_overrides(data: dict, overrides: list[str], moved: dict[str, str] | None = None) -> dict:
    """Apply ``a.b.c=value`` overrides (values parsed as YAML) to a nested dict in place; a key of
    ``moved`` is set at its new place."""
    for item in overrides:
        key, parsed = parse_override(item)
        set_value(data, (moved or {}).get(key, key), parsed, f"--set {item}")
    return data


def layer_overrides(data: dict, overrides: list[str] | None, values: dict[str, Any] | None,
                    value_origin=lambda key, value: f"{key}={value}",
                    moved: dict[str, str] | None = None) -> dict[str, str]:
    """Apply ``overrides`` (``"a.b=value"``; a key of ``moved`` at its new place), then ``values``
    (``{"a.b": value}``) to ``data`` in place; returns the origin of each key set (``--set
    a.b=value``, or ``value_origin(key, value)``) for the error messages of :func:`describe_error`."""
    origins: dict[str, str] = {}
    for item in overrides or []:
        key = item.split("=", 1)[0].strip()
        origins[(moved or {}).get(key, key)] = f"--set {item}"
    apply_overrides(data, list(overrides or []), moved)
    for key, value in (values or {}).items():
        key = (moved or {}).get(key, key)
        set_value(data, key, value, key)
        origins[key] = value_origin(key, value)
    return origins


def yaml_line(path: Path, loc: tuple) -> int | None:
    """The line of ``path`` holding the key at ``loc`` (or its deepest existing parent)."""
    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    line = None
    for part in loc:
        if not isinstance(node, yaml.MappingNode):
            break
        for key, value in node.value:
            if key.value == str(part):
                line = key.start_mark.line + 1
                node = value
                break
        else:
            break
    return line


def describe_error(error: dict, path: Path | None, origins: dict[str, str]) -> tuple[tuple, str]:
    """A pydantic-style error (``loc``, ``msg``) located where its value was given:
    ``(sort key: the file's problems in line order, then the flags'), "where: key: problem"``."""
    loc = tuple(str(p) for p in error["loc"])
    key = ".".join(loc)
    message = error_text(error)
    for depth in range(len(loc), 0, -1):
        origin = origins.get(".".join(loc[:depth]))
        if origin:
            return (1, 0), f"{origin}: {key}: {message}"
    if path is not None:
        line = yaml_line(path, loc)
        if line is not None:
            return (0, line), f"{path}:{line}: {key}: {message}"
        return (0, 0), f"{path}: {key or '<config>'}: {message}"
    return (2, 0), f"{key or '<config>'}: {message}"


# ----------------------------------------------------------------------------- flag configs

#: destinations of the config flags themselves and of argparse's bookkeeping: never config keys
_NOT_KEYS = {"help", "config", "overrides", "print_config", "func", "evaluate", "debug", "command", "task",
             "_flag_parser"}


def add_config_flags(parser: argparse.ArgumentParser, config_help: str, set_example: str) -> None:
    """``--config FILE``, ``--set KEY=VALUE`` (repeatable, into ``overrides``) and ``--print-config``:
    the three flags of every command whose settings layer (pre-training, the tasks' jobs and
    :func:`add_config_arguments`'s flag configs)."""
    parser.add_argument("--config", type=Path, metavar="FILE", help=config_help)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a setting (value parsed as YAML), e.g. {set_example}")
    parser.add_argument("--print-config", action="store_true", help="print the resolved settings as YAML and exit")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """:func:`add_config_flags` for a command whose settings are its flags: a key is a flag's name
    (``top_k`` or ``top-k``), a value what the flag takes (a list for a list flag); flags given on
    the command line win. :func:`apply_flag_config` applies them (``jaket``'s entry point calls it
    before the command runs)."""
    add_config_flags(parser, "YAML file of this command's settings: its flags' names as keys (flags given win)",
                     "--set top_k=3")
    parser.set_defaults(_flag_parser=parser)


def _flag_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {action.dest: action for action in parser._actions
            if action.dest not in _NOT_KEYS and action.dest != argparse.SUPPRESS and action.option_strings}


def _convert(action: argparse.Action, value: Any, where: str) -> Any:
    """A config value as the flag would have parsed it (its ``type`` applied to text), checked."""
    key = action.dest
    if isinstance(action, argparse._StoreConstAction):  # store_true / store_false / store_const: the key
        if not isinstance(value, bool):  # is the flag's destination, the value what it holds
            raise ValueError(f"{where}: {key}: expected true or false, got {value!r}")
        return value
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
        items = value if isinstance(value, list) else [value]
        return [_convert_one(action, item, where) for item in items]
    if value is None:
        return None
    if isinstance(value, list) and action.type is not None:  # a comma-list flag given as a YAML list
        value = ",".join(str(v) for v in value)
    return _convert_one(action, value, where)


def _convert_one(action: argparse.Action, value: Any, where: str) -> Any:
    key = action.dest
    converted = value
    if action.type is not None and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            converted = action.type(str(value))  # as the flag would parse the same text
        except (ValueError, TypeError, argparse.ArgumentTypeError) as error:
            raise ValueError(f"{where}: {key}: {error}") from None
    elif action.type is not None and not isinstance(value, (str, int, float)):
        raise ValueError(f"{where}: {key}: expected a value for --{key.replace('_', '-')}, got {value!r}")
    elif action.type is None and action.choices is None and not isinstance(value, str):  # the flag takes text
        raise ValueError(f"{where}: {key}: expected text (a value for --{key.replace('_', '-')}), got {value!r}")
    if action.choices is not None and converted not in action.choices:
        raise ValueError(f"{where}: {key}: must be one of {', '.join(map(str, action.choices))}, got {value!r}")
    return converted


def apply_flag_config(root: argparse.ArgumentParser, args: argparse.Namespace,
                      argv: list[str] | None) -> argparse.Namespace:
    """The namespace of ``argv`` with the command's ``--config`` file and ``--set`` overrides as
    its flags' defaults (so the flags given on the command line win), every value checked as the
    flag checks it; unchanged for a command without :func:`add_config_arguments`."""
    parser = getattr(args, "_flag_parser", None)
    if parser is None or (args.config is None and not args.overrides):
        return args
    actions = _flag_actions(parser)
    layered: dict[str, tuple[Any, str]] = {}
    if args.config is not None:
        for key, value in read_yaml_mapping(args.config).items():
            line = yaml_line(args.config, (key,))
            layered[str(key).replace("-", "_")] = (value, f"{args.config}:{line or 1}")
    for item in args.overrides:
        key, value = parse_override(item)
        layered[key.replace("-", "_")] = (value, f"--set {item}")
    defaults = {}
    for key, (value, where) in layered.items():
        if key not in actions:
            raise UsageError(f"{where}: {key}: unknown setting; the settings are: {', '.join(sorted(actions))}")
        defaults[key] = _convert(actions[key], value, where)
    parser.set_defaults(**defaults)
    return root.parse_args(argv)


def flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The resolved settings of a command with :func:`add_config_arguments`, as ``--print-config``
    prints them (paths as text, tuples as lists)."""
    actions = _flag_actions(args._flag_parser)

    def plain(value):
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return {key: plain(getattr(args, key, None)) for key in actions}


def dump_flag_settings(args: argparse.Namespace) -> str:
    """:func:`flag_settings` as YAML (a file ``--config`` reads back)."""
    return yaml.safe_dump(flag_settings(args), sort_keys=False, allow_unicode=True)


def dotted_settings(settings: Mapping, prefix: str = "", flat: dict[str, Any] | None = None,
            spelled: dict[str, str] | None = None, written: str = "") -> dict[str, Any]:
    """``{"data": {"kg": x}}`` and ``{"data__kg": x}`` both as ``{"data.kg": x}``; a key given
    twice (the two spellings side by side) is a ``ValueError``, a key that is not text a ``TypeError``.
    ``spelled``: filled with each key as the caller wrote it (``data__kg``, ``data['kg']``)."""
    flat = {} if flat is None else flat
    spelled = {} if spelled is None else spelled
    for key, value in settings.items():
        if not isinstance(key, str):
            raise TypeError(f"setting {prefix}{key!r}: a setting's name must be a string")
        name = prefix + key.replace("__", ".")
        as_written = f"{written}[{key!r}]" if written else key
        if isinstance(value, Mapping):
            dotted_settings(value, name + ".", flat, spelled, as_written)
        elif name in flat:
            raise ValueError(f"{name}: given twice (as a nested dict and with __); give it once")
        else:
            flat[name] = value
            spelled[name] = as_written
    return flat
