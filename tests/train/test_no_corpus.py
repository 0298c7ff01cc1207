"""Pre-training on a KG folder without a corpus: the KG tasks only (entity category and relation
prediction), one warning, the text side frozen, checkpoints and exact resume, a loadable model
(real JaketModel on the tiny BERT, the toy KG saved without its corpus.jsonl)."""

import json
import logging
import math
import signal

import pytest
import torch
from safetensors.torch import load_file

from .conftest import CONFIGS


@pytest.fixture(scope="module")
def kg_dir(tmp_path_factory):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, _ = toy_kg()
    return save_kg(kg, tmp_path_factory.mktemp("nocorpus") / "kg")


def _finite(value):
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


def test_a_kg_without_corpus_trains_the_kg_tasks_with_one_warning(pretrain, kg_dir, tmp_path,
                                                                  caplog):
    from jaket.model.jaket import JaketModel

    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        assert pretrain(out, "--kg", str(kg_dir), steps=6) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and "corpus" in r.getMessage()]
    assert warnings == [
        f"{kg_dir / 'corpus.jsonl'}: no corpus, so pre-training runs the KG tasks only (category and "
        f"relation); the text tasks (masked token and masked entity prediction) are off: add a "
        f"corpus with `jaket link --kg {kg_dir} --texts FILE --out {kg_dir / 'corpus.jsonl'}`, or, without texts, "
        f"one verbalised from the KG's own triples with `jaket kg corpus {kg_dir} --out {kg_dir / 'corpus.jsonl'}`"]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 7))
    for row in rows:
        assert row["n_category"] > 0 and row["n_relation"] > 0
        assert math.isfinite(row["loss_category"]) and math.isfinite(row["loss_relation"])
        assert not {"loss_mlm", "loss_entity", "entity_acc"} & set(row)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == ["category", "relation"]
    assert set(summary["losses"]) == {"category", "relation"}
    assert summary["losses"]["category"]["fell"]
    assert summary["evaluation"] == summary["evaluation_start"] == {
        "skipped": "no corpus: masked entity prediction was not trained"}
    assert _finite(summary)
    report = json.loads((out / "data_report.json").read_text())
    assert report["texts"] == 0 and report["tasks"] == ["category", "relation"]
    # the knowledge module and the KG heads trained; the unused text side kept its start weights
    model = JaketModel.from_pretrained(out / "model")
    trained = load_file(str(out / "checkpoints" / "step-0000006" / "model.safetensors"))
    first = load_file(str(out / "checkpoints" / "step-0000004" / "model.safetensors"))
    changed = {k for k in trained if not torch.equal(trained[k], first[k])}
    assert any(k.startswith("knowledge.") for k in changed)
    assert any(k.startswith("category_head.") for k in changed)
    assert any(k.startswith("relation_head.") for k in changed)
    assert not any(k.startswith(("language.", "fusion.", "entity_head.")) for k in changed)
    assert model.config.num_categories == 4 and model.config.num_relations == 5
    saved = model.state_dict()
    assert all(torch.equal(saved[k], trained[k]) for k in trained if k in saved and k.startswith("knowledge."))


def test_a_kg_without_corpus_resumes_exactly(pretrain, kg_dir, tmp_path, monkeypatch):
    """A run stopped (as by SIGTERM) after step 2, then resumed, equals the uninterrupted one."""
    from jaket.train.pretrain import Pretrainer

    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert pretrain(whole, "--kg", str(kg_dir), "--set", "eval_texts=0") == 0
    with monkeypatch.context() as patch:
        patch.setattr(Pretrainer, "_stop_signal",
                      lambda self, signals: signal.SIGTERM if self.step == 2 else None)
        assert pretrain(cut, "--kg", str(kg_dir), "--set", "eval_texts=0") == 128 + signal.SIGTERM
    assert (cut / "checkpoints" / "latest").read_text().strip() == "step-0000002"
    assert not (cut / "summary.json").exists()
    assert pretrain(cut, "--kg", str(kg_dir), "--set", "eval_texts=0", "--resume") == 0
    a = load_file(str(whole / "checkpoints" / "step-0000004" / "model.safetensors"))
    b = load_file(str(cut / "checkpoints" / "step-0000004" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    rows = [(whole / "metrics.jsonl").read_text(), (cut / "metrics.jsonl").read_text()]
    assert rows[0] == rows[1]
    state = json.loads((cut / "checkpoints" / "step-0000004" / "state.json").read_text())
    assert state["data_position"]["texts_consumed"] == 0


def test_description_rows_train_lm1_without_a_corpus(pretrain, kg_dir, tmp_path):
    """With tasks.description_rows E^(0) of some seeds is LM1 with gradients: LM1 learns from the
    KG tasks, LM2 (the layers after it) stays frozen."""
    out = tmp_path / "run"
    assert pretrain(out, "--kg", str(kg_dir), "--set", "eval_texts=0", "--set",
                     "tasks.description_rows=4", "--set", "model.lm1_layers=1") == 0
    trained = load_file(str(out / "checkpoints" / "step-0000004" / "model.safetensors"))
    first = load_file(str(out / "checkpoints" / "step-0000002" / "model.safetensors"))
    changed = {k for k in trained if not torch.equal(trained[k], first[k])}
    assert any(".layer.0." in k for k in changed if k.startswith("language."))
    assert not any(".layer.1." in k for k in changed if k.startswith("language."))


def test_nothing_to_learn_without_a_corpus_is_refused(pretrain, kg_dir, tmp_path, capsys):
    """No corpus and no KG task with examples (relation prediction off, no category)."""
    from jaket.kg.io import load_kg, save_kg
    from jaket.kg.toy import toy_kg
    from jaket.train.build import PretrainDataError, check_pretraining_data
    from jaket.train.config import load_config

    kg, _ = toy_kg()
    kg.entity_category[:] = -1
    bare = save_kg(kg, tmp_path / "bare")
    config = load_config(CONFIGS / "pretrain-tiny.yaml", ["data.source=dir", f"data.path={bare}",
                                                          "tasks.weight_relation=0"])
    with pytest.raises(PretrainDataError) as caught:
        check_pretraining_data(load_kg(bare), None, config)
    assert str(caught.value).startswith(f"{bare / 'corpus.jsonl'}: missing, and the KG tasks have "
                                        f"nothing to learn")
    assert "(0 entities with a category, tasks.weight_category=1.0, tasks.weight_relation=0.0)" \
        in str(caught.value) and "jaket link" in str(caught.value)
    status = pretrain(tmp_path / "out", "--kg", str(bare), "--set", "tasks.weight_relation=0")
    assert status == 1 and "nothing to learn" in capsys.readouterr().err
    assert not (tmp_path / "out" / "metrics.jsonl").exists()


def test_a_missing_corpus_file_stays_an_error(kg_dir, tmp_path):
    from jaket.train.build import PretrainDataError, load_kg_and_corpus
    from jaket.train.config import load_config

    missing = tmp_path / "texts.jsonl"
    config = load_config(CONFIGS / "pretrain-tiny.yaml", ["data.source=dir", f"data.path={kg_dir}",
                                                          f"data.corpus={missing}"])
    with pytest.raises(PretrainDataError) as caught:
        load_kg_and_corpus(config)
    assert str(caught.value) == (f"{missing}: no such corpus file (data.corpus); create it with "
                                 f"`jaket link --kg DIR --texts FILE --out {missing}`")


def _rank(rank: int, world: int, port: int, out: str, encoder: str, kg: str) -> None:
    import os

    from safetensors.torch import save_file

    from jaket.train.config import load_config
    from jaket.train.build import build_model
    from jaket.train.pretrain import pretrain

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(world), TOKENIZERS_PARALLELISM="false")
    config = load_config(CONFIGS / "pretrain-tiny.yaml",
                         ["steps=3", "checkpoint_every=0", "data.source=dir", f"data.path={kg}"],
                         {"model.encoder": encoder})
    built = {}

    def factory(cfg, kg):
        built["model"] = model = build_model(cfg, kg)
        return model

    pretrain(config, os.path.join(out, "run"), progress=False, model_factory=factory)
    save_file({k: v.detach().clone().contiguous() for k, v in built["model"].state_dict().items()},
              os.path.join(out, f"rank{rank}.safetensors"))


@pytest.mark.distributed
def test_two_ranks_without_a_corpus_stay_in_sync(tiny_bert_dir, kg_dir, tmp_path, free_port):
    """DistributedDataParallel with the text side frozen: no rank waits for its gradients."""
    import torch.multiprocessing as mp

    mp.spawn(_rank, args=(2, free_port, str(tmp_path), str(tiny_bert_dir), str(kg_dir)), nprocs=2, join=True)
    a, b = load_file(tmp_path / "rank0.safetensors"), load_file(tmp_path / "rank1.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    saved = load_file(tmp_path / "run" / "model" / "jaket.safetensors")
    assert all(torch.equal(saved[k], a[k]) for k in saved)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["tasks"] == ["category", "relation"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3] and all(r["n_relation"] > 0 for r in rows)
