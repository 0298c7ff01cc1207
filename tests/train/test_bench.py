import numpy as np
import torch

from jaket.kg.toy import toy_kg
from jaket.train.config import load_config
from jaket.train.pretrain import Pretrainer, prepare_data

from .fake_model import FakeJaket


def test_on_the_fly_mode_encodes_subgraph_descriptions(tokenizer, tmp_path):
    kg, corpus = toy_kg()
    config = load_config(overrides=["steps=3", "text_batch_size=4", "data.source=toy",
                                    "checkpoint_every=0", "tensorboard=false"])
    torch.manual_seed(0)
    trainer = Pretrainer(config, FakeJaket(tokenizer, kg), prepare_data(kg, corpus, tokenizer, config),
                         tmp_path)
    trainer.train_step()
    assert trainer.description_seconds == 0
    trainer.on_the_fly_descriptions = True
    values = trainer.train_step()
    assert trainer.description_seconds > 0 and np.isfinite(values["loss_entity"])
