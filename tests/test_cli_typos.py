"""A mistyped flag (issue 69, item 1): every command of the tree answers a typo of one of its own
flags with its own usage and the flag meant ("did you mean --steps?"), before any other complaint,
exit 2; flags given before the command (``jaket -v ...``) are not taken for typos."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from jaket.cli import main
from tests.test_cli_help import _subcommands, command_tree

_LEAVES = [(path, parser) for path, parser in command_tree() if path and not _subcommands(parser)]


def _typo(flag: str) -> str:
    """``--steps`` -> ``--setps``: two letters of the name swapped."""
    name = flag[2:]
    k = max(1, len(name) // 2 - 1)
    return "--" + name[:k] + name[k + 1] + name[k] + name[k + 2:]


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), \
            pytest.raises(SystemExit) as stop:
        main(argv)
    return stop.value.code, err.getvalue()


@pytest.mark.parametrize("path", [p for p, _ in _LEAVES], ids=[" ".join(p) for p, _ in _LEAVES])
def test_a_typo_of_a_flag_names_the_flag_meant(path):
    parser = dict(_LEAVES)[path]
    flags = [o for a in parser._actions if a.help is not argparse.SUPPRESS for o in a.option_strings
             if o.startswith("--") and len(o) > 6 and o not in ("--debug", "--help")]
    if not flags:
        pytest.skip("no long flag")
    flag = max(flags, key=len)
    wrong = _typo(flag)
    assert wrong != flag
    status, err = _run([*path, wrong, "1"])
    assert status == 2
    assert f"usage: jaket {' '.join(path)}" in err
    assert f"unrecognized argument: {wrong} (did you mean {flag}" in err, err


def test_flags_before_the_command_are_not_typos():
    status, err = _run(["-v", "--debug", "kg", "stats", "--setps", "3"])
    assert status == 2 and "--setps" in err and "-v" not in err.split("error:")[1].replace("--setps", "")
