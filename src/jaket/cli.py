"""The ``jaket`` command line.

Each subsystem owns its subcommands: a module with ``register(subparsers)`` that adds parsers whose
``func`` attribute is called with the parsed namespace and returns the exit status. This file only
collects them, so the command-line surface grows without one file every part edits; it lists them
in ``jaket --help`` in the order a user meets them (:data:`COMMAND_GROUPS`) and shows every page of
the tree as plain text (:func:`plain_text`: help reuses docstrings).

It is also the one error boundary of every command (:func:`main`): a user error (a bad file, flag,
config, model folder or checkpoint: ``ValueError`` and the project's subclasses of it, such as
:class:`jaket.kg.io.KGFormatError`, and ``OSError``) is printed as one line per problem naming the
file (and line) or flag (``error: ...``; a KG file's problems as ``path:line: problem``, at most
:data:`MAX_LINES`), exit status 1 (2 for a wrong invocation: :class:`jaket.errors.UsageError`,
argparse);
the traceback is shown only with ``--debug``. Training stopped by a signal exits with
``128 + signal``. Any other exception is a bug and keeps its traceback. A command given ``--json``
prints one strict JSON document on stdout and everything else on stderr (:mod:`jaket.output`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys
import traceback

from jaket.version import __version__
from jaket.errors import UsageError
from jaket.kg.errors import KGFormatError
from jaket.output import command_output
from jaket.overrides import apply_flag_config, dump_flag_settings
from jaket.paths import MissingResourceError, allocator_environment, offline_environment, thread_environment

#: modules that contribute subcommands (registered in this order: ``jaket COMMAND`` completion and
#: the usage line list them so)
_SUBCOMMAND_MODULES = (
    "jaket.kg.cli",  # jaket kg ...
    "jaket.tasks.link_cli",  # jaket link
    "jaket.train.cli",  # jaket pretrain
    "jaket.tasks.cli",  # jaket finetune / evaluate
    "jaket.tasks.predict",
    "jaket.model.cli",  # jaket embed
    "jaket.demo",
    "jaket.tasks.reference",  # jaket prepare wordnet-reference
    "jaket.bench.cli",
)
#: ``jaket --help``'s groups, in the order a user meets the commands (docs/cli.md); a command named
#: in no group is listed last under the last group
COMMAND_GROUPS = (
    ("workflow", ("kg", "link", "pretrain", "finetune", "evaluate", "predict", "embed")),
    ("experiments and tools", ("demo", "prepare", "bench")),
)
#: problems printed for one error before "... and N more"
MAX_LINES = 5


def _add_debug(parser: argparse.ArgumentParser, top: bool) -> None:
    """``--debug`` before or after the subcommand (sub-parsers must not reset the top value); and no
    abbreviated flags anywhere (``--dev`` would silently be ``--device`` where a task has no ``--dev``)."""
    parser.allow_abbrev = False
    parser.add_argument("--debug", action="store_true",
                        default=False if top else argparse.SUPPRESS,
                        help="show the Python traceback of an error")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_debug(child, top=False)


class _GroupedCommandsFormatter(argparse.HelpFormatter):
    """``jaket --help``: the commands under the headings of :data:`COMMAND_GROUPS` instead of one
    flat list (argparse has no groups of sub-commands); every other page is argparse's own."""

    def _format_action(self, action):
        if not isinstance(action, argparse._SubParsersAction):
            return super()._format_action(action)
        by_name = {choice.dest: choice for choice in action._get_subactions()}
        groups = [(title, [by_name.pop(n) for n in names if n in by_name]) for title, names in COMMAND_GROUPS]
        groups[-1][1].extend(by_name.values())  # a command no group names is still listed
        parts = []
        for title, choices in groups:
            if not choices:
                continue
            parts.append(f"{' ' * self._current_indent}{title}:\n")
            self._indent()
            parts.extend(super(_GroupedCommandsFormatter, self)._format_action(c) for c in choices)
            self._dedent()
        return self._join_parts(parts)

    def _iter_indented_subactions(self, action):
        if isinstance(action, argparse._SubParsersAction):  # at the indentation _format_action uses
            self._indent()
            yield from action._get_subactions()
            self._dedent()
        else:
            yield from super()._iter_indented_subactions(action)


#: reST markup of the docstrings that argparse pages reuse: ``literal``, :role:`target` (with ``~``:
#: its last part; ``text <target>``: the text) and **strong**
_LITERAL = re.compile(r"``(.+?)``", flags=re.DOTALL)
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`<]*?)\s*(?:<[^`]*>)?`")
_STRONG = re.compile(r"\*\*(.+?)\*\*", flags=re.DOTALL)


def plain_text(text: str | None) -> str | None:
    """``text`` (a docstring reused as help) with its reST markup removed, for the terminal:
    ``literal`` -> literal, :func:`~a.b.c` -> c, :mod:`a.b` -> a.b, **x** -> x."""
    if not text:
        return text

    def role(match: re.Match) -> str:
        tilde, target = match.groups()
        return target.rsplit(".", 1)[-1] if tilde else target

    return _STRONG.sub(r"\1", _LITERAL.sub(r"\1", _ROLE.sub(role, text)))


def _plain_pages(parser: argparse.ArgumentParser) -> None:
    """Every page of the tree in plain text (:func:`plain_text` on descriptions, epilogs and helps)."""
    parser.description = plain_text(parser.description)
    parser.epilog = plain_text(parser.epilog)
    for action in parser._actions:
        if action.help not in (None, argparse.SUPPRESS):
            action.help = plain_text(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._get_subactions():
                choice.help = plain_text(choice.help)
            for child in {id(c): c for c in action.choices.values()}.values():
                _plain_pages(child)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaket",
        description="Joint pre-training of a knowledge graph and a language model (JAKET): import or "
                    "build a KG, link your texts to it, pre-train, fine-tune and predict, embed.",
        epilog="`jaket COMMAND --help` describes a command; docs/cli.md lists every command and the "
               "flag names they share.",
        formatter_class=_GroupedCommandsFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jaket {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(title="commands, in the order a user meets them", dest="command",
                                       metavar="COMMAND")
    commands = parser._action_groups.pop()  # the group add_subparsers made: listed before the options
    parser._action_groups.insert(0, commands)
    for name in _SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    _add_debug(parser, top=True)
    _plain_pages(parser)
    return parser


def _kg_folder_hint(error) -> str:
    """What to run to see every problem of a KGFormatError."""
    from pathlib import Path

    from jaket.kg.io import CORPUS, ENTITIES, RELATIONS, TRIPLES

    folders = {str(Path(p.path).parent) for p in error.problems
               if Path(p.path).name in (ENTITIES, RELATIONS, TRIPLES, CORPUS)}
    if len(folders) == 1:
        return f"`jaket kg validate {folders.pop()}` lists them all"
    return "fix them one by one"


def describe(error: BaseException) -> list[str]:
    """The lines that tell a user what went wrong: ``error: <file or flag>: <problem>``, or, for
    a KG or corpus file, ``path:line: problem`` lines as ``jaket kg validate`` prints them."""
    from jaket.train.rundir import TrainingInterrupted

    if isinstance(error, KeyboardInterrupt):
        return ["interrupted"]
    if isinstance(error, TrainingInterrupted):
        return [str(error)]
    if isinstance(error, KGFormatError):
        errors = [p for p in error.problems if p.is_error] or error.problems
        lines = [str(p) for p in errors[:MAX_LINES]]
        if len(errors) > MAX_LINES:
            lines.append(f"... and {len(errors) - MAX_LINES} more problems ({_kg_folder_hint(error)})")
        return lines or [str(error)]
    if isinstance(error, OSError) and error.filename is not None:
        target = f"{error.filename} -> {error.filename2}" if error.filename2 else str(error.filename)
        return [f"error: {target}: {error.strerror or error}"]
    lines = [line for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
    if len(lines) > MAX_LINES + 1:
        lines = lines[:MAX_LINES + 1] + [f"... and {len(lines) - MAX_LINES - 1} more"]
    if not type(error).__module__.startswith("jaket") and not isinstance(error, OSError):
        lines[-1] += " (--debug shows where)"  # a library's message: the traceback may help
    return [f"error: {line}" for line in lines]


def exit_status(error: BaseException) -> int | None:
    """The exit status of an error that is the user's to fix; ``None`` for a bug."""
    from jaket.train.rundir import TrainingInterrupted

    if isinstance(error, TrainingInterrupted):
        return error.exit_status
    if isinstance(error, KeyboardInterrupt):
        return 130
    if isinstance(error, UsageError):
        return 2
    if isinstance(error, (ValueError, OSError, MissingResourceError)):
        return 1
    return None


def _subcommand_parser(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.ArgumentParser, int]:
    """The deepest subcommand's parser that ``argv`` names (``jaket kg import rdf ...`` -> rdf's) and
    where its own arguments begin in ``argv``."""
    begins = 0
    for k, token in enumerate(argv):
        if token == "--":
            break
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions:
            break
        if token in actions[0].choices:
            parser, begins = actions[0].choices[token], k + 1
        elif not token.startswith("-"):
            break
    return parser, begins


def unknown_flags(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.ArgumentParser, str | None]:
    """The named subcommand's parser and the error for flags it does not have, each with the
    closest flag it has (``--setps (did you mean --steps?)``), or ``None``. Checked before parsing,
    so that a typo is named even where argparse would first complain of a required flag the typo
    was meant to be."""
    import difflib

    leaf, begins = _subcommand_parser(parser, argv)
    known = {option for action in leaf._actions for option in action.option_strings}
    if any(isinstance(a, argparse._SubParsersAction) for a in leaf._actions):
        return leaf, None  # a command group: argparse names the missing subcommand
    visible = sorted(o for a in leaf._actions if a.help is not argparse.SUPPRESS
                     for o in a.option_strings if o.startswith("--"))
    wrong = []
    for token in argv[begins:]:
        if token == "--":
            break
        flag = token.split("=", 1)[0]
        if not flag.startswith("--") or flag in known:
            continue
        close = difflib.get_close_matches(flag, visible, n=2, cutoff=0.6)
        wrong.append(f"{flag} (did you mean {' or '.join(close)}?)" if close else flag)
    if not wrong:
        return leaf, None
    return leaf, f"unrecognized argument{'s' if len(wrong) > 1 else ''}: {', '.join(wrong)}; `{leaf.prog} --help` lists its flags"


def main(argv: list[str] | None = None) -> int:
    offline_environment()
    thread_environment()  # before the subcommand modules import torch
    allocator_environment()
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    leaf, typo = unknown_flags(parser, argv)
    if typo:
        leaf.error(typo)
    args = parser.parse_args(argv)
    try:  # --config FILE / --set KEY=VALUE of a command whose settings are its flags
        args = apply_flag_config(parser, args, argv)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if getattr(args, "_flag_parser", None) is not None and args.print_config:
        print(dump_flag_settings(args), end="")
        return 0
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with command_output(bool(getattr(args, "json", False))):  # --json: stdout is the JSON alone
            return int(args.func(args) or 0)
    except (Exception, KeyboardInterrupt) as error:
        status = exit_status(error)
        if status is None:
            raise
        if args.debug:
            traceback.print_exc()
        for line in describe(error):
            print(line, file=sys.stderr)
        return status


if __name__ == "__main__":
    raise SystemExit(main())
