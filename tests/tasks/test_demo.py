"""``jaket demo --quick`` end to end on a tiny encoder: data split, brief pre-training, entity
classification of the unseen part for LM only, LM+G+M and JAKET, report + metrics."""

import json

import pytest

from jaket.cli import main


@pytest.mark.slow
def test_demo_quick(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--encoder", str(tiny_bert_dir), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| Model | 100% | 5% |" in printed and "JAKET" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["entity_classification"]["summary"]) == {"lm", "lm+g+m", "jaket"}
    assert metrics["leakage"]["descriptions_with_full_category_name"] == 0
    protocol = metrics["protocol"]
    assert protocol["heldout_entities"] > 0 and protocol["pretrain_entities"] > protocol["heldout_entities"]
    # pre-training never saw a held-out entity
    from jaket.kg.io import load_kg

    pre, unseen = load_kg(out / "kg-pretrain"), load_kg(out / "kg-unseen")
    assert set(pre.entity_ids).isdisjoint(unseen.entity_ids)
    report = (out / "report.md").read_text()
    assert "accuracy.png" in report and (out / "accuracy.png").exists()
    assert (out / "pretrain_loss.png").exists()
