"""JaketModel.encode_texts (text in, Z^LM and mention embeddings out) and the KG identity check of
forward (a memory never silently serves another KG)."""

import json

import numpy as np
import pytest
import torch

from jaket.kg.corpus import collate_texts
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import save_kg
from jaket.kg.linking import EntityLinker
from jaket.kg.sampling import sample_neighbors
from jaket.kg.toy import toy_kg
from jaket.model.jaket import JaketModel, KGMismatchError

TEXTS = ["The wolf hunts in the forest near the river.", "A cow eats grass on the farm.",
         "Nothing to link here."]


@pytest.fixture()
def model(toy_jaket):
    model, _ = toy_jaket(fanouts=(10, 10), description_max_length=32)
    return model.eval()


def _permuted(kg: KnowledgeGraph, order: np.ndarray) -> KnowledgeGraph:
    """The same graph with its entities stored in another order (new index = position in order)."""
    new_of_old = np.empty(kg.num_entities, dtype=np.int64)
    new_of_old[order] = np.arange(kg.num_entities)
    triples = kg.triples.astype(np.int64).copy()
    triples[:, 0], triples[:, 2] = new_of_old[triples[:, 0]], new_of_old[triples[:, 2]]
    pick = order.tolist()
    return KnowledgeGraph(
        entity_ids=[kg.entity_ids[i] for i in pick], entity_names=[kg.entity_names[i] for i in pick],
        entity_descriptions=[kg.entity_descriptions[i] for i in pick],
        entity_aliases=[list(kg.entity_aliases[i]) for i in pick], entity_category=kg.entity_category[order],
        category_names=list(kg.category_names), relation_ids=list(kg.relation_ids),
        relation_names=list(kg.relation_names), relation_descriptions=list(kg.relation_descriptions),
        triples=triples)


def test_encode_texts_is_the_whole_pipeline_in_one_call(model):
    kg, _ = toy_kg()
    out = model.encode_texts(TEXTS, kg, max_length=32)
    # linked mentions: their surface is an entity name or alias, and they are the linker's
    linked = EntityLinker.from_kg(kg).link_texts(TEXTS)
    assert [[(m.start, m.end, m.entity) for m in ms] for ms in out.mentions] == \
        [[(m.start, m.end, m.entity) for m in ms] for ms in linked.mentions]
    assert {kg.entity_ids[m.entity] for m in out.mentions[0]} == {"wolf", "forest", "river"}
    assert out.mentions[2] == [] and out.mention_embeddings[2].shape == (0, model.hidden_size)
    for i, text in enumerate(TEXTS):
        assert out.tokens[i].shape == (len(out.input_ids[i]), model.hidden_size)
        assert out.offsets[i].shape == (len(out.input_ids[i]), 2)
        for m, (s, o), row in zip(out.mentions[i], out.mention_spans[i], out.mention_embeddings[i]):
            surface = text[m.start:m.end].lower()
            assert surface in [kg.entity_names[m.entity]] + list(kg.entity_aliases[m.entity])
            assert torch.allclose(row, (out.tokens[i][s] + out.tokens[i][o]) / 2)
    # the same as the eight steps written out by hand
    memory = model.memory_for(kg, progress=False)
    encoded = linked.encode(model.language.tokenizer, max_length=32)
    batch = collate_texts(encoded, range(len(TEXTS)), model.language.tokenizer.pad_token_id)
    subgraph = sample_neighbors(kg, batch.mention_entity.numpy(), model.config.fanouts, np.random.default_rng(0))
    with torch.no_grad():
        hidden = model(batch, subgraph, subgraph.seed_local, memory=memory).hidden
    for i in range(len(TEXTS)):
        assert torch.allclose(out.tokens[i], hidden[i, :len(out.input_ids[i])], atol=1e-6)
    # fusing changed the mentions' states: not the plain encoder
    with torch.no_grad():
        plain = model.encode_text(batch)
    assert not torch.allclose(plain[0, :len(out.input_ids[0])], out.tokens[0], atol=1e-3)


def test_entities_are_given_and_returned_by_id(model):
    """encode_entities takes entity ids (or indices, or both); encode_texts' mentions carry the id."""
    kg, _ = toy_kg()
    by_id = model.encode_entities(kg, ["wolf", "dog"])
    wolf, dog = kg.entity_index("wolf"), kg.entity_index("dog")
    assert torch.equal(by_id, model.encode_entities(kg, [wolf, dog]))
    assert torch.equal(by_id, model.encode_entities(kg, np.array([wolf, dog])))
    assert torch.equal(by_id, model.encode_entities(kg, ["wolf", dog]))
    assert torch.allclose(model.encode_entities(kg, "wolf"), by_id[:1], atol=1e-5)  # one id alone
    with pytest.raises(ValueError, match="unknown entity id 'py'"):
        model.encode_entities(kg, ["py", "rust"])
    with pytest.raises(ValueError, match="entity index 40 is out of range"):
        model.encode_entities(kg, [40])
    out = model.encode_texts(TEXTS, kg, max_length=32)
    assert out.entity_ids[0] == [m.entity_id for m in out.mentions[0]]
    assert set(out.entity_ids[0]) == {"wolf", "forest", "river"} and out.entity_ids[2] == []
    assert all(kg.entity_ids[m.entity] == m.entity_id for ms in out.mentions for m in ms)  # indices stay


def test_forward_refuses_a_subgraph_of_another_kg(model):
    """The reported bug: a memory attached for one KG silently served a reordered copy of it."""
    kg, corpus = toy_kg()
    model.attach_memory(model.memory_for(kg, progress=False), kg)
    reordered = _permuted(kg, np.random.default_rng(1).permutation(kg.num_entities))
    assert reordered.fingerprint() != kg.fingerprint()
    encoded = corpus.encode(model.language.tokenizer, max_length=32)
    batch = collate_texts(encoded, [0, 1], model.language.tokenizer.pad_token_id)
    subgraph = sample_neighbors(reordered, batch.mention_entity.numpy(), (3, 3), np.random.default_rng(0))
    with pytest.raises(KGMismatchError, match="another KG .*memory_for"):
        model(batch, subgraph, subgraph.seed_local)
    with pytest.raises(KGMismatchError):
        model.attach_memory(model.memory, reordered)
    # encode_texts recomputes the reordered KG's own memory: the same embeddings as on the original
    a = model.encode_texts(TEXTS, kg, max_length=32)
    b = model.encode_texts(TEXTS, reordered, max_length=32)
    for x, y in zip(a.tokens, b.tokens):
        assert torch.allclose(x, y, atol=1e-5)
    # a graph with triples dropped indexes the same entities: same fingerprint, accepted
    fewer = kg.drop_triples(np.arange(kg.num_triples) % 2 == 0)
    assert fewer.fingerprint() == kg.fingerprint()
    with torch.no_grad():
        model(batch, sample_neighbors(fewer, batch.mention_entity.numpy(), (3, 3), np.random.default_rng(0)),
              subgraph.seed_local)


def test_fingerprint_is_the_same_for_a_loaded_kg(tmp_path):
    from jaket.kg.io import load_kg

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    assert load_kg(tmp_path / "kg").fingerprint() == kg.fingerprint()  # parsed
    assert load_kg(tmp_path / "kg", lazy_strings=True).fingerprint() == kg.fingerprint()  # cached, lazy
    renamed = KnowledgeGraph(**{**{f: getattr(kg, f) for f in (
        "entity_names", "entity_descriptions", "entity_aliases", "entity_category", "category_names",
        "relation_ids", "relation_names", "relation_descriptions", "triples")},
        "entity_ids": [f"x{i}" for i in range(kg.num_entities)]})
    assert renamed.fingerprint() != kg.fingerprint()


def test_saved_memory_keeps_its_kg(model, tmp_path):
    kg, _ = toy_kg()
    model.attach_memory(model.memory_for(kg, progress=False), kg)
    loaded = JaketModel.from_pretrained(model.save_pretrained(tmp_path / "m"))
    assert loaded.memory.kg_fingerprint == kg.fingerprint()
    other = _permuted(kg, np.arange(kg.num_entities)[::-1].copy())
    subgraph = sample_neighbors(other, [0, 1], (2,), np.random.default_rng(0))
    with pytest.raises(KGMismatchError):
        loaded.knowledge_forward(subgraph)


def test_embed_texts_command(model, tmp_path):
    from jaket.cli import main

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    folder = model.save_pretrained(tmp_path / "m", save_memory=False)
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "texts.npy"
    assert main(["embed", "--model", str(folder), "--kg", str(tmp_path / "kg"), "--texts",
                 str(tmp_path / "texts.txt"), "--out", str(out), "--max-length", "32"]) == 0
    mentions = [json.loads(line) for line in (tmp_path / "texts.npy.mentions.jsonl").read_text().splitlines()]
    rows = np.load(tmp_path / "texts.npy.mention-vectors.npy", allow_pickle=False)
    linked = EntityLinker.from_kg(kg).link_texts(TEXTS)
    assert rows.shape == (len(mentions), model.hidden_size) and len(mentions) == linked.num_mentions
    assert [m["entity"] for m in mentions if m["text"] == 0] == ["wolf", "forest", "river"]
    assert all(TEXTS[m["text"]][m["start"]:m["end"]] == m["surface"] for m in mentions)
    tokens = np.load(tmp_path / "texts.npy.tokens.npy", allow_pickle=False)
    texts = [json.loads(line) for line in (tmp_path / "texts.npy.texts.jsonl").read_text().splitlines()]
    assert [t["text"] for t in texts] == TEXTS and texts[-1]["token_rows"][1] == len(tokens)
    expected = model.encode_texts(TEXTS, load_kg_dir(tmp_path / "kg"), max_length=32)
    assert np.allclose(rows[:3], expected.mention_embeddings[0].numpy(), atol=1e-5)
    first = texts[1]["token_rows"]
    assert np.allclose(tokens[first[0]:first[1]], expected.tokens[1].numpy(), atol=1e-5)


def test_embed_texts_writes_the_text_vectors_to_out_and_names_the_files_beside_it(model, tmp_path, capsys):
    """Issue #40: with --texts, OUT holds what was asked for, one vector per text (it held the
    mentions' vectors, an empty table for texts without a mention); the summary names every file
    written beside it, and those are refused as existing outputs too, before any work."""
    from jaket.cli import main

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    folder = model.save_pretrained(tmp_path / "m", save_memory=False)
    (tmp_path / "texts.txt").write_text("nothing known here\nnor here\n")  # no mention at all
    out = tmp_path / "texts.npy"
    argv = ["embed", "--model", str(folder), "--kg", str(tmp_path / "kg"), "--texts", str(tmp_path / "texts.txt"),
            "--out", str(out), "--max-length", "32"]
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert np.load(out, allow_pickle=False).shape == (2, model.hidden_size)
    assert summary["embeddings"] == str(out) and summary["texts"] == 2 and summary["mentions"] == 0
    beside = {name: tmp_path / f"texts.npy.{suffix}" for name, suffix in (
        ("mention_vectors", "mention-vectors.npy"), ("mentions", "mentions.jsonl"), ("tokens", "tokens.npy"),
        ("texts", "texts.jsonl"))}
    assert summary["companions"] == {name: str(path) for name, path in beside.items()}
    assert all(path.is_file() for path in beside.values())
    assert np.load(beside["mention_vectors"], allow_pickle=False).shape == (0, model.hidden_size)
    assert "texts.npy.mention-vectors.npy, texts.npy.mentions.jsonl" in captured.err
    out.unlink()  # OUT gone, a companion left: still an earlier output
    assert main(argv) == 2
    assert f"error: --out {out}: {beside['mention_vectors']} exists; pass --overwrite" in capsys.readouterr().err
    assert not out.exists()
    assert main(argv + ["--overwrite"]) == 0 and out.is_file()


def load_kg_dir(path):
    from jaket.kg.io import load_kg

    return load_kg(path)


def test_embed_writes_one_vector_per_text_normalized_and_as_parquet(model, tmp_path):
    """One vector per text (the mean of its non-special tokens' Z^LM), --normalize, and
    --format parquet with each row's ids beside its vector."""
    import pyarrow.parquet as pq

    from jaket.cli import main

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    folder = model.save_pretrained(tmp_path / "m", save_memory=False)
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    common = ["embed", "--model", str(folder), "--kg", str(tmp_path / "kg"), "--max-length", "32"]
    assert main(common + ["--texts", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "t.npy")]) == 0
    vectors = np.load(tmp_path / "t.npy", allow_pickle=False)
    expected = model.encode_texts(TEXTS, load_kg_dir(tmp_path / "kg"), max_length=32)
    special = set(model.language.tokenizer.all_special_ids)
    for i in range(len(TEXTS)):
        content = [t not in special for t in expected.input_ids[i].tolist()]
        assert np.allclose(vectors[i], expected.tokens[i][content].mean(0).numpy(), atol=1e-5)
    assert main(common + ["--texts", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "t.parquet"),
                          "--format", "parquet", "--normalize"]) == 0
    texts = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert [row["text"] for row in texts] == TEXTS
    unit = np.array([row["vector"] for row in texts])
    assert np.allclose(unit, vectors / np.linalg.norm(vectors, axis=1, keepdims=True), atol=1e-5)
    mentions = pq.read_table(tmp_path / "t.parquet.mention-vectors.parquet").to_pylist()
    assert [m["entity"] for m in mentions if m["text"] == 0] == ["wolf", "forest", "river"]
    assert np.allclose(np.linalg.norm([m["vector"] for m in mentions], axis=1), 1, atol=1e-5)
    assert main(common + ["--out", str(tmp_path / "e.parquet"), "--format", "parquet"]) == 0
    entities = pq.read_table(tmp_path / "e.parquet").to_pylist()
    assert [row["entity"] for row in entities] == list(kg.entity_ids)
    assert len(entities[0]["vector"]) == model.hidden_size


def test_embed_faiss_index_finds_the_nearest_entities_of_a_text(model, tmp_path):
    """--faiss-index writes an inner-product index over the unit-length vectors beside them (it
    implies --normalize): its rows are the written vectors, and a text vector searched in the
    entity index gets the entities ranked by cosine, the same ranking numpy gives."""
    faiss = pytest.importorskip("faiss")
    from jaket.cli import main

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    folder = model.save_pretrained(tmp_path / "m", save_memory=False)
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    common = ["embed", "--model", str(folder), "--kg", str(tmp_path / "kg"), "--max-length", "32"]
    assert main(common + ["--out", str(tmp_path / "e.npy"), "--faiss-index"]) == 0
    entities = np.load(tmp_path / "e.npy", allow_pickle=False)
    ids = json.loads((tmp_path / "e.npy.ids.json").read_text())
    assert np.allclose(np.linalg.norm(entities, axis=1), 1, atol=1e-5)
    index = faiss.read_index(str(tmp_path / "e.npy.faiss"))
    assert index.ntotal == len(ids) == kg.num_entities and index.d == model.hidden_size
    assert index.metric_type == faiss.METRIC_INNER_PRODUCT
    assert np.allclose(index.reconstruct_n(0, index.ntotal), entities)
    assert main(common + ["--texts", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "t.npy"),
                          "--faiss-index"]) == 0
    texts = np.load(tmp_path / "t.npy", allow_pickle=False)
    assert faiss.read_index(str(tmp_path / "t.npy.faiss")).ntotal == len(TEXTS)
    mentions = faiss.read_index(str(tmp_path / "t.npy.mention-vectors.faiss"))
    assert mentions.ntotal == len(np.load(tmp_path / "t.npy.mention-vectors.npy", allow_pickle=False)) > 0
    scores, rows = index.search(texts, 3)
    cosine = texts @ entities.T
    assert np.allclose(scores, np.sort(cosine, axis=1)[:, ::-1][:, :3], atol=1e-5)
    assert [[ids[r] for r in row] for row in rows] == [[ids[r] for r in np.argsort(-c)[:3]] for c in cosine]


def test_embed_names_the_extra_of_a_missing_package_before_the_model_runs(model, tmp_path, monkeypatch, capsys):
    """Without faiss (or pyarrow), --faiss-index (--format parquet) fails in one line naming the
    extra to install, and writes nothing."""
    import sys

    from jaket.cli import main

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    folder = model.save_pretrained(tmp_path / "m", save_memory=False)
    common = ["embed", "--model", str(folder), "--kg", str(tmp_path / "kg")]
    for module, flags, extra in (("faiss", ["--faiss-index"], "faiss"),
                                 ("pyarrow", ["--format", "parquet"], "parquet")):
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, module, None)
            patch.setitem(sys.modules, "pyarrow.parquet", None)
            assert main(common + ["--out", str(tmp_path / f"{module}.out"), *flags]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: {module} is not installed: pip install 'jaket[{extra}]'"]
        assert not list(tmp_path.glob(f"{module}.out*"))


def test_a_batch_size_below_one_or_a_text_that_is_no_string_is_refused(model):
    """``batch_size=-1`` encoded nothing and returned an empty result for every text (0: ``range()``'s
    error); a ``None`` among the texts failed inside the linker's regular expressions."""
    kg, _ = toy_kg()
    for batch_size in (0, -1):
        with pytest.raises(ValueError, match=f"batch_size must be an integer of at least 1, got {batch_size}"):
            model.encode_texts(TEXTS, kg, batch_size=batch_size)
        with pytest.raises(ValueError, match=f"batch_size must be an integer of at least 1, got {batch_size}"):
            model.encode_entities(kg, ["wolf"], batch_size=batch_size)
    with pytest.raises(TypeError, match="texts\\[1\\]: expected a string, got NoneType"):
        model.encode_texts([TEXTS[0], None], kg)
    assert model.encode_texts(TEXTS[0], kg).texts == [TEXTS[0]]  # one string alone is one text, as before
