"""Sense linking: linked WordNet examples become sense examples (the gold among the candidates of
the word as written), and every scorer runs; the first-sense figure is recounted by hand."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def wordnet_subset():
    from jaket.kg.sources.registry import build_source

    bundle = build_source("wordnet", max_entities=400, seed=0)
    return bundle.kg, bundle.corpus


def test_examples_hold_their_gold_sense_and_scorers_run(wordnet_subset, tiny_bert_dir, tiny_jaket_dir):
    from jaket.tasks.sense_linking import evaluate_sense_linking, sense_examples
    from jaket.tasks.wic_data import SenseInventory

    kg, corpus = wordnet_subset
    inventory = SenseInventory.for_wordnet(kg)
    examples, info = sense_examples(corpus, kg, kg, inventory)
    assert info["examples"] == len(examples) > 50
    for e in examples:
        (gold,) = e.gold
        assert gold in e.candidates
        assert kg.entity_ids[gold].split(".")[1] in {kg.entity_ids[c].split(".")[1] for c in e.candidates}
    examples = examples[:40]
    results = evaluate_sense_linking(examples, kg, pretrained=tiny_jaket_dir, encoder=tiny_bert_dir,
                                     seeds=(0,), description_max_length=16)
    first = np.mean([e.candidates[0] in e.gold for e in examples])
    assert results["scorers"]["first sense"]["accuracy"] == pytest.approx(first)
    assert results["scorers"]["random"]["accuracy"] == pytest.approx(np.mean([1 / len(e.candidates) for e in examples]))
    for name in ("lesk", "lm", "lm+g+m", "jaket", "jaket (cosine)"):
        assert 0.0 <= results["scorers"][name]["accuracy"] <= 1.0
