"""Hints in today's vocabulary (issue 69, item 5): every command a message of the library suggests
(``jaket predict TASK --finetuned DIR ...`` in an f-string, a log line, an error) is parsed against
the current command tree: its words name a command, each of its flags is one that command has, and
none is a deprecated alias (the spelling that prints a deprecation warning)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from jaket.cli import _subcommand_parser, build_parser
from jaket.flags import _DeprecatedAlias

SRC = Path(__file__).resolve().parents[1] / "src" / "jaket"


def _messages() -> list[tuple[str, str]]:
    """``(where, text)`` of every string constant and f-string part in the package, docstrings
    left out (they describe, they do not suggest)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{X}" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value
            else:
                continue
            if "jaket " in text:
                found.append((f"{path.relative_to(SRC)}:{node.lineno}", text))
    return found


def _suggestions() -> list[tuple[str, list[str]]]:
    commands = []
    for where, text in _messages():
        for match in re.finditer(r"\bjaket ([^`'\")\n;]*)", text):
            command = match.group(0).strip()
            words = command.split()[1:]
            if not words or words[0] in ("COMMAND", "{X}", "..."):
                continue
            commands.append((where, words))
    return commands


def _leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` itself, or where a placeholder stands for its subcommand (``jaket kg import {X}``)
    every command below it."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [parser]
    return [leaf for child in groups[0].choices.values() for leaf in _leaves(child)]


def test_every_suggested_command_parses_with_todays_flags():
    parser = build_parser()
    top = {c for a in parser._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices}
    suggestions = _suggestions()
    assert len(suggestions) > 20  # the scan finds the library's hints
    checked = 0
    for where, words in suggestions:
        if words[0] not in top:
            continue  # prose that happens to start with "jaket" ("jaket reads ...")
        words = [w for w in words if w != "..."]
        leaf, begins = _subcommand_parser(parser, words)
        by_name = {o: a for p in _leaves(leaf) for a in p._actions for o in a.option_strings}
        for word in words[begins:]:
            flag = word.split("=", 1)[0].rstrip(",.")
            if not re.fullmatch(r"--[a-z][a-z0-9-]*", flag):
                continue
            assert flag in by_name, f"{where}: `jaket {' '.join(words)}`: {leaf.prog} has no {flag}"
            assert not isinstance(by_name[flag], _DeprecatedAlias), \
                f"{where}: `jaket {' '.join(words)}` suggests the deprecated {flag}"
            checked += 1
    assert checked > 20
