"""Each task runs from the command line; on the embedded default (WordNet) with a tiny encoder
and tiny sizes, and on given files (a KG folder, MetaQA, FewRel)."""

import json

import pytest

from jaket.cli import main
from jaket.kg.io import save_kg


def _metrics(out):
    return json.loads((out / "metrics.json").read_text())


def _embedded_default(command, task, encoder, out, *flags):
    """``jaket COMMAND TASK`` on a 300-entity subset of the embedded default with the tiny encoder
    (FLAGS between those and ``--out OUT``); its metrics."""
    assert main([command, task, "--encoder", str(encoder), "--max-entities", "300", *flags, "--out", str(out)]) == 0
    return _metrics(out)


def test_finetune_entity_classification_on_kg_dir(small_kg, tiny_bert_dir, tmp_path, capsys):
    save_kg(small_kg, tmp_path / "kg")
    out = tmp_path / "out"
    assert main(["finetune", "entity-classification", "--kg", str(tmp_path / "kg"), "--encoder", str(tiny_bert_dir),
                 "--epochs", "3", "--km-heads", "4", "--train-fractions", "1.0", "--out", str(out)]) == 0
    assert "LM+G+M" in capsys.readouterr().out
    assert list(_metrics(out)["summary"]) == ["lm+g+m"]


def test_evaluate_without_model_drops_jaket_and_refuses_it(small_kg, tiny_bert_dir, tmp_path, capsys):
    save_kg(small_kg, tmp_path / "kg")
    assert main(["evaluate", "entity-classification", "--kg", str(tmp_path / "kg"), "--variants", "jaket"]) == 2  # a variant without what it needs: usage
    assert "needs --model" in capsys.readouterr().err
    out = tmp_path / "out"  # no --variants, no --model: every applicable setting except jaket
    assert main(["evaluate", "entity-classification", "--kg", str(tmp_path / "kg"), "--encoder", str(tiny_bert_dir),
                 "--seeds", "1", "--epochs", "2", "--km-heads", "4", "--train-fractions", "1.0",
                 "--out", str(out)]) == 0
    assert list(_metrics(out)["summary"]) == ["lm", "gnn", "lm+g+m"]


@pytest.mark.slow
def test_evaluate_entity_classification_embedded_default(tiny_bert_dir, tmp_path):
    metrics = _embedded_default("evaluate", "entity-classification", tiny_bert_dir, tmp_path / "ec", "--seeds", "2",
                                "--epochs", "3", "--km-heads", "4", "--train-fractions", "1.0,0.05")
    assert set(metrics["summary"]) == {"lm", "gnn", "lm+g+m"}
    assert metrics["leakage"]["descriptions_with_full_category_name"] == 0
    assert metrics["leakage"]["categories_spelled"] == []
    # KG' is the held-out 30% of the 300-synset subset, every entity labelled
    assert metrics["kg"]["entities"] == 90 and metrics["kg"]["labelled"] == 90
    for variant in ("lm", "gnn", "lm+g+m"):
        runs = metrics["runs"][variant]["0.05"]
        assert [r["seed"] for r in runs] == [0, 1] and all(r["train_size"] == 1 for r in runs)
        assert all(0.0 <= r["test_accuracy"] <= 1.0 for r in runs)


@pytest.mark.slow
def test_link_prediction_embedded_default(tiny_bert_dir, tmp_path):
    out = tmp_path / "lp"
    metrics = _embedded_default("finetune", "link-prediction", tiny_bert_dir, out, "--steps", "3", "--km-heads", "4",
                                "--max-eval", "20", "--scorers", "distmult,rotate")
    assert set(metrics["summary"]["lm+g+m"]) == {"distmult", "rotate"}
    # the embedded default holds out 10% of the subset's triples; 20 of them are evaluated
    for runs in metrics["runs"]["lm+g+m"].values():
        valid = runs[0]["valid"]
        assert valid["count"] == 40 and 0.0 < valid["mrr"] <= 1.0
        assert valid["hits@1"] <= valid["hits@3"] <= valid["hits@10"]
    assert len((out / "split" / "valid.txt").read_text().splitlines()) == 20


@pytest.mark.slow
def test_kgqa_embedded_default(tiny_bert_dir, tmp_path):
    metrics = _embedded_default("finetune", "kgqa", tiny_bert_dir, tmp_path / "qa", "--steps", "2", "--km-heads", "4",
                                "--max-questions", "60")
    assert metrics["data"]["questions"] == 60 and set(metrics["runs"]["lm+g+m"]) == {"full", "50%"}
    assert metrics["data"]["1-hop"] > 0 and metrics["data"]["2-hop"] > 0
    full, half = metrics["runs"]["lm+g+m"]["full"][0], metrics["runs"]["lm+g+m"]["50%"][0]
    assert full["test_answer_reachable"] == 1.0 and half["test_answer_reachable"] < 1.0
    assert all(0.0 <= v <= 1.0 for v in full["test"].values())


def test_kgqa_on_metaqa_files(metaqa_dir, tiny_bert_dir, tmp_path):
    out = tmp_path / "qa"
    assert main(["finetune", "kgqa", "--data", str(metaqa_dir), "--train", "train", "--encoder",
                 str(tiny_bert_dir), "--variant", "lm", "--steps", "2", "--kg-settings", "full", "--out", str(out)]) == 0
    assert _metrics(out)["data"]["questions"] == 3


@pytest.mark.slow
def test_relation_classification_embedded_default(tiny_bert_dir, tmp_path):
    metrics = _embedded_default("evaluate", "relation-classification", tiny_bert_dir, tmp_path / "rc", "--seeds", "1",
                                "--steps", "2", "--episodes", "5", "--settings", "2-1", "--train-relations", "1")
    assert list(metrics["summary"]) == ["lm"]
    assert len(metrics["train_relations"]) == 1 and len(metrics["eval_relations"]) >= 2
    assert not set(metrics["train_relations"]) & set(metrics["eval_relations"])
    accuracy = metrics["runs"]["lm"][0]["2-1"]
    assert abs(accuracy * 5 - round(accuracy * 5)) < 1e-9  # 5 episodes, one query each


def test_relation_classification_fewrel_and_10_way(shared_data, tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "rc"
    assert main(["evaluate", "relation-classification", "--data", str(shared_data / "fewrel"),
                 "--encoder", str(tiny_bert_dir), "--seeds", "1", "--steps", "2", "--episodes", "4",
                 "--settings", "5-1", "--out", str(out)]) == 0
    metrics = _metrics(out)
    assert list(metrics["train_relations"]) == ["P177", "P206", "P2094"] and len(metrics["eval_relations"]) == 5
    capsys.readouterr()
    assert main(["evaluate", "relation-classification", "--data", str(shared_data / "fewrel"),
                 "--encoder", str(tiny_bert_dir), "--settings", "10-1"]) == 1
    assert "10-way 1-shot cannot run" in capsys.readouterr().err
