"""Fixtures of the training tests: the real JaketModel on the tiny random BERT and the toy KG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from jaket.paths import default_model_path
    return AutoTokenizer.from_pretrained(default_model_path())


@pytest.fixture
def make_trainer(tiny_bert_dir):
    """``make_trainer(out_dir, *overrides)``: a Pretrainer of the tiny config (toy KG, tiny BERT)."""
    from jaket.train.config import load_config
    from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
    from jaket.train.pretrain import Pretrainer

    def make(out, *overrides, dist_info=None):
        config = load_config(CONFIGS / "pretrain-tiny.yaml", list(overrides),
                             {"model.encoder": str(tiny_bert_dir)})
        torch.manual_seed(config.seed)
        np.random.seed(config.seed)
        kg, corpus, report = load_kg_and_corpus(config)
        model = build_model(config, kg)
        data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
        kwargs = {} if dist_info is None else {"dist_info": dist_info}
        return Pretrainer(config, model, data, out, **kwargs)

    return make
