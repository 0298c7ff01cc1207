"""The five settings: what each one starts from, and the `jaket` setting in every KG task."""

import numpy as np
import pytest
import torch

from jaket.tasks.entity_classification import run as ec
from jaket.tasks.kgqa import run as kgqa
from jaket.tasks.link_prediction import run as lp
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
    assert results["runs"]["jaket"]["transe"][0]["valid"]["count"] == 12
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=30)
    qa = kgqa.KGQAConfig(variants=("jaket",), kg_settings=("full",), seeds=(0,), steps=2, batch_size=4,
                         pretrained=tiny_jaket_dir, description_max_length=16)
    out = kgqa.run_kgqa(small_kg, questions, qa, tmp_path)
    assert 0.0 <= out["runs"]["jaket"]["full"][0]["test"]["all"] <= 1.0


def test_fresh_km_takes_the_pretrained_structure(tiny_bert_dir, tiny_jaket_dir):
    """RoBERTa+GNN(+M) "have the same model structure as JAKET": with a --model, a fresh KM gets
    its layers / heads unless they are given explicitly."""
    same = load_backbone(VariantConfig("lm+g+m", encoder=tiny_bert_dir, pretrained=tiny_jaket_dir))
    assert same.knowledge.layers[0].heads == 4 and len(same.knowledge.layers) == 2
    assert _norm_weight(same).eq(1.0).all()  # the structure, not the weights
    explicit = VariantConfig("gnn", encoder=tiny_bert_dir, pretrained=tiny_jaket_dir, km_heads=8, km_layers=1)
    assert explicit.km_structure() == {"layers": 1, "heads": 8, "composition": "add"}
    assert VariantConfig("gnn").km_structure() == {"layers": 2, "heads": 8, "composition": "add"}
    # the jaket setting always uses the saved KM
    assert VariantConfig("jaket", pretrained=tiny_jaket_dir, km_heads=8).km_structure()["heads"] == 4


def test_relation_memory_switch(small_kg, tiny_bert_dir):
    backbone = load_backbone(VariantConfig("lm+g+m", encoder=tiny_bert_dir, km_heads=4))
    on = kg_memory(backbone, small_kg, max_length=16)
    off = kg_memory(backbone, small_kg, max_length=16, relation_memory=False)
    assert on.relations.abs().sum() > 0 and off.relations.abs().sum() == 0
    assert torch.equal(on.entities, off.entities)
    # R = 0 is the KM's "no relation embeddings" path of pre-training
    ei, et = torch.tensor([[1, 2], [0, 0]]), torch.tensor([0, 4])
    x = on.entities[:3]
    assert torch.allclose(backbone.knowledge(x, ei, et, off.relations),
                          backbone.knowledge(x, ei, et, None, num_relations=small_kg.num_relations))


def test_lm1_layers_moves_the_fusion_of_a_base_encoder_setting_and_jaket_keeps_its_own(small_kg, tiny_bert_dir,
                                                                                      tiny_jaket_dir):
    """--lm1-layers (a job's ``lm1_layers``) sets where lm+g+m fuses the KG: its LM1 (and so the memory
    rows read through it) has that many layers; unset, half the encoder's; jaket keeps its saved split."""
    from jaket.tasks.kgqa import KGQAConfig

    half = load_backbone(VariantConfig("lm+g+m", encoder=tiny_bert_dir, km_heads=4))
    total = half.language.num_layers
    assert total >= 2 and half.language.lm1_layers == total // 2
    config = KGQAConfig(encoder=tiny_bert_dir, km_heads=4, lm1_layers=total // 2 - 1)
    moved = load_backbone(config.variant_config("lm+g+m"))
    assert moved.language.lm1_layers == total // 2 - 1
    rows = kg_memory(half, small_kg, max_length=16).entities, kg_memory(moved, small_kg, max_length=16).entities
    assert not torch.allclose(*rows)  # the descriptions read through one layer fewer
    saved = load_backbone(VariantConfig("jaket", pretrained=tiny_jaket_dir))
    jaket = load_backbone(KGQAConfig(pretrained=tiny_jaket_dir, lm1_layers=0).variant_config("jaket"))
    assert jaket.language.lm1_layers == saved.language.lm1_layers != 0


def test_lm1_layers_past_the_encoders_depth_is_refused_before_any_data_is_read(tiny_bert_dir, tmp_path, capsys):
    """The encoder's config.json gives its depth: a split past it is one line when the job is resolved (from the
    command line and from Python alike), before a data file is opened; jaket alone (its saved split) passes."""
    import json

    import jaket
    from jaket.cli import main
    from jaket.errors import UsageError

    total = json.loads((tiny_bert_dir / "config.json").read_text())["num_hidden_layers"]
    missing = tmp_path / "no-such-kg"  # never opened: the split is refused first
    status = main(["finetune", "entity-classification", "--encoder", str(tiny_bert_dir), "--kg", str(missing),
                   "--lm1-layers", str(total + 1), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == [f"error: lm1_layers={total + 1} outside [0, {total}] for the {total}-layer encoder "
                                   f"{tiny_bert_dir} (LM1 of lm+g+m)"]
    with pytest.raises(UsageError, match=rf"lm1_layers={total + 1} outside \[0, {total}\]"):
        jaket.pipeline("kgqa", encoder=tiny_bert_dir, variants=["lm+g"], lm1_layers=total + 1, out=tmp_path / "py")
    assert not (tmp_path / "out").exists() and not (tmp_path / "py").exists()
