"""Word-in-context: WiC and JSONL readers, the sense inventory, the KG side of the model (candidates
really change the prediction, the restricted sense KG is exact), finetune -> save -> predict and
the evaluate comparison on tiny data (tiny BERT, a tiny WordNet-shaped sense KG)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from jaket.cli import main
from jaket.kg.errors import KGFormatError
from jaket.kg.graph import KnowledgeGraph
from jaket.senses.inventory import SenseInventory
from jaket.tasks.word_in_context.data import WordPair, load_pairs, load_pairs_jsonl, load_wic

# a tiny WordNet-shaped KG: two lemmas with several senses each, and their neighbours
_SENSES = [("bank.n.01", "bank", [], "sloping land beside a body of water"),
           ("depository_financial_institution.n.01", "depository financial institution", ["bank"],
            "a financial institution that accepts deposits"),
           ("bank.n.03", "bank", [], "a long ridge or pile"),
           ("run.v.01", "run", [], "move fast by using one's feet"),
           ("run.v.02", "run", ["operate"], "direct or control; projects, businesses"),
           ("run.n.01", "run", ["tally"], "a score in baseball"),
           ("river.n.01", "river", [], "a large natural stream of water"),
           ("money.n.01", "money", [], "the most common medium of exchange"),
           ("slope.n.01", "slope", [], "an elevated geological formation"),
           ("business.n.01", "business", [], "a commercial or industrial enterprise"),
           ("travel.v.01", "travel", [], "change location; move")]
_EDGES = [(0, 6), (0, 8), (1, 7), (1, 9), (2, 8), (3, 10), (4, 9), (6, 8), (7, 9)]


@pytest.fixture(scope="module")
def sense_kg() -> KnowledgeGraph:
    return KnowledgeGraph(
        entity_ids=[s[0] for s in _SENSES], entity_names=[s[1] for s in _SENSES],
        entity_descriptions=[f"{s[1]}: {s[3]}" for s in _SENSES], entity_aliases=[s[2] for s in _SENSES],
        entity_category=np.zeros(len(_SENSES), dtype=np.int64), category_names=["noun.Tops"],
        relation_ids=["hypernym"], relation_names=["hypernym"], relation_descriptions=["is a kind of"],
        triples=np.asarray([(h, 0, t) for h, t in _EDGES]))


@pytest.fixture(scope="module")
def sense_kg_dir(sense_kg, tmp_path_factory):
    from jaket.kg.io import save_kg

    return save_kg(sense_kg, tmp_path_factory.mktemp("senses") / "kg")


def _pairs(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    templates = {("bank", "n"): [("they fished from the bank of the river", True),
                                 ("she deposited money at the bank", False)],
                 ("run", "v"): [("I run every morning in the park", True), ("they run a small business", False)]}
    rows = []
    for i in range(n):
        (lemma, pos), options = list(templates.items())[i % 2]
        a, b = options[rng.integers(2)], options[rng.integers(2)]
        s1, s2 = a[0].index(lemma), b[0].index(lemma)
        rows.append({"lemma": lemma, "pos": pos, "text1": a[0], "start1": s1, "end1": s1 + len(lemma),
                     "text2": b[0], "start2": s2, "end2": s2 + len(lemma), "label": a[1] == b[1]})
    return rows


@pytest.fixture()
def pair_files(tmp_path):
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in _pairs(24, 0)), encoding="utf-8")
    dev.write_text("".join(json.dumps(r) + "\n" for r in _pairs(10, 1)), encoding="utf-8")
    return train, dev


# ----------------------------------------------------------------------------- readers


def test_wic_format_gives_character_spans_and_labels(tmp_path):
    data = tmp_path / "dev.data.txt"
    data.write_text("carry\tV\t2-1\tYou must carry your camping gear .\tSound carries well over water .\n"
                    "bank\tN\t0-4\tbank of the river\tI went to the bank .\n", encoding="utf-8")
    (tmp_path / "dev.gold.txt").write_text("F\nT\n", encoding="utf-8")
    first, second = load_wic(data)
    assert first.text1[first.start1:first.end1] == "carry" and first.text2[first.start2:first.end2] == "carries"
    assert (first.lemma, first.pos, first.label) == ("carry", "v", False)
    assert second.text2[second.start2:second.end2] == "bank" and second.label is True
    assert load_pairs(data, tmp_path / "dev.gold.txt") == [first, second]


def test_wic_and_jsonl_errors_name_file_and_line(tmp_path):
    data = tmp_path / "x.data.txt"
    data.write_text("bank\tN\t0-9\tbank of the river\tthe bank\nonly\tthree\tfields\n", encoding="utf-8")
    with pytest.raises(KGFormatError) as error:
        load_wic(data)
    assert str(error.value).splitlines() == [
        f"{data}:1: token position outside its sentence (0-9)",
        f"{data}:2: expected 5 tab-separated fields (lemma, POS, i-j, sentence1, sentence2), got 3"]
    gold = tmp_path / "x.gold.txt"
    data.write_text("bank\tN\t0-1\tbank of the river\tthe bank\n", encoding="utf-8")
    gold.write_text("yes\n", encoding="utf-8")
    with pytest.raises(KGFormatError, match=r"x.gold.txt:1: expected T or F, got 'yes'"):
        load_wic(data)
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"lemma": "bank", "text1": "bank", "start1": 0, "end1": 9, "text2": "a bank", '
                     '"start2": 2, "end2": 6}\n{"lemma": "x"}\n{"lemma": "run", "pos": "q", "text1": "run", '
                     '"start1": 0, "end1": 3, "text2": "run", "start2": 0, "end2": 3, "label": "T"}\n',
                     encoding="utf-8")
    with pytest.raises(KGFormatError) as error:
        load_pairs_jsonl(jsonl)
    assert str(error.value).splitlines() == [
        f"{jsonl}:1: span [0, 9) of text1 is empty or outside the text (length 4)",
        f"{jsonl}:2: missing field(s) text1, start1, end1, text2, start2, end2",
        f"{jsonl}:3: label must be true, false or absent, not 'T'",
        f"{jsonl}:3: unknown part of speech 'q' (one of n, v, a, r or noun, verb, adj, adv)"]


def test_sense_inventory_matches_names_and_aliases_by_part_of_speech(sense_kg):
    inventory = SenseInventory(sense_kg)
    ids = lambda found: [sense_kg.entity_ids[i] for i in found]  # noqa: E731
    assert ids(inventory.candidates("Bank", "n")) == ["bank.n.01", "depository_financial_institution.n.01",
                                                      "bank.n.03"]
    assert ids(inventory.candidates("run", "v")) == ["run.v.01", "run.v.02"]
    assert ids(inventory.candidates("run")) == ["run.v.01", "run.v.02", "run.n.01"]
    assert inventory.candidates("tally", "v") == [] and ids(inventory.candidates("tally", "n")) == ["run.n.01"]
    ordered = SenseInventory(sense_kg, {("bank", "n"): ["bank.n.03", "bank.n.01"]})
    assert ids(ordered.candidates("bank", "n"))[:2] == ["bank.n.03", "bank.n.01"]


# ----------------------------------------------------------------------------- the model


def _model_and_data(tiny_jaket_dir, sense_kg, variant="jaket", fanouts=(3, 3)):
    from jaket.tasks.word_in_context.job import WordInContextConfig
    from jaket.tasks.word_in_context.model import build_model, encode_pairs, sense_graph

    config = WordInContextConfig(pretrained=tiny_jaket_dir, description_max_length=16, fanouts=fanouts,
                                 km_heads=4)
    model = build_model(config, variant, 0).eval()
    pairs = [WordPair(**r) for r in _pairs(4, 0)]
    data = encode_pairs(pairs, model.language.tokenizer, SenseInventory(sense_kg), 32, 8)
    graph = sense_graph(model, sense_kg, config) if model.uses_kg else None
    return model, data, graph


def test_the_candidate_senses_change_what_the_km_settings_predict(tiny_jaket_dir, sense_kg):
    for variant in ("jaket", "lm+g+m"):
        model, data, graph = _model_and_data(tiny_jaket_dir, sense_kg, variant)
        pad = int(model.language.tokenizer.pad_token_id)
        with torch.no_grad():
            logits, p = model(data.batch(np.arange(4), pad), graph, np.random.default_rng(0))
            assert p.shape[0] == 8 and torch.allclose(p.sum(1), torch.ones(8), atol=1e-5)
            # each row's probability mass sits on its own candidates only
            assert bool(((p > 0) <= torch.from_numpy(data.candidates[np.r_[0:4, 4:8]] >= 0)).all())
            other = data.batch(np.arange(4), pad)
            other["candidates"] = torch.roll(other["candidates"], 1, dims=1)
            other["candidates"][:, 0] = -1
            changed, _ = model(other, graph, np.random.default_rng(0))
        assert not torch.allclose(logits, changed), variant


def test_lm_only_ignores_the_kg(tiny_jaket_dir, sense_kg):
    model, data, _ = _model_and_data(tiny_jaket_dir, sense_kg, "lm")
    pad = int(model.language.tokenizer.pad_token_id)
    batch = data.batch(np.arange(4), pad)
    with torch.no_grad():
        logits, p = model(batch, None)
        batch["candidates"][:] = -1
        again, _ = model(batch, None)
    assert p is None and torch.equal(logits, again)


def test_restricting_the_sense_kg_keeps_every_candidate_embedding(tiny_jaket_dir, sense_kg):
    """With fan-outs above every degree the KM reads all neighbours, so E^KM over the restricted
    KG must equal E^KM over the whole KG."""
    import dataclasses

    from jaket.senses.graph import SenseGraph
    from jaket.tasks.word_in_context.model import restrict_to_candidates

    model, data, graph = _model_and_data(tiny_jaket_dir, sense_kg, "jaket", fanouts=(50, 50))
    full = model.km_rows(graph, torch.tensor([3, 4]), np.random.default_rng(0))
    small = dataclasses.replace(data, candidates=np.where(data.candidates >= 3, data.candidates, -1))
    sub, index_of = restrict_to_candidates(sense_kg, [small], 2)
    assert sub.num_entities < sense_kg.num_entities  # the bank senses' neighbourhood is gone
    assert [sub.entity_ids[i] for i in index_of[index_of >= 0]] == \
        [e for e, i in zip(sense_kg.entity_ids, index_of) if i >= 0]
    keep = [sense_kg.entity_ids.index(e) for e in sub.entity_ids]
    memory = type(graph.memory)(graph.memory.entities[keep], graph.memory.relations)
    local = torch.tensor([sub.entity_ids.index("run.v.01"), sub.entity_ids.index("run.v.02")])
    restricted = model.km_rows(SenseGraph(sub, memory, (50, 50)), local, np.random.default_rng(0))
    torch.testing.assert_close(restricted, full, rtol=1e-5, atol=1e-5)


def test_a_restricted_sense_graph_renumbers_a_copy_every_time(tiny_jaket_dir, sense_kg):
    """The graph of a setting is shared by its seeds, each of which encodes its pairs anew in the
    whole KG's numbering: every seed must read the same senses (#36: the renumbering was done in
    place once, so from the second seed on whole-KG ids indexed the subgraph's memory)."""
    import dataclasses

    from jaket.senses.graph import SenseGraph
    from jaket.tasks.word_in_context.model import restrict_to_candidates

    model, data, graph = _model_and_data(tiny_jaket_dir, sense_kg, "jaket")
    small = dataclasses.replace(data, candidates=np.where(data.candidates >= 3, data.candidates, -1))
    before = small.candidates.copy()
    sub, index_of = restrict_to_candidates(sense_kg, [small], 2)
    assert np.array_equal(small.candidates, before)  # the encoded pairs are not touched
    shared = SenseGraph(sub, graph.memory, graph.fanouts, index_of)
    first, second = shared.localise(small), shared.localise(small)
    assert np.array_equal(first.candidates, second.candidates) and np.array_equal(small.candidates, before)
    named = [[sense_kg.entity_ids[c] if c >= 0 else None for c in row] for row in before]
    assert [[sub.entity_ids[c] if c >= 0 else None for c in row] for row in first.candidates] == named
    with pytest.raises(ValueError, match="outside the sense graph"):
        shared.localise(dataclasses.replace(small, candidates=np.zeros_like(small.candidates)))


# ----------------------------------------------------------------------------- commands


@pytest.mark.gpu
def test_finetune_saves_a_model_that_predicts_senses(tiny_bert_dir, tiny_jaket_dir, sense_kg_dir, pair_files,
                                                     tmp_path, capsys, run_device):
    train, dev = pair_files
    out = tmp_path / "wic"
    assert main(["finetune", "word-in-context", "--model", str(tiny_jaket_dir), "--encoder", str(tiny_bert_dir),
                 "--train", str(train), "--test", str(dev), "--kg", str(sense_kg_dir), "--epochs", "2",
                 "--set", "description_max_length=16", "--set", "batch_size=8", "--out", str(out),
                 "--device", run_device]) == 0
    printed = capsys.readouterr().out
    assert "JAKET" in printed and "jaket predict word-in-context" in printed
    task = json.loads((out / "model" / "task.json").read_text())
    assert task["task"] == "word-in-context" and task["variant"] == "jaket"
    predictions = tmp_path / "predictions.jsonl"
    assert main(["predict", "word-in-context", "--finetuned", str(out / "model"), "--pairs", str(dev),
                 "--kg", str(sense_kg_dir), "--out", str(predictions), "--device", run_device]) == 0
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(rows) == 10
    for row, source in zip(rows, _pairs(10, 1)):
        assert isinstance(row["same"], bool) and 0 <= row["probability"] <= 1
        assert row["same"] == (row["probability"] >= 0.5) and row["label"] == source["label"]
        assert row["sense1"]["entity"].startswith(source["lemma"]) or row["sense1"]["entity"].startswith("depository")
    # the saved model predicts what the trained one measured
    metrics = json.loads((out / "metrics.json").read_text())
    saved = np.mean([row["same"] == row["label"] for row in rows])
    assert math.isclose(saved, metrics["runs"]["jaket"][0]["accuracy"], abs_tol=1e-9)


def test_evaluate_pairs_the_settings_and_prints_pure_json(tiny_bert_dir, tiny_jaket_dir, sense_kg_dir,
                                                          pair_files, tmp_path, capsys):
    train, dev = pair_files
    out = tmp_path / "eval"
    assert main(["evaluate", "word-in-context", "--model", str(tiny_jaket_dir), "--encoder", str(tiny_bert_dir),
                 "--train", str(train), "--test", str(dev), "--kg", str(sense_kg_dir), "--seeds", "2",
                 "--epochs", "1", "--set", "description_max_length=16", "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # stdout is the JSON alone
    assert set(summary["summary"]) == {"lm", "lm+g+m", "jaket"}
    assert "| Model |" in captured.err
    metrics = json.loads((out / "metrics.json").read_text())
    for name in ("jaket - lm", "jaket - lm+g+m", "lm+g+m - lm"):
        a, b = name.split(" - ")
        expected = [x["accuracy"] - y["accuracy"] for x, y in zip(metrics["runs"][a], metrics["runs"][b])]
        assert np.allclose(metrics["paired"][name]["accuracy"]["values"], expected)
    assert 0 <= metrics["frozen_features"]["accuracy"] <= 1 and 0 <= metrics["majority_class"] <= 1
    assert (out / "report.md").is_file() and (out / "learning_curves.png").is_file()


def test_config_set_and_print_config(tmp_path, capsys, pair_files):
    train, dev = pair_files
    config = tmp_path / "wic.yaml"
    config.write_text("epochs: 7\nsense_fusion: first\n", encoding="utf-8")
    assert main(["evaluate", "word-in-context", "--config", str(config), "--set", "lr=2e-5", "--train", str(train),
                 "--test", str(dev), "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "epochs: 7" in printed and "sense_fusion: first" in printed and "lr: 2.0e-05" in printed
    assert main(["evaluate", "word-in-context", "--set", "sense_fusion=best", "--train", str(train),
                 "--test", str(dev), "--print-config"]) == 2
    assert "sense_fusion" in capsys.readouterr().err



def test_length_grouped_batches_hold_every_pair_once_with_less_padding():
    from jaket.tasks.training import length_grouped_batches
    from jaket.train.batching import LENGTH_WINDOW

    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 60, size=1000)
    order = rng.permutation(1000)
    batches = length_grouped_batches(order, lengths, 8, np.random.default_rng(1))
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    assert sorted(len(b) for b in batches) == [8] * 125

    def padded(bs):
        return sum(len(b) * lengths[b].max() for b in bs)

    random_batches = [order[b:b + 8] for b in range(0, 1000, 8)]
    assert padded(batches) < 0.7 * padded(random_batches)
    # the windows of LENGTH_WINDOW batches come in the epoch's order; inside one, its shuffled
    # pairs are sorted by length and its batches come in a random order
    span = 8 * LENGTH_WINDOW
    for w, begin in enumerate(range(0, 1000, span)):
        window = batches[w * LENGTH_WINDOW:(w + 1) * LENGTH_WINDOW]
        assert sorted(np.concatenate(window).tolist()) == sorted(order[begin:begin + span].tolist())
        assert all(list(lengths[b]) == sorted(lengths[b]) for b in window)
        firsts = [int(lengths[b].min()) for b in window]
        assert firsts != sorted(firsts) or len(window) == 1
    # the batch order is drawn from the generator: the same seed the same epoch, another seed another
    again = length_grouped_batches(order, lengths, 8, np.random.default_rng(1))
    other = length_grouped_batches(order, lengths, 8, np.random.default_rng(2))
    assert all(np.array_equal(a, b) for a, b in zip(batches, again))
    assert not all(np.array_equal(a, b) for a, b in zip(batches, other))


def test_fit_with_length_grouped_batches_pads_less_and_sees_every_pair(tiny_jaket_dir, sense_kg, monkeypatch):
    """``group_by_length``: an epoch's batches are the grouped ones (every training pair once, in
    fewer token positions than random batches); off, the batches are the shuffled order cut in turn."""
    import dataclasses

    from jaket.tasks.word_in_context.job import WordInContextConfig
    from jaket.tasks.word_in_context.model import EncodedPairs, build_model, encode_pairs
    from jaket.tasks.word_in_context.run import fit

    pairs = [WordPair(**r) for r in _pairs(48, 3)]
    pairs = [dataclasses.replace(p, text1=p.text1 + " and then" * (i % 7)) for i, p in enumerate(pairs)]
    seen: dict[bool, list] = {}
    original = EncodedPairs.batch

    def spy(self, rows, pad_id):
        out = original(self, rows, pad_id)
        if torch.is_grad_enabled():
            seen[grouped].append((np.asarray(rows).copy(), int(out["input_ids"].numel())))
        return out

    monkeypatch.setattr(EncodedPairs, "batch", spy)
    for grouped in (False, True):
        seen[grouped] = []
        config = WordInContextConfig(pretrained=tiny_jaket_dir, epochs=1, batch_size=4, group_by_length=grouped,
                                     selection_fraction=0.0)
        model = build_model(config, "lm", 0)
        data = encode_pairs(pairs, model.language.tokenizer, None, 48, 1)
        fit(model, data, None, None, config, seed=0)
        rows = np.concatenate([r for r, _ in seen[grouped]])
        assert sorted(rows.tolist()) == list(range(48)), grouped
    random_order = np.random.default_rng(0).permutation(48)
    assert np.array_equal(np.concatenate([r for r, _ in seen[False]]), random_order)
    assert sum(n for _, n in seen[True]) < sum(n for _, n in seen[False])


def test_a_stopped_comparison_resumes_after_its_last_epoch_exactly(tiny_bert_dir, tiny_jaket_dir, sense_kg_dir,
                                                                   pair_files, tmp_path, monkeypatch, capsys):
    """Stopped in its second epoch, the same command into the same --out resumes each run after its
    first epoch and ends where the uninterrupted run ends, bit for bit (losses, selection scores, the
    accuracy); the checkpoints go once metrics.json is written. A changed setting is refused before
    any work, naming the checkpoint; --overwrite starts afresh."""
    import jaket.tasks.word_in_context.run as wic_run

    train, dev = pair_files
    # 22 training pairs (2 kept for selection), 8 a batch: 3 steps an epoch
    command = ["evaluate", "word-in-context", "--model", str(tiny_jaket_dir), "--encoder", str(tiny_bert_dir),
               "--train", str(train), "--test", str(dev), "--kg", str(sense_kg_dir), "--variants", "lm,jaket",
               "--seeds", "1", "--epochs", "3", "--set", "description_max_length=16", "--set", "batch_size=8",
               "--set", "dropout=0.3"]
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert main(command + ["--out", str(whole)]) == 0
    original = wic_run.step_done
    calls = {"n": 0}

    def stop_in_the_second_epoch_of_the_second_run(progress, loss):
        calls["n"] += 1
        if calls["n"] == 3 * 3 + 4:  # lm's 9 steps, then jaket's first step of epoch 2
            raise KeyboardInterrupt
        original(progress, loss)

    monkeypatch.setattr(wic_run, "step_done", stop_in_the_second_epoch_of_the_second_run)
    assert main(command + ["--out", str(stopped)]) == 130
    assert not (stopped / "metrics.json").exists()
    saved = {p.name: json.loads((p / "state.json").read_text())["epochs_done"]
             for p in (stopped / "checkpoints").iterdir() if (p / "state.json").exists()}
    assert saved == {"lm-seed0": 3, "jaket-seed0": 1}
    monkeypatch.setattr(wic_run, "step_done", original)
    capsys.readouterr()
    # another setting: refused before any work, the checkpoint named
    assert main(command + ["--out", str(stopped), "--set", "lr=1e-4"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "checkpoints/" in error[0] and "--overwrite" in error[0]
    assert main(command + ["--out", str(stopped)]) == 0
    a, b = (json.loads((d / "metrics.json").read_text())["runs"] for d in (whole, stopped))
    for variant in ("lm", "jaket"):
        for key in ("accuracy", "train_loss", "selection_accuracy", "best_epoch"):
            assert a[variant][0][key] == b[variant][0][key], (variant, key)
    assert b["jaket"][0]["resumed_after_epochs"] == [1] and b["lm"][0]["resumed_after_epochs"] == [3]
    assert "resumed_after_epochs" not in a["jaket"][0] and len(a["jaket"][0]["epoch_seconds"]) == 3
    assert len(b["jaket"][0]["epoch_seconds"]) == 3  # the first epoch's, from the checkpoint, and the two after
    assert not (stopped / "checkpoints").exists()
    # --overwrite over a stopped run starts it again: its checkpoints are not read
    monkeypatch.setattr(wic_run, "step_done", stop_in_the_second_epoch_of_the_second_run)
    calls["n"] = 0
    again = tmp_path / "again"
    assert main(command + ["--out", str(again)]) == 130
    monkeypatch.setattr(wic_run, "step_done", original)
    assert main(command + ["--out", str(again), "--set", "lr=1e-4", "--overwrite"]) == 0
    assert not (again / "checkpoints").exists()
    assert json.loads((again / "metrics.json").read_text())["config"]["lr"] == 1e-4


def test_removing_epoch_checkpoints_never_touches_a_pretraining_runs(tmp_path):
    """``--overwrite`` into a folder named by mistake (a pre-training run's) deletes only what the
    epoch checkpoints wrote: its ``step-*`` checkpoints stay."""
    from torch import nn

    from jaket.tasks.epoch_checkpoint import CHECKPOINTS, EpochCheckpoint, remove_checkpoints

    model = nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    ours = EpochCheckpoint(tmp_path / CHECKPOINTS / "lm-seed0", "f")
    ours.save(1, model, optimizer, schedule, {"order": np.random.default_rng(0)}, {"train_loss": [0.5]}, 0.6, None)
    pretraining = tmp_path / CHECKPOINTS / "step-0000100"
    pretraining.mkdir()
    (pretraining / "state.json").write_text(json.dumps({"step": 100}))
    remove_checkpoints(tmp_path)
    assert not ours.folder.exists() and (pretraining / "state.json").exists()
    pretraining.joinpath("state.json").unlink()
    pretraining.rmdir()
    remove_checkpoints(tmp_path)  # nothing left: the folder goes too
    assert not (tmp_path / CHECKPOINTS).exists()


def test_frozen_features_read_in_length_sorted_batches_keep_each_pairs_row(tiny_jaket_dir, monkeypatch):
    """The frozen-encoder baseline's features: batches of like length, each row back at its pair (the
    same as reading every pair alone, up to float noise), and under bf16 close to float32's."""
    import dataclasses

    from jaket.tasks.word_in_context.job import WordInContextConfig
    from jaket.tasks.word_in_context.model import EncodedPairs, build_model, encode_pairs
    from jaket.tasks.word_in_context.run import target_features

    pairs = [WordPair(**r) for r in _pairs(20, 5)]
    pairs = [dataclasses.replace(p, text2=p.text2 + " today" * (i % 5)) for i, p in enumerate(pairs)]
    language = build_model(WordInContextConfig(pretrained=tiny_jaket_dir), "lm", 0).language
    data = encode_pairs(pairs, language.tokenizer, None, 48, 1)
    widths: list[int] = []
    original = EncodedPairs.batch

    def spy(self, rows, pad_id):
        out = original(self, rows, pad_id)
        widths.append(int(out["input_ids"].numel()))
        return out

    monkeypatch.setattr(EncodedPairs, "batch", spy)
    sorted_rows = target_features(language, data, batch_size=4)
    sorted_positions = sum(widths)
    alone = target_features(language, data, batch_size=1)
    lengths = data.pair_lengths()
    given_positions = sum(2 * len(b) * int(lengths[b].max()) for b in np.array_split(np.arange(20), 5))
    assert sorted_rows.shape == (20, 4 * int(language.hidden_size))
    np.testing.assert_allclose(sorted_rows, alone, atol=1e-5)  # row i is pair i's, whatever batch it was in
    assert sorted_positions < given_positions
    half = target_features(language, data, batch_size=4, bf16=True)
    assert 0 < np.abs(half - sorted_rows).max() < 0.1 * np.abs(sorted_rows).max()
