"""Logging through the engine's trackers: every logged metrics row reaches each tracker (here a
recording one; TensorBoard, W&B and MLflow are the same hook), and a tracker asked for but not
installed is an error naming it."""

import json
from importlib.util import find_spec

import pytest
import torch

from jaket.train.config import load_config
from jaket.train.engine import make_accelerator, trackers

from .conftest import CONFIGS


def test_logged_rows_reach_the_engines_trackers(tiny_bert_dir, tmp_path, recording_tracker):
    from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
    from jaket.train.pretrain import Pretrainer

    config = load_config(CONFIGS / "pretrain-tiny.yaml", ["steps=3", "eval_texts=0", "checkpoint_every=0"],
                         {"model.encoder": str(tiny_bert_dir)})
    kg, corpus, report = load_kg_and_corpus(config)
    model = build_model(config, kg)
    data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
    recording = recording_tracker
    accelerator = make_accelerator(config, torch.device("cpu"), tmp_path, log_with=[recording])
    Pretrainer(config, model, data, tmp_path, accelerator=accelerator).run(progress=False)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert recording.rows == rows and len(rows) == 3
    assert recording.config["steps"] == 3 and recording.config["optim.lm_lr"] == config.optim.lm_lr
    assert recording.finished


@pytest.mark.skipif(find_spec("wandb") is not None, reason="wandb is installed here")
def test_a_tracker_not_installed_is_named():
    with pytest.raises(ValueError, match=r"wandb not installed \(pip install wandb\)"):
        trackers(load_config(None, ["trackers=[wandb]"]))
    assert "wandb" not in trackers(load_config(None, ["tensorboard=false"]))
