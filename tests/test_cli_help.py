"""The command tree's help and its vocabulary (docs/cli.md).

* Every page of the tree renders: the test walks ``jaket.cli.build_parser()`` itself, recursing into
  every sub-command action (commands, tasks, predict tasks, kg import formats, benchmarks ...), so a
  page added later is covered without being listed here; each ``--help`` must exit 0 with plain,
  non-empty text (no reST double backticks).
* ``jaket --help`` lists the commands in the order a user meets them, in two groups.
* One name per concept: the table of docs/cli.md is read from the page, and no old name of its
  "old" column is a visible flag anywhere in the tree, while each old name that is still accepted
  prints exactly one deprecation line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from pathlib import Path

import pytest

from jaket.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]
CLI_DOC = REPO / "docs" / "cli.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's sub-command parsers, by name (aliases left out: they share a parser)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) not in seen:
                    seen.add(id(child))
                    found[name] = child
    return found


def command_tree() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the tree with the words that reach it (``()`` for ``jaket`` itself)."""
    pages: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        pages.append((path, parser))
        for name, child in _subcommands(parser).items():
            walk(path + (name,), child)

    walk((), build_parser())
    return pages


_PAGES = [path for path, _ in command_tree()]


def _help(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        main(argv + ["--help"])
    assert stop.value.code == 0, (argv, err.getvalue())
    return out.getvalue()


def test_the_walk_reaches_every_level_of_the_tree():
    """The walk is not vacuous: it reaches the commands, their tasks, the predict tasks, the import
    formats and the benchmarks (each found by the walk, not listed by it)."""
    pages = set(_PAGES)
    assert {("kg", "import", "owl"), ("predict", "kgqa"), ("finetune", "entity-classification"),
            ("bench", "sampler"), ("prepare", "wordnet-reference"), ("link",), ("demo",)} <= pages
    assert len(pages) == len(_PAGES) > 30


@pytest.mark.parametrize("path", _PAGES, ids=lambda p: " ".join(p) or "jaket")
def test_every_help_page_renders_as_plain_text(path):
    text = _help(list(path))
    assert text.strip(), path
    assert text.startswith("usage: jaket"), text[:200]
    assert "``" not in text, f"jaket {' '.join(path)} --help shows reST markup: " + \
        next(line for line in text.splitlines() if "``" in line)
    assert "Traceback" not in text


# ----------------------------------------------------------------------------- jaket --help

WORKFLOW = ["kg", "link", "pretrain", "finetune", "evaluate", "predict", "embed"]
TOOLS = ["demo", "prepare", "bench"]


def test_top_level_help_lists_commands_in_workflow_order_then_the_tools():
    text = _help([])
    workflow_at = text.index("workflow")
    tools_at = text.index("experiments and tools")
    assert workflow_at < tools_at

    def position(command: str) -> int:
        found = re.search(rf"^\s+{re.escape(command)}\s", text, flags=re.MULTILINE)
        assert found, f"{command} is not listed in jaket --help"
        return found.start()

    places = [position(c) for c in WORKFLOW]
    assert places == sorted(places) and workflow_at < places[0] and places[-1] < tools_at
    assert all(position(c) > tools_at for c in TOOLS)
    listed = set(re.findall(r"^    ([a-z][a-z-]+)\s", text, flags=re.MULTILINE))
    assert listed >= set(_subcommands(build_parser())), "a command is missing from jaket --help"


def test_a_commands_own_help_is_unchanged_by_the_grouping():
    """The groups are the top page's: ``jaket link --help`` is argparse's usual page."""
    text = _help(["link"])
    assert text.startswith("usage: jaket link") and "experiments and tools" not in text


# ----------------------------------------------------------------------------- one vocabulary


def _spellings(cell: str) -> list[tuple[tuple[str, ...], str]]:
    """The flags a cell writes in backticks, each with the command words before it: `link --text`
    -> (("link",), "--text"); `--bf16` -> ((), "--bf16") (every command); placeholders (TASK) and
    "jaket" left out."""
    found = []
    for chunk in re.findall(r"`([^`]+)`", cell):
        words = chunk.split()
        flags = [i for i, w in enumerate(words) if w.startswith("--")]
        if flags:
            command = tuple(w for w in words[:flags[0]] if w != "jaket" and w.islower())
            found.append((command, words[flags[0]]))
    return found


def vocabulary() -> list[dict]:
    """The rows of docs/cli.md's vocabulary table: ``{"concept", "names", "old"}``, ``names`` the
    flags of the second column, ``old`` those of the last with the commands they belong to."""
    text = CLI_DOC.read_text(encoding="utf-8")
    section = text.split("## The vocabulary", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] == "concept" or set(cells[0]) <= set("-: "):
            continue
        rows.append({"concept": cells[0], "names": [flag for _, flag in _spellings(cells[1])],
                     "where": re.findall(r"[a-z][a-z-]*", re.sub(r"`[^`]*`", "", cells[2])),
                     "old": _spellings(cells[3])})
    return rows


def _visible_and_hidden() -> tuple[dict[str, set[tuple[str, ...]]], dict[str, set[tuple[str, ...]]]]:
    """Every flag of every command: visible (in its --help) and hidden, each -> the pages that have it."""
    visible: dict[str, set[tuple[str, ...]]] = {}
    hidden: dict[str, set[tuple[str, ...]]] = {}
    for path, parser in command_tree():
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--"):
                    target = hidden if action.help == argparse.SUPPRESS else visible
                    target.setdefault(option, set()).add(path)
    return visible, hidden


def test_the_vocabulary_table_is_read():
    rows = vocabulary()
    assert len(rows) >= 15
    assert {"link", "embed"} <= set(next(r for r in rows if "--texts" in r["names"])["where"])
    names = {name for row in rows for name in row["names"]}
    assert {"--model", "--finetuned", "--texts", "--batch-size", "--steps", "--epochs", "--fanouts", "--precision",
            "--seed", "--seeds", "--first-seed", "--data-seed", "--heldout-fraction", "--out", "--json"} <= names
    assert {(("link",), "--text"), (("embed",), "--text-batch-size"), ((), "--km-fanout"), ((), "--bf16"),
            ((), "--split-seed"), (("pretrain",), "--model"), (("predict",), "--model")} <= \
        {old for row in rows for old in row["old"]}


def test_no_old_name_is_visible_anywhere_and_every_one_name_exists():
    """One name per concept: an old spelling of docs/cli.md's table shows in no --help of the
    commands it belonged to (it may live on as a hidden alias), every name the table gives is a
    visible flag, and each command its "where" column names has one of the row's names."""
    visible, _ = _visible_and_hidden()
    commands = set(_subcommands(build_parser()))
    problems = []
    for row in vocabulary():
        for command, old in row["old"]:
            pages = sorted(" ".join(page) for page in visible.get(old, ()) if page[:len(command)] == command)
            if pages:
                problems.append(f"{' '.join(command + (old,))} ({row['concept']}) is visible in: {', '.join(pages)}")
        for name in row["names"]:
            if name not in visible:
                problems.append(f"{name} ({row['concept']}) is no visible flag of any command")
        for command in set(row["where"]) & commands:  # the commands the "where" column names
            if not any(page[0] == command for name in row["names"] for page in visible.get(name, ())):
                problems.append(f"jaket {command} has none of {', '.join(row['names'])} ({row['concept']})")
    assert not problems, "\n".join(problems)


def test_an_old_spelling_still_accepted_is_hidden():
    """Each deprecated alias the tree holds is hidden, and is the old name of a visible flag of its page."""
    for path, parser in command_tree():
        for action in parser._actions:
            if type(action).__name__ == "_DeprecatedAlias":
                assert action.help == argparse.SUPPRESS, (path, action.option_strings)
                target = next(a for a in parser._actions if action.new in a.option_strings)
                assert target.help != argparse.SUPPRESS and target.dest == action.dest, (path, action.new)


def test_the_command_list_of_docs_cli_follows_jaket_help():
    """docs/cli.md lists every command, in the order and groups of `jaket --help`."""
    text = CLI_DOC.read_text(encoding="utf-8").split("## The commands", 1)[1].split("\n## ", 1)[0]
    documented = list(dict.fromkeys(re.findall(r"^\| `jaket ([a-z-]+)", text, flags=re.MULTILINE)))
    listed = re.findall(r"^    ([a-z][a-z-]+)\s", _help([]), flags=re.MULTILINE)
    assert documented == listed


#: (command, old spelling and value, new spelling and value, destination): each alias of the
#: commands named here, parsed both ways
ALIASES = [
    (["link", "--kg", "K", "--out", "O"], ["--text", "t.txt"], ["--texts", "t.txt"], "texts"),
    (["embed", "--model", "M", "--kg", "K", "--out", "O", "--texts", "t.txt"], ["--text-batch-size", "7"],
     ["--batch-size", "7"], "batch_size"),
    (["demo"], ["--pretrain-steps", "9"], ["--steps", "9"], "pretrain_steps"),
    (["pretrain"], ["--bf16"], ["--precision", "bf16"], "precision"),
    (["pretrain"], ["--model", "enc"], ["--encoder", "enc"], "encoder"),
    (["prepare", "wordnet-reference"], ["--seed", "3"], ["--data-seed", "3"], "data_seed"),
    (["kg", "build", "wordnet", "--out", "O"], ["--seed", "3"], ["--data-seed", "3"], "data_seed"),
]


@pytest.mark.parametrize("command,old,new,dest", ALIASES, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_old_spelling_reaches_the_new_flags_destination_with_one_warning(command, old, new, dest, capsys):
    parser = build_parser()
    by_new = parser.parse_args(command + new)
    assert capsys.readouterr().err == ""
    by_old = parser.parse_args(command + old)
    err = capsys.readouterr().err
    assert getattr(by_old, dest) == getattr(by_new, dest)
    assert err.splitlines() == [f"warning: {old[0]} is deprecated; use {new[0]}"]


def test_plain_text_removes_the_rest_markup_of_docstrings():
    from jaket.cli import plain_text

    assert plain_text("``jaket link`` reads :func:`~jaket.kg.io.load_kg` and :mod:`jaket.kg.linking`; "
                      "**Eq. 7** via :class:`the memory <jaket.model.memory.EntityContextMemory>`") == \
        "jaket link reads load_kg and jaket.kg.linking; Eq. 7 via the memory"
    assert plain_text("50% of `x`") == "50% of `x`" and plain_text(None) is None
