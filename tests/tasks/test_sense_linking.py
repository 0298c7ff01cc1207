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
    from jaket.tasks.word_sense.run import evaluate_sense_linking, sense_examples
    from jaket.tasks.word_in_context.data import SenseInventory

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


def test_unseen_examples_are_the_texts_of_the_unseen_kg(tmp_path):
    """The texts of an unseen KG' (as ``jaket prepare wordnet-reference`` writes it): each example's
    gold is a KG' synset, every text mentioning one is used, and the KG'-only option keeps just
    KG' candidates (the gold among them)."""
    from jaket.kg.io import save_kg
    from jaket.kg.sources.registry import build_source
    from jaket.tasks.word_sense.run import unseen_examples
    from jaket.tasks.word_in_context.data import SenseInventory

    bundle = build_source("wordnet", max_entities=None, seed=0)
    kg, corpus = bundle.kg, bundle.corpus
    inventory = SenseInventory.for_wordnet(kg)
    mentioned = sorted({m.entity for mentions in corpus.mentions[:2000] for m in mentions})
    rng = np.random.default_rng(0)
    chosen = np.sort(rng.choice(mentioned, size=40, replace=False))
    # the unseen KG' with the chosen synsets and their same-lemma siblings, so some stay ambiguous
    siblings = {c for e in chosen for c in inventory.candidates(kg.entity_names[e], None)}
    prime, _ = kg.induced_subgraph(np.asarray(sorted(set(chosen.tolist()) | siblings), dtype=np.int64))
    save_kg(prime, tmp_path / "kg-unseen")
    unseen = set(prime.entity_ids)
    examples, info = unseen_examples(tmp_path, kg, inventory)
    expected = sum(any(kg.entity_ids[m.entity] in unseen for m in mentions) for mentions in corpus.mentions)
    assert info["texts_mentioning_unseen"] == expected > 0
    assert len(examples) == info["examples"] > 0
    assert all(kg.entity_ids[next(iter(e.gold))] in unseen for e in examples)
    assert any(kg.entity_ids[c] not in unseen for e in examples for c in e.candidates)  # seen senses compete
    only, _ = unseen_examples(tmp_path, kg, inventory, unseen_candidates_only=True)
    assert [e.gold for e in only] == [e.gold for e in examples]
    for e in only:
        assert e.gold <= set(e.candidates) and all(kg.entity_ids[c] in unseen for c in e.candidates)
