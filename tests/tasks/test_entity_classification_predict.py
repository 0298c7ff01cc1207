"""Entity classification: user split files, the fine-tuning config, early stopping, the saved
fine-tuned folder and ``jaket predict``."""

import dataclasses
import json
from functools import partial

import numpy as np
import pytest
import yaml

from jaket.cli import main
from jaket.kg.io import KGFormatError, save_kg
from jaket.tasks.registry import load_finetuned
from jaket.tasks.splits import read_splits


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture()
def kg_dir(small_kg, tmp_path):
    return save_kg(small_kg, tmp_path / "kg")


def _splits(small_kg, tmp_path, labelled=False):
    """12 train / 6 dev / 12 test entities, 6 left out (4 per category in train)."""
    ids = list(small_kg.entity_ids)
    rows = {"train": [], "dev": [], "test": []}
    for c in range(3):
        members = [i for i in range(len(ids)) if small_kg.entity_category[i] == c]
        rows["train"] += members[:4]
        rows["dev"] += members[4:6]
        rows["test"] += members[6:10]

    def line(i):
        return f"{ids[i]}\t{small_kg.category_names[small_kg.entity_category[i]]}" if labelled else ids[i]

    return {name: _write(tmp_path / f"{name}.txt", [line(i) for i in members]) for name, members in rows.items()}


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_split_files_every_bad_line_is_named(small_kg, tmp_path):
    train = _write(tmp_path / "train.txt", ["# training entities", "e0", "", "e1\tnoun.animal", "nope",
                                            "e2\ta\tb", "e0"])
    dev = _write(tmp_path / "dev.txt", ["e3", "e2"])
    with pytest.raises(KGFormatError) as caught:
        read_splits(small_kg, train, dev)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(f"{train}:4: this line has a label")
    assert any(line.startswith(f"{train}:5: unknown entity id 'nope'") for line in lines)
    assert any(line.startswith(f"{train}:6: expected 'id' or 'id<TAB>label', found 3") for line in lines)
    assert any(line.startswith(f"{train}:7: entity 'e0' given twice (first at line 2)") for line in lines)
    assert len(lines) == 4  # e2 is not in train: dev's e2 is fine
    # an entity in two splits, and an id-only row for an entity without a category
    unlabelled = dataclasses.replace(small_kg, entity_category=np.where(np.arange(36) == 5, -1,
                                                                         small_kg.entity_category))
    with pytest.raises(KGFormatError) as caught:
        read_splits(unlabelled, _write(tmp_path / "a.txt", ["e1", "e5"]), _write(tmp_path / "b.txt", ["e1"]))
    message = str(caught.value)
    assert f"{tmp_path / 'a.txt'}:2: entity 'e5' has no category in the KG" in message
    assert f"{tmp_path / 'b.txt'}:1: entity 'e1' is also in the train split ({tmp_path / 'a.txt'}:1)" in message
    with pytest.raises(ValueError, match="dev file"):
        read_splits(small_kg, train, None)


def test_labelled_split_rows_replace_the_categories(small_kg, tmp_path):
    files = _splits(small_kg, tmp_path, labelled=True)
    _write(files["test"], ["e30\tthing", "e31\tthing"])
    splits = read_splits(small_kg, files["train"], files["dev"], files["test"])
    assert splits.label_names == ["noun.animal", "noun.artifact", "noun.plant", "thing"]
    relabelled = splits.relabel(small_kg)
    assert relabelled.category_names[relabelled.entity_category[30]] == "thing"
    assert (relabelled.entity_category >= 0).sum() == len(splits.train) + len(splits.dev) + 2


def test_finetune_saves_a_model_that_predict_uses(small_kg, kg_dir, tiny_bert_dir, tmp_path, capsys):
    files = _splits(small_kg, tmp_path)
    out = tmp_path / "run"
    assert main(["finetune", "entity-classification", "--kg", str(kg_dir), "--encoder", str(tiny_bert_dir),
                 "--km-heads", "4", "--epochs", "12", "--train-fractions", "1.0",
                 "--train", str(files["train"]), "--dev", str(files["dev"]), "--test", str(files["test"]),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    model_dir = out / "model"
    assert f"fine-tuned model: {model_dir}" in printed
    assert sorted(p.name for p in model_dir.iterdir()) == ["backbone", "head.safetensors", "task.json"]
    assert sorted(p.name for p in (model_dir / "backbone").iterdir()) == ["config.json", "encoder", "jaket.safetensors"]
    assert not list(model_dir.rglob("*.bin")) and not list(model_dir.rglob("*.pt")) and not list(model_dir.rglob("*.pkl"))
    task = json.loads((model_dir / "task.json").read_text())
    assert task["format"] == "jaket-finetuned" and task["task"] == "entity-classification"
    assert task["variant"] == "lm+g+m" and task["labels"] == list(small_kg.category_names)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["split"]["train"] == 12 and metrics["split"]["test"] == 12
    run = metrics["runs"]["lm+g+m"]["1.0"][0]
    assert task["training"]["test_accuracy"] == run["test_accuracy"]
    # predict the test entities: the saved model gives exactly the accuracy fine-tuning reported
    predictions = tmp_path / "test.jsonl"
    assert main(["predict", "entity-classification", "--finetuned", str(model_dir), "--kg", str(kg_dir),
                 "--entities", str(files["test"]), "--top-k", "2", "--out", str(predictions)]) == 0
    rows = _rows(predictions)
    test_ids = files["test"].read_text().split()
    assert [r["entity"] for r in rows] == test_ids
    truth = {small_kg.entity_ids[i]: small_kg.category_names[small_kg.entity_category[i]] for i in range(36)}
    accuracy = np.mean([r["label"] == truth[r["entity"]] for r in rows])
    assert accuracy == pytest.approx(run["test_accuracy"])
    for r in rows:
        assert r["label"] == r["top"][0]["label"] and 1 / 3 <= r["probability"] <= 1
        assert r["top"][0]["probability"] >= r["top"][1]["probability"]
        assert r["name"] == small_kg.entity_names[small_kg.entity_index(r["entity"])]
    # a top_k below 1 is refused, not read as 1
    classifier = load_finetuned(model_dir)
    for top_k in (0, -1):
        with pytest.raises(ValueError, match=f"^top_k must be at least 1, got {top_k}$"):
            classifier.predict(small_kg, test_ids, top_k=top_k)


@pytest.mark.parametrize("argv", [["entity-classification", "--finetuned", "M", "--kg", "K", "--all"],
                                  ["link-prediction", "--finetuned", "M", "--kg", "K", "--queries", "Q"],
                                  ["kgqa", "--finetuned", "M", "--questions", "Q"]],
                         ids=lambda argv: argv[0])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_every_predict_command_refuses_a_top_k_below_one(argv, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["predict", *argv, "--top-k", value, "--out", str(tmp_path / "rows.jsonl")])
    assert caught.value.code == 2
    assert f"argument --top-k: must be a positive integer, got {value}" in capsys.readouterr().err
    assert not (tmp_path / "rows.jsonl").exists()
    if argv[0] == "kgqa":
        with pytest.raises(SystemExit) as caught:
            main(["predict", *argv, "--hops", value, "--out", str(tmp_path / "rows.jsonl")])
        assert caught.value.code == 2
        assert f"argument --hops: must be a positive integer, got {value}" in capsys.readouterr().err


def test_predict_labels_the_unlabelled_entities_by_default(small_kg, tiny_bert_dir, tmp_path, capsys):
    partial = dataclasses.replace(small_kg, entity_category=np.where(np.arange(36) % 6 == 0, -1,
                                                                      small_kg.entity_category))
    kg_dir = save_kg(partial, tmp_path / "kg")
    out = tmp_path / "run"
    assert main(["finetune", "entity-classification", "--kg", str(kg_dir), "--encoder", str(tiny_bert_dir),
                 "--km-heads", "4", "--epochs", "2", "--train-fractions", "1.0", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["entity"] for r in rows] == [f"e{i}" for i in range(0, 36, 6)]
    assert {r["label"] for r in rows} <= set(small_kg.category_names)


def test_predict_says_why_nothing_is_unlabelled_and_what_to_pass(small_kg, kg_dir, tiny_bert_dir, tmp_path,
                                                                  capsys, caplog):
    """Every entity had a category in fine-tuning: no row by default, and a warning says why and
    names --all / --entities FILE; --all then labels every entity."""
    out = tmp_path / "run"
    assert main(["finetune", "entity-classification", "--kg", str(kg_dir), "--encoder", str(tiny_bert_dir),
                 "--km-heads", "4", "--epochs", "1", "--train-fractions", "1.0", "--out", str(out)]) == 0
    capsys.readouterr()
    caplog.clear()
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "0 prediction(s)" in captured.err
    assert f"{kg_dir}: no entity to label" in caplog.text
    assert "of its 36 entities" in caplog.text and "had a label in fine-tuning" in caplog.text
    assert "36 have a category" in caplog.text
    assert "--all" in caplog.text and "--entities FILE" in caplog.text
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir),
                 "--all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 36
    head = out / "model" / "head.safetensors"  # issue #27: a truncated head is one clean line
    head.write_bytes(head.read_bytes()[:40])
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir)]) == 1
    err = capsys.readouterr().err
    assert f"{head}: not a readable safetensors file" in err and "Traceback" not in err


def test_labels_from_files_and_the_jaket_setting(small_kg, tiny_jaket_dir, tmp_path, capsys):
    """A KG without categories, labels only in the split files; the saved backbone keeps the
    pre-trained model's KM structure."""
    bare = dataclasses.replace(small_kg, entity_category=np.full(36, -1), category_names=[])
    kg_dir = save_kg(bare, tmp_path / "kg")
    files = _splits(small_kg, tmp_path, labelled=True)
    out = tmp_path / "run"
    assert main(["finetune", "entity-classification", "--kg", str(kg_dir), "--model", str(tiny_jaket_dir),
                 "--epochs", "3", "--train-fractions", "1.0", "--train", str(files["train"]),
                 "--dev", str(files["dev"]), "--out", str(out)]) == 0
    task = json.loads((out / "model" / "task.json").read_text())
    assert task["variant"] == "jaket" and task["label_source"] == "files"
    assert task["labels"] == list(small_kg.category_names) and task["training"]["test_accuracy"] is None
    saved = json.loads((out / "model" / "backbone" / "config.json").read_text())
    pretrained = json.loads((tiny_jaket_dir / "config.json").read_text())
    assert (saved["km_heads"], saved["fanouts"]) == (pretrained["km_heads"], pretrained["fanouts"])
    capsys.readouterr()
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    in_files = set(" ".join(f.read_text() for f in (files["train"], files["dev"])).split())
    assert sorted(r["entity"] for r in rows) == sorted(set(bare.entity_ids) - in_files)


def test_config_file_set_and_flags(kg_dir, tiny_bert_dir, tmp_path, capsys):
    config = _write(tmp_path / "ec.yaml", ["# fine-tuning", f"encoder: {tiny_bert_dir}", "epochs: 40",
                                           "km_heads: 4", "train_fractions: [1.0]", "data:", f"  kg: {kg_dir}"])
    base = ["finetune", "entity-classification", "--config", str(config), "--print-config"]
    assert main(base + ["--set", "epochs=7", "--set", "dropout=0.5"]) == 0
    printed = capsys.readouterr().out
    assert "epochs: 7" in printed and "dropout: 0.5" in printed and f"kg: {kg_dir}" in printed
    assert main(base + ["--set", "epochs=7", "--epochs", "9"]) == 0  # flags win over --set
    assert "epochs: 9" in capsys.readouterr().out
    bad = _write(tmp_path / "bad.yaml", ["epochs: 40", "data:", "  kg: x", "  max_entities: many"])
    assert main(["finetune", "entity-classification", "--config", str(bad)]) == 2  # a config error: usage (docs/cli.md "Exit status")
    assert f"{bad}:4: data.max_entities: Input should be a valid integer" in capsys.readouterr().err
    assert main(["finetune", "entity-classification", "--config", str(bad), "--set", "data.max_entities=9",
                 "--set", "dropout=1.5"]) == 2
    assert "--set dropout=1.5: dropout: must be in [0, 1)" in capsys.readouterr().err
    assert main(["finetune", "entity-classification", "--config", str(config), "--set", "epoch=3",
                 "--out", str(tmp_path / "never")]) == 2
    assert "--set epoch=3: epoch: unknown key; the keys are:" in capsys.readouterr().err
    assert main(["finetune", "entity-classification", "--train", str(config)]) == 2
    assert "data.train: split files name entities of a KG" in capsys.readouterr().err


_PRINT_CONFIG = ["finetune", "entity-classification", "--print-config"]


def _refused_config(capsys, *argv) -> list[str]:
    """The error lines of ``--print-config`` with ``argv``, which must fail in lines, not a traceback."""
    assert main(_PRINT_CONFIG + list(argv)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line.removesuffix(" (--debug shows where)") for line in err.splitlines()[1:]]


def test_seeds_and_fractions_are_each_given_once(capsys):
    """A list whose every value makes runs of its own: none at all, or a value given twice (one run
    counted twice in the mean ± std), is one line naming where it was given; an empty ``seeds``
    stays the job's default seeds."""
    refused = partial(_refused_config, capsys)

    assert refused("--set", "train_fractions=[]") == [
        "error: --set train_fractions=[]: train_fractions: give at least one fraction"]
    assert refused("--set", "seeds=[1,1]") == ["error: --set seeds=[1,1]: seeds: seed 1 given twice"]
    assert refused("--set", "train_fractions=[0.2,0.2,0.2,1.5]") == [
        "error: --set train_fractions=[0.2,0.2,0.2,1.5]: train_fractions: fraction 0.2 given 3 times",
        "error: --set train_fractions=[0.2,0.2,0.2,1.5]: train_fractions: 1.5 is not in (0, 1]"]
    assert refused("--train-fractions", "0.5,0.5") == [
        "error: --train-fractions 0.5 0.5: train_fractions: fraction 0.5 given twice"]
    assert main(_PRINT_CONFIG + ["--set", "seeds=[]", "--set", "train_fractions=[0.5, 1]"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["seeds"] == [0] and printed["train_fractions"] == [0.5, 1.0]  # finetune's default: seed 0


def test_early_stopping_and_identical_fractions(kg_dir, tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "run"
    # a learning rate too small to change any prediction: the dev accuracy never improves
    assert main(["finetune", "entity-classification", "--kg", str(kg_dir), "--encoder", str(tiny_bert_dir),
                 "--km-heads", "4", "--epochs", "50", "--patience", "3", "--head-lr", "1e-12", "--km-lr", "1e-12",
                 "--train-fractions", "1.0,0.05,0.1", "--out", str(out)]) == 0
    assert "training fractions 0.05, 0.1 all select the same 1 training entity" in capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["warnings"] and "0.05, 0.1" in metrics["warnings"][0]
    for runs in metrics["runs"]["lm+g+m"].values():
        run = runs[0]
        assert run["best_epoch"] == 0 and run["stopped_early_at_epoch"] == 3
        assert len(run["history"]["dev_accuracy"]) == 4


def test_predict_refuses_what_is_not_a_fine_tuned_model(kg_dir, tiny_jaket_dir, tmp_path, capsys):
    assert main(["predict", "entity-classification", "--finetuned", str(tiny_jaket_dir), "--kg", str(kg_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a pre-trained model or encoder folder, not a fine-tuned one" in err
    assert f"jaket finetune entity-classification --model {tiny_jaket_dir}" in err
    assert main(["predict", "entity-classification", "--finetuned", str(tmp_path), "--kg", str(kg_dir)]) == 1
    assert "not a fine-tuned model folder (no task.json)" in capsys.readouterr().err
    from jaket.tasks.finetuned import FinetunedFormatError, read_task_config

    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps({"format": "jaket-finetuned", "format_version": 1,
                                                   "task": "link-prediction"}))
    with pytest.raises(FinetunedFormatError, match="a fine-tuned link-prediction model, not entity-classification"):
        read_task_config(folder, "entity-classification")


def test_the_shipped_config_lists_every_key_with_its_default():
    import dataclasses as dc
    from pathlib import Path

    from jaket.tasks.config import load_task_config, read_yaml_mapping
    from jaket.tasks.entity_classification.job import EntityClassificationJob

    path = Path(__file__).resolve().parents[2] / "configs" / "finetune-entity-classification.yaml"
    assert load_task_config(EntityClassificationJob, path) == EntityClassificationJob()
    keys = set(read_yaml_mapping(path))
    assert keys == {f.name for f in dc.fields(EntityClassificationJob)}
    assert set(read_yaml_mapping(path)["data"]) == {f.name for f in dc.fields(EntityClassificationJob().data)}


@pytest.mark.parametrize("variant", ["lm", "gnn"])
def test_every_setting_saves_a_folder_that_predicts_what_it_tested(variant, small_kg, kg_dir, tiny_bert_dir,
                                                                    tmp_path):
    files = _splits(small_kg, tmp_path)
    out = tmp_path / "run"
    assert main(["finetune", "entity-classification", "--variant", variant, "--kg", str(kg_dir),
                 "--encoder", str(tiny_bert_dir), "--km-heads", "4", "--epochs", "6", "--train-fractions", "1.0",
                 "--train", str(files["train"]), "--dev", str(files["dev"]), "--test", str(files["test"]),
                 "--out", str(out)]) == 0
    tested = json.loads((out / "metrics.json").read_text())["runs"][variant]["1.0"][0]["test_accuracy"]
    assert json.loads((out / "model" / "task.json").read_text())["variant"] == variant
    predictions = tmp_path / "p.jsonl"
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir),
                 "--entities", str(files["test"]), "--out", str(predictions)]) == 0
    truth = {small_kg.entity_ids[i]: small_kg.category_names[small_kg.entity_category[i]] for i in range(36)}
    rows = _rows(predictions)
    assert len(rows) == 12 and np.mean([r["label"] == truth[r["entity"]] for r in rows]) == pytest.approx(tested)


def test_a_boolean_nan_or_infinity_for_a_number_and_a_repeated_variant_are_refused(capsys):
    """pydantic reads ``true`` as 1 (``head_lr: true`` trained at a learning rate of 1.0) and let NaN and
    infinities through every learning rate; a variant given twice ran twice; a negative seed was kept.
    Each is now one line naming where it was given (the same rule holds for ``jaket.pipeline``)."""
    refused = partial(_refused_config, capsys)

    assert refused("--set", "head_lr=true") == [
        "error: --set head_lr=true: head_lr: expected a finite number, got true"]
    assert refused("--set", "patience=true") == [
        "error: --set patience=true: patience: expected a finite number, got true"]
    assert refused("--set", "km_lr=.nan") == ["error: --set km_lr=.nan: km_lr: expected a finite number, got nan"]
    assert refused("--set", "weight_decay=.inf") == [
        "error: --set weight_decay=.inf: weight_decay: expected a finite number, got inf"]
    assert refused("--set", "train_fractions=[0.5, true]") == [
        "error: --set train_fractions=[0.5, true]: train_fractions: expected finite numbers, got true among them"]
    assert refused("--set", "seeds=[2, -1]") == [
        "error: --set seeds=[2, -1]: seeds: seed -1 is negative (seeds are 0 or more)"]
    assert refused("--set", "variants=[lm, lm]") == [
        "error: --set variants=[lm, lm]: variants: variant lm given twice"]
    # booleans stay booleans, numbers numbers
    assert main(_PRINT_CONFIG + ["--set", "bf16=true", "--set", "relation_memory=false", "--set", "head_lr=0.01"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["bf16"] is True and printed["relation_memory"] is False and printed["head_lr"] == 0.01
