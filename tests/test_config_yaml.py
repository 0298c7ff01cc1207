"""Issue #40, item 1: every config file (``jaket pretrain --config`` and every task's ``--config``) is
read by one YAML loader, which refuses a key given twice in one mapping, at any depth, as one
``FILE:LINE: key 'K' given twice (first at line N)`` line (plain YAML keeps the last value
silently); ``--set`` of a key the file sets stays an override."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaket.cli import build_parser, main
from jaket.overrides import read_yaml_mapping


def _config_commands() -> list[list[str]]:
    """Every command that reads ``--config FILE``, found in the parser itself (a task added later is
    covered too), each with a placeholder for its required arguments."""
    found = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subcommands:
            for name, child in action.choices.items():
                walk(child, words + [name])
        if subcommands or not any("--config" in a.option_strings for a in parser._actions):
            return
        argv = list(words)
        for action in parser._actions:
            if action.required and action.option_strings:
                argv += [action.option_strings[0], "placeholder"]
            elif action.required or (not action.option_strings and action.nargs is None):
                argv.append("placeholder")
        for group in parser._mutually_exclusive_groups:  # e.g. predict's --finetuned (its old name counts)
            if group.required:
                argv += [group._group_actions[0].option_strings[0], "placeholder"]
        found.append(argv)

    walk(build_parser(), [])
    return found


COMMANDS = _config_commands()


def test_every_config_reader_is_found():
    names = {" ".join(w for w in argv if w != "placeholder" and not w.startswith("--")) for argv in COMMANDS}
    assert {"pretrain", "finetune entity-classification", "evaluate entity-classification",
            "finetune word-in-context", "finetune link-prediction", "finetune kgqa",
            "finetune relation-classification", "evaluate sense-linking", "predict entity-classification",
            "predict link-prediction", "predict kgqa", "predict relation-classification",
            "predict word-in-context"} <= names


def _errors(capsys, argv: list[str]) -> tuple[int, list[str]]:
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, [line for line in err.splitlines() if not line.startswith(("INFO", "WARNING"))]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: "-".join(w for w in argv if w != "placeholder"))
def test_a_model_section_given_twice_is_refused_by_every_reader(argv, tmp_path, capsys):
    config = tmp_path / "twice.yaml"
    config.write_text("model:\n  km_heads: 2\nseed: 1\nmodel:\n  km_layers: 1\n")
    status, err = _errors(capsys, argv + ["--config", str(config), "--print-config"])
    assert status in (1, 2)
    assert err == [f"error: {config}:4: key 'model' given twice (first at line 1)"]


def test_a_key_the_file_sets_may_be_set_again_with_set(tmp_path, capsys):
    config = tmp_path / "once.yaml"
    config.write_text("model:\n  km_heads: 2\n")
    assert main(["pretrain", "--config", str(config), "--set", "model.km_heads=4", "--print-config"]) == 0
    assert "km_heads: 4" in capsys.readouterr().out
    status, err = _errors(capsys, ["pretrain", "--set", "model={km_heads: 2, km_heads: 4}", "--print-config"])
    assert status == 2 and err == ["error: --set model={km_heads: 2, km_heads: 4}: key 'km_heads' given twice "
                                   "(first at line 1)"]


def test_what_yaml_means_stays_accepted(tmp_path):
    """A merge (``<<: *base``) may be overridden; a key repeated in two mappings is two keys."""
    from jaket.overrides import load_yaml  # the one loader (new with issue #40)

    assert load_yaml("base: &b {x: 1, y: 2}\nrun:\n  <<: *b\n  x: 3\nother: {x: 1}\n") == {
        "base": {"x": 1, "y": 2}, "run": {"x": 3, "y": 2}, "other": {"x": 1}}
    config = tmp_path / "c.yaml"
    config.write_text("a: 1\n1: 2\n1.0: 3\n")  # Python holds 1 and 1.0 as one key: the last would win
    with pytest.raises(ValueError, match=f"^{config}:3: key '1.0' given twice \\(first at line 2\\)$"):
        read_yaml_mapping(config)


def test_a_text_setting_given_another_yaml_type_is_one_line(tmp_path, capsys):
    """A flag config's key whose flag takes text (``--device``) refuses a number, a list or a
    mapping where it was given, instead of handing it to the command."""
    argv = ["predict", "entity-classification", "--finetuned", "m", "--kg", "k", "--all", "--print-config"]
    status, err = _errors(capsys, argv + ["--set", "device=5"])
    assert status == 2 and err == ["error: --set device=5: device: expected text (a value for --device), got 5"]
    config = tmp_path / "c.yaml"
    config.write_text("top_k: 2\ndevice: [cpu]\n")
    status, err = _errors(capsys, argv + ["--config", str(config)])
    assert status == 2 and err == [f"error: {config}:2: device: expected text (a value for --device), got ['cpu']"]
    assert main(argv + ["--set", "device='5'"]) == 0 and "device: '5'" in capsys.readouterr().out


# ------------------------------------------------------------------------------ the property

KEYS = ["model", "km_heads", "km_layers", "steps", "seed", "data", "path", "tasks", "lr", "a", "b"]
SCALARS = (st.integers(-5, 10**6) | st.booleans() | st.sampled_from(["x", "a b", "1e-5", "", "true", "k: v"])
           | st.lists(st.integers(0, 9), max_size=3))
TREES = st.recursive(SCALARS, lambda inner: st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=4),
                     max_leaves=12)


class Pairs(list):
    """A YAML mapping as its (key, value) pairs in order (a key may repeat), block or flow style."""

    flow = False


@st.composite
def _repeated_key_config(draw) -> tuple[str, str, int, int]:
    """``(yaml text, the key given twice, its line, the first one's line)``: a config of nested
    mappings (block or flow style) with one key given twice in one mapping, at any depth."""
    root = draw(st.dictionaries(st.sampled_from(KEYS), TREES, min_size=1, max_size=4))
    mappings: list[Pairs] = []

    def as_pairs(value, top: bool = False):
        if not isinstance(value, dict):
            return value
        pairs = Pairs((key, as_pairs(child)) for key, child in value.items())
        pairs.flow = not top and draw(st.booleans())
        mappings.append(pairs)
        return pairs

    document = as_pairs(root, top=True)
    target = draw(st.sampled_from(mappings))
    first = draw(st.integers(0, len(target) - 1))
    key = target[first][0]
    target.insert(draw(st.integers(first + 1, len(target))), (key, as_pairs(draw(TREES))))
    lines: list[str] = []
    where: dict[tuple[int, int], int] = {}

    def flow(value, line: int) -> str:
        if isinstance(value, Pairs):
            for index in range(len(value)):
                where[id(value), index] = line
            return "{" + ", ".join(f"{k}: {flow(v, line)}" for k, v in value) + "}"
        return json.dumps(value)

    def block(pairs: Pairs, indent: int) -> None:
        for index, (k, v) in enumerate(pairs):
            where[id(pairs), index] = len(lines) + 1
            if isinstance(v, Pairs) and not v.flow:
                lines.append(f"{' ' * indent}{k}:")
                block(v, indent + 2)
            else:
                lines.append(f"{' ' * indent}{k}: {flow(v, len(lines) + 1)}")

    block(document, 0)
    indices = [i for i, (k, _) in enumerate(target) if k == key]
    return "\n".join(lines) + "\n", key, where[id(target), indices[1]], where[id(target), indices[0]]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("configs")


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: "-".join(w for w in argv if w != "placeholder"))
@settings(max_examples=12, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_repeated_key_config())
def test_every_config_reader_names_a_repeated_key_in_one_line(argv, case, folder, capsys):
    text, key, line, first = case
    config = folder / "generated.yaml"
    config.write_text(text, encoding="utf-8")
    status, err = _errors(capsys, argv + ["--config", str(config), "--print-config"])
    assert status in (1, 2), text
    assert err == [f"error: {config}:{line}: key '{key}' given twice (first at line {first})"], text
