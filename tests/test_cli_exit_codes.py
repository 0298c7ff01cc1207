"""One exit-code rule across the command tree (issue 69, item 8; docs/cli.md "Exit status"): 2 for
usage and configuration (a config file with a key given twice, from every command that reads one;
a malformed ``--set``), 1 for data and run errors (an input that is missing or malformed)."""

from __future__ import annotations

import contextlib
import io

import pytest

from jaket.cli import main
from tests.test_cli_help import _subcommands, command_tree

_CONFIGURED = [(path, parser) for path, parser in command_tree() if path and not _subcommands(parser)
               and any("--config" in a.option_strings for a in parser._actions)]


def _run(argv: list[str]) -> tuple[int, list[str]]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as stop:
            status = stop.code
    return status, err.getvalue().splitlines()


@pytest.mark.parametrize("path", [p for p, _ in _CONFIGURED], ids=[" ".join(p) for p, _ in _CONFIGURED])
def test_a_config_file_with_a_key_given_twice_is_a_usage_error(path, tmp_path):
    parser = dict(_CONFIGURED)[path]
    config = tmp_path / "twice.yaml"
    config.write_text("steps: 3\nsteps: 4\n", encoding="utf-8")
    required = [flag for a in parser._actions if a.required and a.option_strings
                for flag in (a.option_strings[0], str(tmp_path / "unread"))]
    required += [flag for group in parser._mutually_exclusive_groups if group.required
                 for flag in (group._group_actions[0].option_strings[0], str(tmp_path / "unread"))]
    status, err = _run([*path, *required, "--config", str(config)])
    assert (status, err[-1:]) == (2, [f"error: {config}:2: key 'steps' given twice (first at line 1)"])
    status, err = _run([*path, *required, "--set", "steps"])
    assert (status, err[-1:]) == (2, ["error: --set steps: expected KEY=VALUE"])


def test_a_missing_or_malformed_input_is_a_data_error(tmp_path):
    missing = tmp_path / "missing"
    bad_kg = tmp_path / "kg"
    bad_kg.mkdir()
    (bad_kg / "entities.jsonl").write_text('{"id": "a", "name": "A"}\n', encoding="utf-8")
    (bad_kg / "relations.jsonl").write_text('{"id": "r", "name": "R"}\n', encoding="utf-8")
    (bad_kg / "triples.tsv").write_text("a\tr\n", encoding="utf-8")
    for argv in (["pretrain", "--kg", str(missing), "--out", str(tmp_path / "o1")],
                 ["kg", "stats", str(missing)],
                 ["kg", "validate", str(bad_kg)],
                 ["finetune", "entity-classification", "--kg", str(bad_kg), "--out", str(tmp_path / "o2")],
                 ["link", "--kg", str(bad_kg), "--texts", str(missing), "--out", str(tmp_path / "o3.jsonl")],
                 ["evaluate", "kgqa", "--data", str(missing), "--out", str(tmp_path / "o4")],
                 ["predict", "kgqa", "--finetuned", str(missing), "--questions", str(missing)]):
        status, err = _run(argv)
        assert status == 1, (argv, err)
        assert err and str(tmp_path) in err[-1], (argv, err)
