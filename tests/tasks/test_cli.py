"""Each task runs from the command line; on the embedded default (WordNet) with a tiny encoder
and tiny sizes, and on given files (a KG folder, MetaQA, FewRel)."""

import json

import pytest

from jaket.cli import main
from jaket.kg.io import save_kg


def _metrics(out):
    return json.loads((out / "metrics.json").read_text())


def test_finetune_entity_classification_on_kg_dir(model_parts, small_kg, tiny_bert_dir, tmp_path, capsys):
    save_kg(small_kg, tmp_path / "kg")
    out = tmp_path / "out"
    assert main(["finetune", "entity-classification", "--kg", str(tmp_path / "kg"), "--encoder", str(tiny_bert_dir),
                 "--epochs", "3", "--km-heads", "4", "--train-fractions", "1.0", "--out", str(out)]) == 0
    assert "LM+G+M" in capsys.readouterr().out
    assert list(_metrics(out)["summary"]) == ["lm+g+m"]


def test_evaluate_without_model_drops_jaket_and_refuses_it(small_kg, tiny_bert_dir, tmp_path):
    save_kg(small_kg, tmp_path / "kg")
    with pytest.raises(SystemExit, match="needs --model"):
        main(["evaluate", "entity-classification", "--kg", str(tmp_path / "kg"), "--variants", "jaket"])


@pytest.mark.slow
def test_evaluate_entity_classification_embedded_default(model_parts, wordnet_source, tiny_bert_dir, tmp_path):
    out = tmp_path / "ec"
    assert main(["evaluate", "entity-classification", "--encoder", str(tiny_bert_dir), "--max-entities", "300",
                 "--seeds", "2", "--epochs", "3", "--km-heads", "4", "--train-fractions", "1.0,0.05",
                 "--out", str(out)]) == 0
    metrics = _metrics(out)
    assert set(metrics["summary"]) == {"lm", "gnn", "lm+g+m"}
    assert metrics["leakage"]["descriptions_with_full_category_name"] == 0
    assert metrics["leakage"]["categories_spelled"] == []


@pytest.mark.slow
def test_link_prediction_embedded_default(model_parts, wordnet_source, tiny_bert_dir, tmp_path):
    out = tmp_path / "lp"
    assert main(["finetune", "link-prediction", "--encoder", str(tiny_bert_dir), "--max-entities", "300",
                 "--steps", "3", "--km-heads", "4", "--max-eval", "20", "--scorers", "distmult,rotate",
                 "--out", str(out)]) == 0
    assert set(_metrics(out)["summary"]) == {"lm+g+m/distmult", "lm+g+m/rotate"}


@pytest.mark.slow
def test_kgqa_embedded_default(model_parts, wordnet_source, tiny_bert_dir, tmp_path):
    out = tmp_path / "qa"
    assert main(["finetune", "kgqa", "--encoder", str(tiny_bert_dir), "--max-entities", "300", "--steps", "2",
                 "--km-heads", "4", "--max-questions", "60", "--out", str(out)]) == 0
    metrics = _metrics(out)
    assert metrics["data"]["questions"] > 0 and set(metrics["runs"]["lm+g+m"]) == {"full", "50%"}


def test_kgqa_on_metaqa_files(model_parts, metaqa_dir, tiny_bert_dir, tmp_path):
    out = tmp_path / "qa"
    assert main(["finetune", "kgqa", "--metaqa", str(metaqa_dir), "--encoder", str(tiny_bert_dir),
                 "--variant", "lm", "--steps", "2", "--kg-settings", "full", "--out", str(out)]) == 0
    assert _metrics(out)["data"]["questions"] == 3


@pytest.mark.slow
def test_relation_classification_embedded_default(wordnet_source, tiny_bert_dir, tmp_path):
    out = tmp_path / "rc"
    assert main(["evaluate", "relation-classification", "--encoder", str(tiny_bert_dir), "--max-entities", "300",
                 "--seeds", "1", "--train-steps", "2", "--episodes", "5", "--settings", "2-1",
                 "--train-relations", "1", "--out", str(out)]) == 0
    assert list(_metrics(out)["summary"]) == ["lm"]


def test_relation_classification_fewrel_and_10_way(shared_data, tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "rc"
    assert main(["evaluate", "relation-classification", "--data", str(shared_data / "fewrel"),
                 "--encoder", str(tiny_bert_dir), "--seeds", "1", "--train-steps", "2", "--episodes", "4",
                 "--settings", "5-1", "--out", str(out)]) == 0
    metrics = _metrics(out)
    assert list(metrics["train_relations"]) == ["P177", "P206", "P2094"] and len(metrics["eval_relations"]) == 5
    with pytest.raises(SystemExit, match="10-way 1-shot cannot run"):
        main(["evaluate", "relation-classification", "--data", str(shared_data / "fewrel"),
              "--encoder", str(tiny_bert_dir), "--settings", "10-1"])
