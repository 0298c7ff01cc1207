"""JaketModel wiring, save/load, and embedding an unseen KG."""

import json

import numpy as np
import pytest
import torch

from jaket.kg.corpus import collate_texts
from jaket.kg.io import save_kg
from jaket.kg.sampling import sample_neighbors
from jaket.kg.toy import toy_kg
from jaket.model.jaket import JaketModel
from jaket.model.memory import EntityContextMemory


@pytest.fixture()
def model(toy_jaket):
    model, kg = toy_jaket(fanouts=(3, 3), description_max_length=32)
    model.attach_memory(EntityContextMemory.from_kg(model.language, kg, max_length=32), kg)
    return model.eval()


def _batch(model):
    kg, corpus = toy_kg()
    encoded = corpus.encode(model.language.tokenizer, max_length=32)
    text = collate_texts(encoded, [0, 1, 2], model.language.tokenizer.pad_token_id)
    subgraph = sample_neighbors(kg, text.mention_entity.numpy(), (3, 3), np.random.default_rng(0))
    mention_node = subgraph.seed_local
    return kg, text, subgraph, mention_node


def test_forward_fuses_kg_embeddings_only_at_fused_mentions(model):
    kg, text, subgraph, mention_node = _batch(model)
    m = len(mention_node)
    assert m >= 3
    with torch.no_grad():
        out = model(text, subgraph, mention_node, torch.ones(m, dtype=torch.bool), return_mlm_logits=True)
        none = model(text, subgraph, mention_node, torch.zeros(m, dtype=torch.bool))
        plain = model.encode_text(text)
    b, length = text.input_ids.shape
    assert out.hidden.shape == (b, length, model.hidden_size)
    assert out.entity_km.shape == (subgraph.num_seeds, model.hidden_size)
    assert out.mlm_logits.shape == (b, length, model.language.config.vocab_size)
    assert not torch.allclose(out.hidden, none.hidden)  # the KG changed Z^LM
    # with nothing fused and normalize="mentions", the model is exactly the plain encoder
    model.fusion.normalize = "mentions"
    with torch.no_grad():
        none = model(text, subgraph, mention_node, torch.zeros(m, dtype=torch.bool))
    valid = text.attention_mask.bool()
    assert torch.allclose(none.hidden[valid], plain[valid], atol=1e-5)


def test_gradients_flow_from_text_loss_into_the_knowledge_module(model):
    kg, text, subgraph, mention_node = _batch(model)
    model.train()
    out = model(text, subgraph, mention_node)
    out.hidden.pow(2).mean().backward()
    assert model.knowledge.layers[0].lin.weight.grad.abs().sum() > 0
    assert model.fusion.norm.weight.grad.abs().sum() > 0


def test_save_and_load_pretrained_round_trip(model, tmp_path):
    kg, text, subgraph, mention_node = _batch(model)
    with torch.no_grad():
        model.knowledge.layers[0].att_src.add_(0.5)  # not the init values
        expected = model(text, subgraph, mention_node).hidden
    folder = model.save_pretrained(tmp_path / "m")
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "config.json", "encoder", "jaket.safetensors", "memory"]
    assert json.loads((folder / "config.json").read_text())["model_type"] == "jaket"
    assert not list(folder.rglob("*.bin")) and not list(folder.rglob("*.pt"))  # safetensors only
    loaded = JaketModel.from_pretrained(folder).eval()
    assert loaded.memory is not None and torch.equal(loaded.memory.entities, model.memory.entities)
    with torch.no_grad():
        got = loaded(text, subgraph, mention_node).hidden
    assert torch.allclose(got, expected, atol=1e-6)
    model.save_pretrained(folder)  # saving over an existing folder replaces it
    assert (folder / "config.json").is_file() and not list(tmp_path.glob(".m*"))


def test_from_pretrained_rejects_a_plain_encoder_folder(tiny_bert_dir):
    with pytest.raises(ValueError, match="model_type"):
        JaketModel.from_pretrained(tiny_bert_dir)


def test_unseen_kg_is_embedded_from_its_descriptions(model, tmp_path):
    """A KG the model never saw: new ids, new names, new descriptions, new relations."""
    from jaket.kg.graph import KnowledgeGraph

    unseen = KnowledgeGraph(
        entity_ids=["x1", "x2", "x3"], entity_names=["comet", "orbit", "sun"],
        entity_descriptions=["comet: an icy body that orbits the sun", "orbit: a curved path",
                             "sun: the star at the center of the solar system"],
        entity_aliases=[[], [], []], entity_category=np.array([-1, -1, -1]), category_names=[],
        relation_ids=["follows"], relation_names=["follows"], relation_descriptions=["moves along"],
        triples=np.array([[0, 0, 1], [1, 0, 2]]))
    memory = model.memory_for(unseen, progress=False)
    assert memory is not model.memory and memory.entities.shape == (3, model.hidden_size)
    assert model.memory_for(unseen, progress=False) is memory  # cached per KG
    with torch.no_grad():
        e = model.encode_entities(unseen, [2, 0])
        assert e.shape == (2, model.hidden_size) and torch.isfinite(e).all()
    # through the command line: .npy + ids, loadable without pickle
    folder = model.save_pretrained(tmp_path / "m")
    save_kg(unseen, tmp_path / "kg")
    from jaket.cli import main

    assert main(["embed", "--model", str(folder), "--kg", str(tmp_path / "kg"),
                 "--out", str(tmp_path / "e.npy")]) == 0
    rows = np.load(tmp_path / "e.npy", allow_pickle=False)
    assert rows.shape == (3, model.hidden_size)
    assert json.loads((tmp_path / "e.npy.ids.json").read_text()) == ["x1", "x2", "x3"]
    assert np.allclose(rows[[2, 0]], e.numpy(), atol=1e-5)


def test_embed_reports_a_missing_model_folder(tmp_path, capsys):
    from jaket.cli import main

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    assert main(["embed", "--model", str(tmp_path / "nope"), "--kg", str(tmp_path / "kg"),
                 "--out", str(tmp_path / "e.npy")]) == 1
    assert "no config.json" in capsys.readouterr().err
