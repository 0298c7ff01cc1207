"""The pre-training loop on the real JaketModel (tiny random BERT, toy KG)."""

import json

import numpy as np
import torch
from safetensors.torch import load_file

from jaket.cli import main

from .conftest import CONFIGS


def test_step_batches_follow_the_four_tasks(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "tasks.relation_pairs=8", "tasks.root_entities=10")
    kg, data = trainer.data.kg, trainer.data
    special = set(data.special_ids)
    removed_total = mentions_total = 0
    for position in range(12):
        batch = trainer.sample_batch(position)
        sub = batch.subgraph
        nodes = sub.node_ids.numpy()
        # relation prediction: the predicted triples and every other triple joining the same two
        # entities are hidden, so no edge of the subgraph joins a predicted pair
        assert len(batch.predicted_triples) > 0
        assert set(batch.predicted_triples.tolist()) <= set(batch.hidden_triples.tolist())
        assert not np.isin(sub.triple_id.numpy(), batch.hidden_triples).any()
        ends = {frozenset(p) for p in kg.triples[batch.predicted_triples][:, [0, 2]].tolist()}
        src, dst = nodes[sub.edge_index.numpy()]
        assert not any(frozenset((a, b)) in ends for a, b in zip(src, dst))
        heads, tails = nodes[batch.relation_head.numpy()], nodes[batch.relation_tail.numpy()]
        triples = kg.triples[batch.predicted_triples]
        assert (heads == triples[:, 0]).all() and (tails == triples[:, 2]).all()
        assert (batch.relation_label.numpy() == triples[:, 1]).all()
        # entity categories of walked entities
        cat_entities = nodes[batch.category_node.numpy()]
        assert (kg.entity_category[cat_entities] == batch.category_label.numpy()).all()
        # masked entity prediction: removed mentions get no node, the others their own entity
        fuse = batch.fuse_mask
        entities = batch.text.mention_entity
        assert (batch.mention_node[~fuse] == -1).all()
        assert (nodes[batch.mention_node[fuse].numpy()] == entities[fuse].numpy()).all()
        assert (batch.entity_candidates[:, 0] == entities[~fuse]).all()
        assert batch.entity_candidates.shape[1] == 1 + 2 + 8  # truth, hard, random (tiny config)
        removed_total += int((~fuse).sum())
        mentions_total += len(fuse)
        # masked tokens: never a special or padding token
        labels = batch.mlm_labels
        original = torch.where(labels != -100, labels, batch.text.input_ids)
        chosen = labels != -100
        assert chosen.any()
        assert not any(int(t) in special for t in original[chosen])
        assert (batch.text.attention_mask[chosen] == 1).all()
    assert 0 < removed_total < mentions_total


def test_masked_entity_accuracy_without_heldout_mentions_is_null_and_said(make_trainer, tmp_path, caplog):
    """No held-out mention: the figures cannot be computed, so summary.json holds null (strict JSON,
    never NaN) and a warning says why."""
    from jaket.atomic import write_json
    from jaket.train.evaluation import masked_entity_accuracy

    trainer = make_trainer(tmp_path)
    result = masked_entity_accuracy(trainer.model, trainer.data, max_texts=0, batch_size=4)
    assert result["heldout_mentions"] == 0
    assert result["masked_entity_accuracy"] is None and result["most_frequent_baseline"] is None
    assert "no mention in the 0 held-out text(s)" in caplog.text and "could not be computed" in caplog.text
    write_json(tmp_path / "summary.json", {"evaluation": result})
    text = (tmp_path / "summary.json").read_text()
    assert "NaN" not in text and json.loads(text)["evaluation"]["masked_entity_top10"] is None


def test_run_writes_outputs_and_the_relation_memory_flag_reaches_the_model(tiny_bert_dir, tmp_path):
    """`jaket pretrain --kg DIR --corpus FILE --model PATH --relation-memory` on the real model."""
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    save_kg(kg, tmp_path / "kg", corpus=corpus)
    out = tmp_path / "run"
    status = main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"),
                   "--kg", str(tmp_path / "kg"), "--corpus", str(tmp_path / "kg" / "corpus.jsonl"),
                   "--encoder", str(tiny_bert_dir), "--relation-memory", "--steps", "6",
                   "--out", str(out), "--no-progress"])
    assert status == 0
    config = (out / "config.yaml").read_text()
    assert "source: dir" in config and "use_relation_memory: true" in config
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 7))
    for name in ("category", "relation", "mlm", "entity"):
        assert all(np.isfinite(r[f"loss_{name}"]) and r[f"n_{name}"] > 0 for r in rows), name
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["losses"]) == {"category", "relation", "mlm", "entity"}
    import torch

    assert summary["machine"]["cpu"]["capability"] == torch.backends.cpu.get_cpu_capability()  # issue #31
    assert 0 <= summary["evaluation"]["masked_entity_accuracy"] <= 1
    assert summary["refresh_count"] == 3  # the fill, then before steps 2 and 4 (tiny: initial 2)
    assert (out / "loss_curves.png").stat().st_size > 0
    saved = json.loads((out / "model" / "config.json").read_text())
    assert saved["use_relation_memory"] is True  # --relation-memory reached the model
    card = (out / "model" / "README.md").read_text()  # the model card says how it was made
    assert "## Pre-training" in card and '"steps": 6' in card and "use_relation_memory" in card
    assert "## Data: what pre-training saw, and what it was kept from" in card
    from jaket.model.jaket import JaketModel

    model = JaketModel.from_pretrained(out / "model")
    assert model.use_relation_memory and model.memory.relations.abs().sum() > 0
    # the newest `keep_checkpoints` (2) checkpoints are kept: step 3 and the end
    steps = sorted(p.name for p in (out / "checkpoints").glob("step-*"))
    assert steps == ["step-0000003", "step-0000006"]
    assert (out / "checkpoints" / "latest").read_text().strip() == "step-0000006"
    state = load_file(out / "checkpoints" / "step-0000006" / "model.safetensors")
    for name, value in model.state_dict().items():
        if not name.startswith("language."):
            assert torch.equal(state[name], value), name


def test_a_run_tokenises_each_description_once(tiny_bert_dir, tmp_path, monkeypatch):
    """The description-window check at the start reads the memory's own table, which the steps'
    description rows and every refresh read too: each entity and relation description goes through
    the tokenizer once a run (they went three times: twice for the check, once for the memory)."""
    import jaket.kg.corpus as corpus_module
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    save_kg(kg, tmp_path / "kg", corpus=corpus)
    read: list[str] = []
    encode = corpus_module._window_encodings

    def counted(texts, tokenizer, max_length):
        read.extend(texts)
        return encode(texts, tokenizer, max_length)

    monkeypatch.setattr(corpus_module, "_window_encodings", counted)
    out = tmp_path / "run"
    assert main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--kg", str(tmp_path / "kg"),
                 "--encoder", str(tiny_bert_dir), "--steps", "6", "--set", "tasks.description_rows=4",
                 "--set", "memory.cache=false", "--out", str(out), "--no-progress"]) == 0
    assert sorted(read) == sorted([*map(str, kg.entity_descriptions), *map(str, kg.relation_descriptions)])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["refresh_count"] == 3  # the fill and two refreshes read the same table
    report = json.loads((out / "data_report.json").read_text())
    assert report["description_windows"]["entities"] == kg.num_entities


def test_cli_rejects_bad_input(tmp_path, capsys):
    assert main(["pretrain", "--kg", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 1  # a missing input: a data error
    assert "error: kg " in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: 5\noptim:\n  lm_lr: -1\n")
    assert main(["pretrain", "--config", str(bad), "--print-config"]) == 2
    assert f"{bad}:3: optim.lm_lr" in capsys.readouterr().err


def test_weights_switch_tasks_off(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "tasks.weight_relation=0", "tasks.weight_entity=0")
    values = trainer.train_step()
    assert "loss_relation" not in values and "loss_entity" not in values
    assert np.isfinite(values["loss_mlm"]) and np.isfinite(values["loss_category"])
    batch = trainer.sample_batch(0)
    assert batch.fuse_mask.all() and len(batch.predicted_triples) == 0


def test_refresh_uses_momentum_after_the_first_fill(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "model.memory_momentum=0.75")
    trainer.refresh_memory()  # the first fill replaces
    fresh = trainer.memory.entities.clone()
    assert fresh.abs().sum() > 0
    with torch.no_grad():
        trainer.memory.entities.zero_()
    trainer.refresh_memory()  # Eq. 12: m * old + (1 - m) * new, here old = 0
    assert torch.allclose(trainer.memory.entities, 0.25 * fresh, atol=1e-6)
    assert trainer.refresh_count == 2


def test_bf16_autocast_step(make_trainer, tmp_path):
    values = make_trainer(tmp_path, "bf16=true").train_step()
    assert all(np.isfinite(values[f"loss_{k}"]) for k in ("category", "relation", "mlm", "entity"))


def test_bf16_refresh_reads_through_a_bf16_copy_of_lm1(make_trainer, tmp_path):
    """Under bf16 the memory refresh reads the descriptions through a bf16 copy of the language
    module (faster on a CPU than autocast over the fp32 weights): the model's own parameters stay
    fp32 and unchanged, the tokenizer (and so the tokens) is shared, and the rows agree with an
    autocast pass to bf16's precision. Other precisions read through the model itself."""
    import torch.nn.functional as F

    trainer = make_trainer(tmp_path, "bf16=true", "memory.cache=false")
    language = trainer.model.language
    before = {n: p.detach().clone() for n, p in language.named_parameters()}
    reader, _ = trainer.memory_reader()
    assert reader is not language and reader.tokenizer is language.tokenizer
    assert {p.dtype for p in reader.parameters()} == {torch.bfloat16}
    assert not any(p.requires_grad for p in reader.parameters())
    assert trainer.memory_precision == "bf16-weights"
    trainer.refresh_memory()
    rows = trainer.memory.entities.float().clone()
    for name, p in language.named_parameters():
        assert p.dtype == torch.float32 and torch.equal(p.detach(), before[name]), name
    with trainer.accelerator.autocast():  # the same rows through the fp32 weights under autocast
        trainer.memory.refresh(language, trainer.data.kg, batch_size=trainer.config.memory.batch_size,
                               max_length=trainer.model.config.description_max_length, momentum=0.0)
    autocast = trainer.memory.entities.float()
    assert rows.abs().sum() > 0 and not torch.equal(rows, autocast)  # another pass...
    assert F.cosine_similarity(rows, autocast).min() > 0.999  # ...giving the same rows to bf16's precision

    plain = make_trainer(tmp_path / "fp32", "memory.cache=false")
    assert plain.memory_reader()[0] is plain.model.language and plain.memory_precision == "fp32"


def test_description_rows_train_lm1_through_the_knowledge_losses(make_trainer, tmp_path):
    """tasks.description_rows > 0: the category loss alone reaches LM1 through E^(0) of the seeds
    (Eq. 7 with gradients); with 0 (the paper) it cannot, the memory being read without them."""
    grads = {}
    for rows in (0, 6):
        trainer = make_trainer(tmp_path / str(rows), f"tasks.description_rows={rows}",
                               "tasks.weight_relation=0", "tasks.weight_mlm=0", "tasks.weight_entity=0")
        trainer.refresh_memory()
        batch = trainer.sample_batch(0)
        assert 0 < len(batch.description_local) <= rows if rows else len(batch.description_local) == 0
        if rows:
            nodes = batch.subgraph.node_ids[batch.description_local].numpy()
            tokens, _ = trainer.memory.description_tokens(trainer.model.language, trainer.data.kg,
                                                          trainer.config.model.description_max_length)
            expected = tokens.batch(nodes)[0]
            assert torch.equal(batch.description_tokens[0], expected)
        trainer.model.train()
        trainer.optimizer.zero_grad(set_to_none=True)
        total, losses, _ = trainer.engine(batch)
        assert set(losses) == {"category"}
        total.backward()
        grads[rows] = sum(float(p.grad.abs().sum()) for name, p in trainer.model.named_parameters()
                          if name.startswith("language.") and p.grad is not None)
    assert grads[0] == 0.0
    assert grads[6] > 0.0


def test_description_rows_replace_the_memory_rows_of_their_nodes(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "tasks.description_rows=4")
    trainer.refresh_memory()
    batch = trainer.sample_batch(3)
    model = trainer.model.eval()
    with torch.no_grad():
        rows = model.describe(*batch.description_tokens)
        plain = model.knowledge_forward(batch.subgraph, seeds_only=False)
        fresh = model.knowledge_forward(batch.subgraph, seeds_only=False,
                                        fresh_rows=(batch.description_local, rows + 1.0))
    changed = (plain - fresh).abs().sum(1) > 1e-6
    assert changed[batch.description_local].all()  # their own rows changed their output


def test_freeze_lm1_trains_lm2_and_the_km_but_not_lm1(make_trainer, tmp_path):
    """optim.freeze_lm1 (the "LM1 frozen during pre-training" ablation): after steps, LM1's
    tensors are unchanged while LM2's and the KM's moved."""
    trainer = make_trainer(tmp_path, "optim.freeze_lm1=true")
    language = trainer.model.language
    lm1 = {id(p) for p in language.lm1_parameters()}
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.refresh_memory()
    for step in range(2):
        trainer.train_step()
    after = dict(trainer.model.named_parameters())
    moved = {n for n, p in after.items() if not torch.equal(before[n], p.detach())}
    lm1_names = {n for n, p in after.items() if id(p) in lm1}
    assert lm1_names and not (moved & lm1_names)
    assert any(n.startswith("language.") for n in moved)  # LM2 (and its head) trained
    assert any(n.startswith("knowledge.") for n in moved)
