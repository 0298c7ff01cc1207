import json

import numpy as np
import torch

from jaket.kg.toy import toy_kg
from jaket.train.config import load_config
from jaket.train.pretrain import Pretrainer, prepare_data

from .fake_model import FakeJaket


def _trainer(tokenizer, out, steps=8, **over):
    kg, corpus = toy_kg()
    sets = [f"steps={steps}", "text_batch_size=4", "tasks.root_entities=6", "tasks.relation_pairs=4",
            "checkpoint_every=3", "memory.initial=2", "memory.batch_size=8", "data.source=toy",
            "tensorboard=false", "eval_texts=8"] + [f"{k}={v}" for k, v in over.items()]
    config = load_config(overrides=sets)
    torch.manual_seed(0)
    np.random.seed(0)
    model = FakeJaket(tokenizer, kg)
    return Pretrainer(config, model, prepare_data(kg, corpus, tokenizer, config), out)


def _losses(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_run_writes_outputs_and_all_four_losses(tokenizer, tmp_path):
    trainer = _trainer(tokenizer, tmp_path, steps=6)
    summary = trainer.run(progress=False)
    rows = _losses(tmp_path)
    assert [r["step"] for r in rows] == list(range(1, 7))
    for name in ("category", "relation", "mlm", "entity"):
        assert all(np.isfinite(r[f"loss_{name}"]) for r in rows), name
        assert name in summary["losses"]
    assert (tmp_path / "loss_curves.png").stat().st_size > 0
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == 6
    assert 0 <= summary["evaluation"]["masked_entity_accuracy"] <= 1
    assert trainer.refresh_count >= 2  # initial fill + the schedule


def test_resume_repeats_the_uninterrupted_run(tokenizer, tmp_path):
    full = _trainer(tokenizer, tmp_path / "full", steps=9)
    full.run(progress=False)
    stopped = _trainer(tokenizer, tmp_path / "cut", steps=9)
    stopped.stop_at = 7  # dies after step 7; last checkpoint is step 6
    stopped.run(progress=False)
    resumed = _trainer(tokenizer, tmp_path / "cut", steps=9)
    resumed.run(resume=True, progress=False)
    assert resumed.step == 9
    a, b = _losses(tmp_path / "full"), _losses(tmp_path / "cut")
    assert [r["step"] for r in b] == list(range(1, 10))
    for ra, rb in zip(a, b):
        for key in ("loss_category", "loss_relation", "loss_mlm", "loss_entity"):
            assert abs(ra[key] - rb[key]) <= 1e-6, (ra["step"], key, ra[key], rb[key])
    for (na, pa), (nb, pb) in zip(full.model.named_parameters(), resumed.model.named_parameters()):
        assert torch.allclose(pa, pb, atol=1e-6), na
