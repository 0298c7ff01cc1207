"""One shape for every task: one fine-tuned model base with one save/load signature (each task
round-trips through it), and ``--config`` / ``--set`` / ``--print-config`` on every task command."""

from __future__ import annotations

import argparse
import inspect
import json

import pytest
import yaml

from jaket.cli import main
from jaket.tasks.registry import TASKS, predictable


def test_every_task_model_derives_from_the_one_base_with_one_signature():
    from jaket.tasks.finetuned import FinetunedModel

    for name, spec in predictable().items():
        cls = spec.model_class()
        assert issubclass(cls, FinetunedModel) and cls.task == name
        assert list(inspect.signature(cls.save_pretrained).parameters) == ["self", "directory"], name
        assert list(inspect.signature(cls.from_pretrained).parameters) == ["directory", "device"], name
        for method in ("backbone_model", "head_state", "task_config", "from_folder", "to", "predict"):
            assert getattr(cls, method) is not getattr(FinetunedModel, method), f"{name} lacks {method}"


def _entity_classification(small_kg, tiny_bert_dir, tmp_path):
    from jaket.tasks.entity_classification import run as ec

    config = ec.EntityClassificationConfig(variants=("lm+g+m",), seeds=(0,), epochs=2, train_fractions=(1.0,),
                                           encoder=tiny_bert_dir, km_heads=4, description_max_length=16)
    results = ec.run_entity_classification(small_kg, config, save_dir=tmp_path / "model")
    return results, lambda model: model.predict(small_kg, list(range(5)), top_k=2)


def _link_prediction(small_kg, tiny_bert_dir, tmp_path):
    import numpy as np

    from jaket.tasks.link_prediction import run as lp
    from jaket.tasks.link_prediction.finetuned import Query

    triples = np.asarray(small_kg.triples, dtype=np.int64)
    config = lp.LinkPredictionConfig(variants=("lm+g+m",), scorers=("transe",), seeds=(0,), steps=2, negatives=4,
                                     batch_size=4, encoder=tiny_bert_dir, km_heads=4, description_max_length=16)
    results = lp.run_link_prediction(small_kg, triples[:-5], {"valid": triples[-5:]}, config,
                                     save_dir=tmp_path / "model")
    return results, lambda model: model.predict(small_kg, [Query(1, 0, 0, None), Query(2, None, 0, 0)], top_k=3)


def _kgqa(small_kg, tiny_bert_dir, tmp_path):
    from jaket.tasks.kgqa import run as kgqa

    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=24)
    config = kgqa.KGQAConfig(variants=("lm+g+m",), kg_settings=("full",), seeds=(0,), steps=2, batch_size=4,
                             select_every=0, encoder=tiny_bert_dir, km_heads=4, description_max_length=16)
    results = kgqa.run_kgqa(small_kg, questions, config, save_dir=tmp_path / "model")
    return results, lambda model: model.predict(small_kg, questions[:3], hops=2, top_k=3)


def _relation_classification(fewrel_file, tiny_bert_dir, tmp_path):
    from jaket.tasks.relation_classification import run as rc
    from jaket.tasks.relation_classification.data import load_fewrel

    data = load_fewrel(fewrel_file)
    config = rc.RelationClassificationConfig(variants=("lm",), settings=((3, 1),), seeds=(0,), train_steps=2,
                                             train_way=2, episodes=2, max_length=32, encoder=tiny_bert_dir)
    results = rc.run_relation_classification(data, config, save_dir=tmp_path / "model")
    return results, lambda model: model.predict(data, [(1, data.instances[data.relations[3]][0])])


@pytest.mark.parametrize("task", ["entity-classification", "link-prediction", "kgqa", "relation-classification"])
def test_each_task_round_trips_through_the_base(task, small_kg, fewrel_file, tiny_bert_dir, tmp_path):
    """Fine-tuned and saved by the task's run, the folder opens through the one generic loader as
    the task's class, on a device, and predicts the same rows as a second load."""
    from jaket.tasks.registry import load_finetuned

    build = {"entity-classification": _entity_classification, "link-prediction": _link_prediction,
             "kgqa": _kgqa, "relation-classification": _relation_classification}[task]
    results, predict = build(fewrel_file if task == "relation-classification" else small_kg, tiny_bert_dir, tmp_path)
    folder = tmp_path / "model"
    assert json.loads((folder / "task.json").read_text())["task"] == task
    cls = TASKS[task].model_class()
    first = load_finetuned(folder)
    second = cls.from_pretrained(folder, device="cpu")
    assert type(first) is cls and first.directory == folder
    rows = predict(first)
    assert rows and rows == predict(second)
    with pytest.raises(ValueError, match="copy that folder"):  # a loaded model is not saved a second time
        first.save_pretrained(tmp_path / "again")
    # the run's results as typed rows: one per (setting, budget, seed), the metric among them
    from jaket.tasks.results import TaskResult

    typed = TaskResult.from_metrics(results)
    metric = {"entity-classification": "test_accuracy", "link-prediction": "valid.mrr", "kgqa": "test.all",
              "relation-classification": "3-1"}[task]
    assert typed.task == task and typed.variants == list(results["runs"] if task != "link-prediction"
                                                         else ["lm+g+m"])
    assert [r["seed"] for r in typed.rows()] == [0] and 0 <= typed.rows()[0][metric] <= 1
    frame = typed.to_dataframe()
    assert list(frame[["variant", "seed"]].itertuples(index=False, name=None)) == [(typed.variants[0], 0)]


def test_the_generic_loader_names_a_folder_of_no_known_task(tmp_path):
    from jaket.tasks.finetuned import FinetunedFormatError
    from jaket.tasks.registry import load_finetuned

    (tmp_path / "task.json").write_text(json.dumps({"format": "jaket-finetuned", "format_version": 1,
                                                    "task": "poetry"}))
    with pytest.raises(FinetunedFormatError, match="unknown task 'poetry'"):
        load_finetuned(tmp_path)


# ----------------------------------------------------------------------------- one command-line path

#: per command: the arguments it needs, a key it has and a value for it
_COMMANDS = {
    ("finetune", "entity-classification"): ([], "epochs", 7),
    ("evaluate", "entity-classification"): ([], "epochs", 7),
    ("finetune", "word-in-context"): ([], "epochs", 7),
    ("evaluate", "word-in-context"): ([], "epochs", 7),
    ("finetune", "link-prediction"): ([], "steps", 7),
    ("evaluate", "link-prediction"): ([], "steps", 7),
    ("finetune", "kgqa"): ([], "steps", 7),
    ("evaluate", "kgqa"): ([], "steps", 7),
    ("finetune", "relation-classification"): ([], "train_steps", 7),
    ("evaluate", "relation-classification"): ([], "train_steps", 7),
    ("evaluate", "sense-linking"): (["--heldout-of", "RUN"], "pretrained", "M"),
    ("evaluate", "word-sense-disambiguation"): (["--data", "X.data.xml"], "max_length", 70),
    ("predict", "entity-classification"): (["--finetuned", "M", "--kg", "K"], "top_k", 7),
    ("predict", "link-prediction"): (["--finetuned", "M", "--kg", "K", "--queries", "Q"], "top_k", 7),
    ("predict", "kgqa"): (["--finetuned", "M", "--questions", "Q"], "top_k", 7),
    ("predict", "relation-classification"): (["--finetuned", "M", "--support", "S", "--queries", "Q"], "out",
                                             "rows.jsonl"),
    ("predict", "word-in-context"): (["--finetuned", "M", "--pairs", "P"], "gold", "gold.txt"),
}


def test_every_task_command_is_covered():
    covered = {task for (command, task) in _COMMANDS if command == "predict"}
    assert covered == set(predictable())
    for command in ("finetune", "evaluate"):
        assert {task for (c, task) in _COMMANDS if c == command} == {n for n, s in TASKS.items() if command in s.commands}


def test_every_spec_names_what_its_package_holds():
    """Each registered task's spec resolves: its job is a dataclass, its grid task a GridTask of its
    ``run`` module, its model the FinetunedModel of its ``finetuned`` module with the task's name,
    its command-line functions exist; a second spec of the same name is refused."""
    import dataclasses

    from jaket.tasks.grid import GridTask
    from jaket.tasks.registry import register_task

    for name, spec in TASKS.items():
        assert spec.job is None or dataclasses.is_dataclass(spec.job), name
        assert spec.grid_task is None or issubclass(spec.grid_task_class(), GridTask), name
        assert spec.model is None or spec.model_class().task == name
        if spec.model is not None:
            assert callable(spec.add_predict_arguments) and callable(spec.resolve(spec.predict_rows))
    with pytest.raises(ValueError, match="registered already"):
        register_task(TASKS["kgqa"])


@pytest.mark.parametrize("command,task", sorted(_COMMANDS), ids=lambda x: x)
def test_config_set_and_print_config_on_every_task_command(command, task, tmp_path, capsys):
    """A value from --config FILE, overridden by --set, is what --print-config shows; an unknown key
    is refused naming it."""
    needed, key, value = _COMMANDS[(command, task)]
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({key: value}))
    assert main([command, task, *needed, "--config", str(config), "--print-config"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert str(shown[key]) == str(value)
    assert main([command, task, *needed, "--config", str(config), "--set", f"{key}={value}9", "--print-config"]) == 0
    assert str(yaml.safe_load(capsys.readouterr().out)[key]) == f"{value}9"
    status = main([command, task, *needed, "--set", "no_such_key=1", "--print-config"])
    assert status != 0 and "no_such_key" in capsys.readouterr().err


@pytest.mark.parametrize("command,task", sorted(k for k in _COMMANDS if k[0] != "predict"), ids=lambda x: x)
def test_every_task_command_resolves_precision_once(command, task, capsys):
    """--precision (and its alias --bf16) on every finetune / evaluate command: --print-config shows
    it resolved into the config's one field (a typed job's bf16, a flag config's precision), never
    "auto"; without the flag the config's own default (fp32) stays."""
    from jaket.model.device import choose_precision

    needed = _COMMANDS[(command, task)][0]
    native = choose_precision("auto", "cpu")

    def shown(*flags):
        assert main([command, task, *needed, *flags, "--print-config"]) == 0
        settings = yaml.safe_load(capsys.readouterr().out)
        return "bf16" if settings.get("bf16", settings.get("precision") == "bf16") else "fp32"

    assert shown() == "fp32"
    assert shown("--precision", "bf16") == shown("--bf16") == "bf16"
    assert shown("--precision", "fp32") == "fp32"
    assert shown("--precision", "auto") == native


def test_a_flag_on_the_command_line_wins_over_the_config_file(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("steps: 5\nlr: 0.5\n")
    assert main(["finetune", "kgqa", "--config", str(config), "--steps", "9", "--print-config"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["steps"] == 9 and shown["lr"] == 0.5


def test_a_config_value_is_checked_as_its_flag_checks_it(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("top_k: many\n")
    status = main(["predict", "kgqa", "--finetuned", "M", "--questions", "Q", "--config", str(config)])
    err = capsys.readouterr().err
    assert status == 2 and f"{config}:1: top_k" in err


# ----------------------------------------------------------------------------- typed variants

@pytest.mark.parametrize("name", ["lm", "gnn", "lm+g", "lm+g+m"])
def test_each_variant_builds_what_its_registry_entry_says(name, tiny_bert_dir):
    """The typed registry is what the backbone builder reads: a KM exactly when ``has_km``, a
    language module for a KG-only task exactly when the memory needs the encoder (or the text is
    read), and the memory source the settings' docs name."""
    from jaket.tasks.settings import VARIANT_LABELS, VariantConfig, variant
    from jaket.tasks.variants import load_backbone

    spec = variant(name)
    assert spec.label == VARIANT_LABELS[name]
    kg_only = load_backbone(VariantConfig(variant=name, encoder=tiny_bert_dir, km_heads=4), need_language=False)
    assert (kg_only.knowledge is not None) == spec.has_km
    assert (kg_only.language is not None) == spec.needs_encoder
    with_text = load_backbone(VariantConfig(variant=name, encoder=tiny_bert_dir, km_heads=4))
    assert (with_text.language is not None) == spec.reads_text
    assert with_text.uses_memory_from_lm == (spec.memory == "lm1")


def test_an_unknown_variant_lists_the_known_ones():
    from jaket.tasks.settings import VariantError, variant

    with pytest.raises(VariantError, match="lm, gnn, lm\\+g, lm\\+g\\+m, jaket"):
        variant("bert")


# ----------------------------------------------------------------------------- the Python entry point

def test_pipeline_runs_a_comparison_and_returns_typed_rows(small_kg, tiny_bert_dir, tmp_path):
    """``pipeline`` goes through the command's path (settings by --set name, a dotted key with
    ``__``) and returns the run's rows; a bad setting raises the command's error."""
    from jaket.kg.io import save_kg
    from jaket.pipelines import pipeline

    kg_dir = save_kg(small_kg, tmp_path / "kg")
    result = pipeline("entity-classification", out=tmp_path / "ec", encoder=tiny_bert_dir, variants=["lm+g+m"],
                      seeds=2, epochs=1, train_fractions=[1.0], km_heads=4, data__kg=kg_dir)
    frame = result.to_dataframe()
    assert result.task == "entity-classification" and sorted(frame["seed"]) == [0, 1]
    assert set(frame["variant"]) == {"lm+g+m"} and frame["test_accuracy"].between(0, 1).all()
    assert (tmp_path / "ec" / "report.md").is_file()
    with pytest.raises(ValueError, match="epochs"):
        pipeline("entity-classification", out=tmp_path / "bad", encoder=tiny_bert_dir, epochs="many", data__kg=kg_dir)


# ----------------------------------------------------------------------------- one loading path

def _broken(kind: str, tiny_jaket_dir, tmp_path):
    """A model folder broken in one way, and the line every command must print for it."""
    import shutil

    folder = tmp_path / "broken"
    shutil.copytree(tiny_jaket_dir, folder)
    if kind == "truncated weights":
        data = (folder / "jaket.safetensors").read_bytes()
        (folder / "jaket.safetensors").write_bytes(data[:100])
        return folder, f"{folder / 'jaket.safetensors'}: not a readable safetensors file"
    if kind == "config is a list":
        (folder / "config.json").write_text("[1, 2]")
        return folder, f"{folder / 'config.json'}: expected a JSON object, found list"
    (folder / "config.json").unlink()  # a fine-tuned folder where a pre-trained one is expected
    (folder / "task.json").write_text(json.dumps({"format": "jaket-finetuned", "task": "entity-classification"}))
    return folder, f"{folder}: a fine-tuned model folder, not a pre-trained one"


@pytest.mark.parametrize("kind", ["truncated weights", "config is a list", "a fine-tuned folder"])
def test_a_broken_pretrained_folder_is_the_same_line_in_every_command(kind, small_kg, tiny_jaket_dir, tmp_path,
                                                                     capsys):
    """One loading path for a pre-trained folder: embed, fine-tuning with the jaket setting (the
    KM structure is read before any work) and evaluation name the same file and problem."""
    from jaket.kg.io import save_kg

    kg_dir = save_kg(small_kg, tmp_path / "kg")
    folder, line = _broken(kind, tiny_jaket_dir, tmp_path)
    commands = [["embed", "--model", str(folder), "--kg", str(kg_dir), "--out", str(tmp_path / "e.npy")],
                ["finetune", "entity-classification", "--model", str(folder), "--kg", str(kg_dir), "--out",
                 str(tmp_path / "ec")],
                ["evaluate", "link-prediction", "--model", str(folder), "--kg", str(kg_dir), "--test",
                 str(kg_dir / "triples.tsv"), "--variants", "jaket", "--out", str(tmp_path / "lp")]]
    for command in commands:
        assert main(command) == 1, command
        err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
        assert err and err[-1].startswith(f"error: {line}"), (command, err)


def _task_parser(command: str, task: str):
    """The argparse parser of ``jaket COMMAND TASK``."""
    import argparse

    from jaket.cli import build_parser

    parser = build_parser()
    for name in (command, task):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _is_job_key(job_type, key: str) -> bool:
    """``key`` (dotted) names a field of the dataclass ``job_type`` (nested through its sections)."""
    import dataclasses
    import typing

    node = job_type
    for part in key.split("."):
        if not dataclasses.is_dataclass(node):
            return False
        hints = typing.get_type_hints(node)
        if part not in hints:
            return False
        node = hints[part]
    return True


@pytest.mark.parametrize("command,task", sorted((c, n) for n, s in TASKS.items() for c in s.commands), ids=str)
def test_every_flag_of_a_task_command_is_a_key_of_its_job(command, task):
    """One CLI path: every flag of ``finetune|evaluate TASK`` is either how and where to run (device,
    --out, --json, --config, ...), one of the spelled-alike keys (--variant(s), --seeds, --precision)
    or a key of the task's typed job, layered over the file and --set only when given (its default is
    None: the job's own default stands)."""
    from jaket.tasks.job_flags import RUN_FLAGS

    spec = TASKS[task]
    assert spec.job is not None and spec.runner is not None, f"{task} has no typed job and runner"
    parser = _task_parser(command, task)
    keys = parser.get_default("_job_keys")
    special = {"--help", "--debug", "--variant", "--variants", "--seeds", "--precision", *RUN_FLAGS}
    flags = [action for action in parser._actions
             if action.option_strings and action.help != argparse.SUPPRESS
             and not special & set(action.option_strings)]
    assert flags, task
    for action in flags:
        flag = action.option_strings[0]
        assert action.dest in keys, f"{command} {task} {flag}: not a key of {spec.job.__name__}"
        assert _is_job_key(spec.job, keys[action.dest]), f"{flag} -> {keys[action.dest]}: no such key"
        assert action.default is None, f"{flag}: its default must be the job's, not the flag's"


@pytest.mark.parametrize("command,count", [("finetune", 1), ("evaluate", 5)])
def test_first_seed_alone_shifts_the_commands_default_seeds(command, count, capsys):
    """``--first-seed S`` without ``--seeds``: the command's default count of seeds, from S (every
    typed-job task alike); ``--seeds 0`` is refused in one line."""
    for task in ("entity-classification", "kgqa"):
        assert main([command, task, "--first-seed", "2", "--print-config"]) == 0
        assert yaml.safe_load(capsys.readouterr().out)["seeds"] == list(range(2, 2 + count)), task
    assert main([command, "kgqa", "--seeds", "0", "--print-config"]) == 2
    assert "need at least one seed" in capsys.readouterr().err


def test_a_fine_tuned_folder_never_replaces_a_file_or_a_folder_of_something_else(tmp_path, capsys):
    """A fine-tuned folder is replaced as a whole: a file, or a folder without ``task.json``, was
    replaced (its contents deleted); now it is refused, from Python and by ``finetune --out`` before
    any work (``OUT/model``)."""
    from jaket.tasks.finetuned import write_finetuned

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    (tmp_path / "file.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"notes: is not a fine-tuned model folder \(no task.json; it holds a.txt\)"):
        write_finetuned(tmp_path / "notes", "entity-classification", None, {}, {})
    with pytest.raises(ValueError, match=r"file.txt: is a file; a fine-tuned model is saved as a folder"):
        write_finetuned(tmp_path / "file.txt", "entity-classification", None, {}, {})
    (tmp_path / "run" / "model").mkdir(parents=True)
    (tmp_path / "run" / "model" / "b.txt").write_text("mine")
    assert main(["finetune", "entity-classification", "--kg", str(tmp_path), "--encoder", str(tmp_path),
                 "--out", str(tmp_path / "run")]) == 1
    assert "model: is not a fine-tuned model folder (no task.json; it holds b.txt)" in capsys.readouterr().err
    assert [(tmp_path / p).read_text() for p in ("notes/a.txt", "file.txt", "run/model/b.txt")] == ["mine"] * 3
