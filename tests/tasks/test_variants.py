"""The five settings: what each one starts from, and the `jaket` setting in every KG task."""

import numpy as np
import torch

from jaket.tasks import entity_classification as ec
from jaket.tasks import kgqa
from jaket.tasks import link_prediction as lp
from jaket.tasks.variants import VariantConfig, kg_memory, load_backbone


def _norm_weight(backbone) -> torch.Tensor:
    return backbone.knowledge.layers[0].norm.weight.detach()


def test_jaket_starts_from_the_saved_km_others_from_a_fresh_one(small_kg, tiny_bert_dir, tiny_jaket_dir):
    jaket = load_backbone(VariantConfig("jaket", pretrained=tiny_jaket_dir, km_heads=4))
    fresh = load_backbone(VariantConfig("lm+g+m", encoder=tiny_bert_dir, km_heads=4))
    assert torch.allclose(_norm_weight(jaket), torch.full_like(_norm_weight(jaket), 1.5))  # saved (+0.5)
    assert torch.allclose(_norm_weight(fresh), torch.ones_like(_norm_weight(fresh)))  # fresh init
    # the memory of the (unseen) KG is recomputed from its descriptions by the setting's LM1; the
    # tiny JAKET folder's encoder is the tiny BERT itself, so both memories agree
    a, b = kg_memory(jaket, small_kg, max_length=16), kg_memory(fresh, small_kg, max_length=16)
    assert a.entities.shape == (small_kg.num_entities, 32) and torch.allclose(a.entities, b.entities, atol=1e-5)
    # `lm` has no KM; `gnn` has no language module and a random memory, different per seed
    assert load_backbone(VariantConfig("lm", encoder=tiny_bert_dir)).knowledge is None
    gnn = load_backbone(VariantConfig("gnn", encoder=tiny_bert_dir, km_heads=4), need_language=False)
    assert gnn.language is None
    assert not torch.equal(kg_memory(gnn, small_kg, 0).entities, kg_memory(gnn, small_kg, 1).entities)


def test_jaket_entity_classification(small_kg, tiny_jaket_dir, tmp_path):
    config = ec.EntityClassificationConfig(variants=("jaket",), train_fractions=(1.0,), seeds=(0,), epochs=5,
                                           pretrained=tiny_jaket_dir, description_max_length=16)
    results = ec.run_entity_classification(small_kg, config, tmp_path)
    run = results["runs"]["jaket"]["1.0"][0]
    assert len(run["history"]["train_loss"]) == 5 and 0.0 <= run["test_accuracy"] <= 1.0


def test_jaket_link_prediction_and_kgqa(small_kg, tiny_jaket_dir, tmp_path):
    triples = np.asarray(small_kg.triples, dtype=np.int64)
    config = lp.LinkPredictionConfig(variants=("jaket",), scorers=("transe",), steps=3, batch_size=8,
                                     negatives=4, pretrained=tiny_jaket_dir, description_max_length=16)
    results = lp.run_link_prediction(small_kg, triples[:-6], {"valid": triples[-6:]}, config)
    assert results["runs"]["jaket/transe"][0]["valid"]["count"] == 12
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=30)
    qa = kgqa.KGQAConfig(variants=("jaket",), kg_settings=("full",), seeds=(0,), steps=2, batch_size=4,
                         pretrained=tiny_jaket_dir, description_max_length=16)
    out = kgqa.run_kgqa(small_kg, questions, qa, tmp_path)
    assert 0.0 <= out["runs"]["jaket"]["full"][0]["test"]["all"] <= 1.0
