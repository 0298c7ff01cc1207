import json

import numpy as np
import pytest

from jaket.tasks import kgqa
from jaket.tasks.kgqa_graph import QAGraph


def test_wordnet_questions_are_correct(small_kg):
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=200)
    assert {q.hops for q in questions} == {1, 2}
    triples = np.asarray(small_kg.triples)
    forward = {}
    for h, r, t in triples.tolist():
        forward.setdefault((h, r), set()).add(t)
    for q in questions:
        assert q.text[q.topic_start:q.topic_end] == small_kg.entity_names[q.topic]
        assert q.topic not in q.answers and q.answers
        if q.hops == 1 and "a kind of?" in q.text:
            assert set(q.answers) == forward[(q.topic, 0)]
        # every answer is within the question's hop count
        cands = QAGraph(small_kg).candidates(q.topic, q.hops, 10_000)
        assert set(q.answers) <= set(cands.tolist())


def test_kg_50_drops_half_and_is_seeded():
    a = kgqa.drop_triples_mask(10_000, 0.5, seed=1)
    assert abs(a.mean() - 0.5) < 0.03
    assert np.array_equal(a, kgqa.drop_triples_mask(10_000, 0.5, seed=1))


@pytest.mark.parametrize("variant", ["lm", "lm+g+m"])
def test_run_kgqa(small_kg, tiny_bert_dir, tmp_path, variant):
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=60)
    config = kgqa.KGQAConfig(variants=(variant,), seeds=(0,), steps=3, batch_size=4, encoder=tiny_bert_dir,
                             km_heads=4)
    results = kgqa.run_kgqa(small_kg, questions, config, tmp_path)
    for setting in ("full", "50%"):
        run = results["runs"][variant][setting][0]
        assert 0.0 <= run["test"]["all"] <= 1.0 and len(run["train_loss"]) == 3
    full = results["runs"][variant]["full"][0]["test_answer_reachable"]
    half = results["runs"][variant]["50%"][0]["test_answer_reachable"]
    assert full == 1.0 and half < 1.0
    assert "KG-Full 1-hop" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "metrics.json").read_text())["task"] == "kgqa"


def test_gnn_cannot_answer_questions(small_kg):
    from jaket.tasks.variants import VariantError

    with pytest.raises(VariantError):
        kgqa.run_kgqa(small_kg, kgqa.wordnet_questions(small_kg), kgqa.KGQAConfig(variants=("gnn",)))
