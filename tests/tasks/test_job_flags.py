"""The task commands' flags are made from the typed jobs (jaket.tasks.job_flags): every job field is
exactly one flag and every flag one field, one field name is one flag name across every task, the old
spellings are hidden aliases that print one line, the help pages render as plain text, and the same
job spelled with old or new flags prints the same config; ``pipeline()`` and the command refuse a bad
job with the same problem, each naming it as its caller wrote it; ``tasks/`` has no upward import."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import typing
from pathlib import Path

import pytest
import yaml

from jaket.cli import build_parser, main
from jaket.tasks.job_flags import RUN_FLAGS, SPECIAL_FIELDS
from jaket.tasks.registry import TASKS

#: the flags every task command spells alike for a special job field (not "field name = flag name")
SPECIAL_FLAGS = {"--variant": "variants", "--variants": "variants", "--seeds": "seeds", "--precision": "bf16"}

COMMANDS = sorted((command, name) for name, spec in TASKS.items() for command in spec.commands)


def _parser(command: str, task: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in (command, task):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _job_keys(job_type: type, prefix: str = "") -> set[str]:
    """Every field of a job, a nested section's by its dotted key (walked here, not by the generator)."""
    keys = set()
    hints = typing.get_type_hints(job_type)
    for field in dataclasses.fields(job_type):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            keys |= _job_keys(hint, f"{prefix}{field.name}.")
        elif not field.name.startswith("_"):
            keys.add(prefix + field.name)
    return keys


def _visible(parser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS
            and not {"-h", "--help", "--debug"} & set(a.option_strings)]


@pytest.mark.parametrize("command,task", COMMANDS, ids=str)
def test_each_job_field_has_exactly_one_flag_and_each_flag_one_field(command, task):
    spec = TASKS[task]
    parser = _parser(command, task)
    keys = parser.get_default("_job_keys")
    run = [a.option_strings[0] for a in _visible(parser) if a.option_strings[0] in RUN_FLAGS]
    assert sorted(run) == sorted(set(run)), "a run flag given twice"
    field_flags = [a for a in _visible(parser) if a.option_strings[0] not in RUN_FLAGS]
    by_field: dict[str, list[str]] = {}
    for action in field_flags:
        option = action.option_strings[0]
        key = SPECIAL_FLAGS.get(option) or keys.get(action.dest)
        assert key is not None, f"{command} {task} {option}: no job field"
        by_field.setdefault(key, []).append(option)
    assert set(by_field) == _job_keys(spec.job), f"fields without a flag: {_job_keys(spec.job) - set(by_field)}"
    assert all(len(options) == 1 for options in by_field.values()), {k: v for k, v in by_field.items() if len(v) > 1}
    assert not [a for a in parser._actions if a.help != argparse.SUPPRESS and not a.option_strings], "no positional"


def test_one_field_name_is_one_flag_name_across_every_task():
    names: dict[str, set[str]] = {}
    for command, task in COMMANDS:
        parser = _parser(command, task)
        keys = parser.get_default("_job_keys")
        for action in _visible(parser):
            option = action.option_strings[0]
            if option in RUN_FLAGS or option in SPECIAL_FLAGS:
                continue
            names.setdefault(keys[action.dest].split(".")[-1], set()).add(option)
    assert {"pretrained", "kg", "eval", "train", "steps", "heldout_fraction", "data_seed"} <= set(names)
    assert names["pretrained"] == {"--model"} and names["eval"] == {"--test"}
    assert {field: options for field, options in names.items() if len(options) > 1} == {}
    assert set(SPECIAL_FLAGS.values()) == set(SPECIAL_FIELDS)


#: (command, old spelling and value, new spelling and value): docs/cli.md's table on the task commands
ALIASES = [
    (["evaluate", "kgqa"], ["--metaqa", "M"], ["--data", "M"]),
    (["evaluate", "kgqa"], ["--train-split", "train"], ["--train", "train"]),
    (["evaluate", "kgqa"], ["--eval-split", "test"], ["--test", "test"]),
    (["evaluate", "kgqa"], ["--split-seed", "3"], ["--data-seed", "3"]),
    (["evaluate", "kgqa"], ["--km-fanout", "4"], ["--fanouts", "4"]),
    (["finetune", "link-prediction", "--kg", "K"], ["--eval", "a.txt"], ["--test", "a.txt"]),
    (["finetune", "link-prediction"], ["--holdout-fraction", "0.2"], ["--heldout-fraction", "0.2"]),
    (["evaluate", "relation-classification", "--data", "D"], ["--train-data", "a.json"], ["--train", "a.json"]),
    (["evaluate", "relation-classification"], ["--train-steps", "9"], ["--steps", "9"]),
    (["finetune", "word-in-context", "--train", "t.txt"], ["--eval", "d.txt"], ["--test", "d.txt"]),
    (["finetune", "entity-classification"], ["--bf16"], ["--precision", "bf16"]),
]


@pytest.mark.parametrize("command,old,new", ALIASES, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_old_flag_is_a_hidden_alias_that_warns_once_and_gives_the_same_job(command, old, new, capsys):
    assert main([*command, *new, "--print-config"]) == 0
    by_new = capsys.readouterr()
    assert by_new.err == ""
    assert main([*command, *old, "--print-config"]) == 0
    by_old = capsys.readouterr()
    assert by_old.out == by_new.out
    assert by_old.err.splitlines() == [f"warning: {old[0]} is deprecated; use {new[0]}"]
    help_text = "\n".join(a.help or "" for a in _parser(*command[:2])._actions if old[0] in a.option_strings)
    assert not re.search(rf"{old[0]}(?![\w-])", _parser(*command[:2]).format_help()) and help_text == argparse.SUPPRESS


def test_a_list_alias_collects_its_files_as_the_new_flag_does(capsys):
    """``--train-data a b`` (relation classification's old flag) and ``--train a --train b``: one list."""
    base = ["evaluate", "relation-classification", "--data", "D", "--print-config"]
    assert main([*base, "--train-data", "a.json", "b.json"]) == 0
    old = yaml.safe_load(capsys.readouterr().out)["data"]["train_data"]
    assert main([*base, "--train", "a.json", "--train", "b.json"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["data"]["train_data"] == old == ["a.json", "b.json"]


@pytest.mark.parametrize("command,task", COMMANDS, ids=str)
def test_help_renders_as_plain_text_and_says_what_the_command_does(command, task, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, task, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text and ":class:" not in text
    sentence = {"finetune": "Fine-tune one variant", "evaluate": "Compare variants"}[command]
    assert sentence in " ".join(text.split())
    if task == "kgqa":
        assert "50%" in text  # the bare % that broke argparse's template


#: the same jobs spelled with the flags of the code before the vocabulary (and the docs' commands) and
#: with today's: --print-config identical, and these values as the old code printed them
#: (/tmp/h1a-before, docs/history.md "reproduction")
REPRODUCED = [
    (["evaluate", "kgqa", "--metaqa", "M", "--hops", "1", "--kg-settings", "full", "--variants", "lm+g+m",
      "--seeds", "1", "--steps", "100", "--select-every", "50"],
     ["evaluate", "kgqa", "--data", "M", "--hops", "1", "--kg-settings", "full", "--variants", "lm+g+m",
      "--seeds", "1", "--steps", "100", "--select-every", "50"],
     {"steps": 100, "select_every": 50, "kg_settings": ["full"], "seeds": [0], "variants": ["lm+g+m"],
      "data": {"metaqa": "M", "train_split": "dev", "eval_split": None, "hops": [1], "selection_fraction": 0.1,
               "test_fraction": 0.3, "split_seed": 0, "max_entities": 2000, "max_questions": 1500}}),
    (["evaluate", "relation-classification", "--train-data", "nyt_train.json", "--drop-overlap", "--data",
      "dev_wiki.json", "--variants", "lm", "--seeds", "1", "--settings", "5-1,5-5", "--train-way", "5",
      "--train-steps", "300", "--episodes", "1000"],
     ["evaluate", "relation-classification", "--train", "nyt_train.json", "--drop-overlap", "--data",
      "dev_wiki.json", "--variants", "lm", "--seeds", "1", "--settings", "5-1,5-5", "--train-way", "5",
      "--steps", "300", "--episodes", "1000"],
     {"settings": ["5-1", "5-5"], "train_steps": 300, "train_way": 5, "episodes": 1000, "num_train_relations": 3,
      "data": {"data": "dev_wiki.json", "train_data": ["nyt_train.json"], "drop_overlap": True,
               "max_entities": 3000}}),
    (["finetune", "link-prediction", "--data", "wn18rr", "--train-encoder", "--max-eval", "50"],
     ["finetune", "link-prediction", "--data", "wn18rr", "--train-encoder", "--max-eval", "50"],
     {"scorers": ["rotate"], "steps": 3500, "batch_size": 128, "fanouts": [5, 5], "description_max_length": 32,
      "encoder_lr": 5e-5, "refresh_initial": 150, "budget_cpu_seconds": 3300.0, "frozen_warmup_steps": 300,
      "max_eval_triples": 50, "holdout_fraction": 0.0, "variants": ["lm+g+m"], "seeds": [0]}),
]


@pytest.mark.parametrize("old,new,expected", REPRODUCED, ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else "")
def test_the_documented_jobs_print_the_config_they_printed_before(old, new, expected, capsys):
    assert main([*old, "--print-config"]) == 0
    by_old = capsys.readouterr().out
    assert main([*new, "--print-config"]) == 0
    by_new = capsys.readouterr().out
    assert by_old == by_new
    printed = yaml.safe_load(by_new)
    for key, value in expected.items():
        assert printed[key] == value, key


@pytest.mark.parametrize("flags,keywords,problem", [
    (["--epochs", "0"], {"epochs": 0}, "epochs: must be at least 1, got 0"),
    (["--heldout-fraction", "1.5"], {"data__heldout_fraction": 1.5}, "data.heldout_fraction: must be in (0, 1), got 1.5"),
    (["--variants", "jaket"], {"variants": ["jaket"]}, "variant 'jaket' needs --model DIR"),
])
def test_pipeline_and_the_command_refuse_a_bad_job_with_the_same_problem(flags, keywords, problem, capsys):
    from jaket.pipelines import pipeline

    assert main(["evaluate", "entity-classification", *flags, "--print-config"]) == 2
    command_error = capsys.readouterr().err
    with pytest.raises(ValueError) as caught:
        pipeline("entity-classification", **keywords)
    assert problem in command_error and problem in str(caught.value)
    if "needs --model" not in problem:  # each names where the value was given, as its caller wrote it
        assert f"{flags[0]} {flags[1]}: " in command_error
        keyword = next(iter(keywords))
        assert f"{keyword}={keywords[keyword]!r}: " in str(caught.value) and "--" not in str(caught.value)


def test_pipeline_names_a_misspelled_keyword_as_written():
    from jaket.pipelines import pipeline

    with pytest.raises(ValueError, match=r"trian=3: trian: unknown key") as caught:
        pipeline("entity-classification", trian=3)
    assert "--trian" not in str(caught.value)
    with pytest.raises(ValueError, match=r"data__trian='x': data\.trian: unknown key"):
        pipeline("entity-classification", data__trian="x")
    with pytest.raises(ValueError, match=r"data\['trian'\]='x': data\.trian: unknown key"):
        pipeline("entity-classification", data={"trian": "x"})


def test_the_setup_checks_are_pipelines_and_the_command_gives_the_same_line(tmp_path, capsys):
    """A device this machine lacks and a tracker that does not exist: the command's one line is the
    error pipeline() raises (the checks live in one place, jaket.pipelines.prepare_run)."""
    from jaket.pipelines import pipeline

    for flags, keywords in ((["--device", "nosuchdevice"], {"device": "nosuchdevice"}),
                            (["--log-with", "nosuchtracker"], {"log_with": "nosuchtracker"})):
        status = main(["finetune", "entity-classification", *flags, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip().splitlines()
        with pytest.raises(ValueError) as caught:
            pipeline("entity-classification", evaluate=False, out=tmp_path / "lib", **keywords)
        assert status != 0 and err[-1].removesuffix(" (--debug shows where)") == f"error: {caught.value}"


def test_jaket_pipeline_is_callable_and_the_result_names_the_fine_tuned_model():
    import jaket
    from jaket.tasks.results import TaskResult

    assert callable(jaket.pipeline)
    from jaket.pipelines import pipeline

    assert callable(pipeline)
    result = TaskResult("t", [])
    result.finetuned = "model"
    TaskResult._model_warned = False
    with pytest.warns(FutureWarning, match="use TaskResult.finetuned"):
        assert result.model == "model"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert result.model == "model"  # once


# ----------------------------------------------------------------------------- layering

TASKS_DIR = Path(__file__).resolve().parents[2] / "src" / "jaket" / "tasks"


def _layer(module: str) -> int | None:
    """0 the shared base of jaket.tasks, 1 a task package, 2 the registry, 3 the commands (finetune, evaluate,
    predict, link); None: not tasks/."""
    if not module.startswith("jaket.tasks"):
        return None
    parts = module.split(".")
    if len(parts) >= 3 and (TASKS_DIR / parts[2]).is_dir():
        return 1
    if module == "jaket.tasks.registry":
        return 2
    if module in ("jaket.tasks.cli", "jaket.tasks.predict", "jaket.tasks.link_cli"):
        return 3
    return 0


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):  # at any depth: an import inside a function is an import too
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module)]
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def test_tasks_has_no_upward_import():
    """The shared base (cli_common, finetuned, spec, ...) imports no task package, registry or command;
    a task package no registry or command; the registry no command."""
    upward = []
    for path in sorted(TASKS_DIR.rglob("*.py")):
        module = "jaket." + ".".join(path.relative_to(TASKS_DIR.parents[1] / "jaket").with_suffix("").parts)
        module = module.removesuffix(".__init__")
        own = _layer(module)
        for line, imported in _imports(path):
            layer = _layer(imported)
            if layer is not None and layer > own and not (layer == 1 and imported.split(".")[2] == module.split(".")[2]):
                upward.append(f"{path.relative_to(TASKS_DIR)}:{line}: {imported}")
    assert upward == []


def test_a_spec_names_code_only_in_its_own_package():
    """What a spec names as a string is ``"module:name"`` in one of the template's modules of its own
    package (resolved when used: tests/tasks/test_layout.py), and its fine-tuned class is its task's."""
    from jaket.tasks.spec import TaskSpec

    text = ("name", "help", "finetune_variant", "set_example", "predict_help", "predict_usage")
    for spec in TASKS.values():
        for field in dataclasses.fields(TaskSpec):
            value = getattr(spec, field.name)
            if isinstance(value, str) and field.name not in text:
                module, _, name = value.partition(":")
                assert module in ("data", "run", "finetuned") and name.isidentifier(), f"{spec.name}.{field.name}"
        assert callable(spec.run_function()) and callable(spec.table_function())
        assert spec.model is None or spec.model_class().task == spec.name


def test_no_library_code_raises_system_exit():
    """Only the command-line entry point exits; the library raises jaket's own errors."""
    src = TASKS_DIR.parent
    raising = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "__main__.py" or path == src / "cli.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(called, ast.Name) and called.id == "SystemExit":
                    raising.append(f"{path.relative_to(src)}:{node.lineno}")
    assert raising == []


def test_every_report_is_written_by_the_one_writer():
    """``report.md`` and ``metrics.json`` of every task and of the demo are written by
    jaket.tasks.report.write_run_report: no other module writes a file named so."""
    src = TASKS_DIR.parent
    writers = []
    for path in sorted(src.rglob("*.py")):
        if path == TASKS_DIR / "report.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                named = {c.value for arg in node.args for c in ast.walk(arg) if isinstance(c, ast.Constant)}
                if name.startswith("write") and named & {"report.md", "metrics.json"}:
                    writers.append(f"{path.relative_to(src)}:{node.lineno}: {name}")
    assert writers == []
    calls = [path.relative_to(src).as_posix() for path in sorted(src.rglob("*.py"))
             if "write_run_report(" in path.read_text(encoding="utf-8")]
    assert {"tasks/grid.py", "tasks/word_sense/run.py", "demo.py"} <= set(calls)
