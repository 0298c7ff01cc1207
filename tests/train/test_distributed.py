"""Two CPU processes (gloo) train the stand-in model and must hold identical parameters."""

import os
import socket

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out: str) -> None:
    import numpy as np
    import torch.distributed as dist
    from transformers import AutoTokenizer

    from jaket.kg.toy import toy_kg
    from jaket.paths import default_model_path
    from jaket.train.config import load_config
    from jaket.train.distributed import DistInfo
    from jaket.train.pretrain import Pretrainer, prepare_data
    from tests.train.fake_model import FakeJaket

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    kg, corpus = toy_kg()
    config = load_config(overrides=["steps=4", "text_batch_size=3", "tasks.root_entities=4",
                                    "memory.initial=2", "checkpoint_every=0", "data.source=toy",
                                    "tensorboard=false", "eval_texts=4"])
    torch.manual_seed(0)
    np.random.seed(0)
    model = FakeJaket(tokenizer, kg)
    trainer = Pretrainer(config, model, prepare_data(kg, corpus, tokenizer, config),
                         os.path.join(out, "run"), DistInfo(rank, world))
    ids = trainer.text_indices(0)
    trainer.run(progress=False)
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors["__memory"] = model.memory.entities.clone()
    tensors["__texts"] = torch.from_numpy(ids)
    save_file(tensors, os.path.join(out, f"rank{rank}.safetensors"))
    dist.destroy_process_group()


@pytest.mark.distributed
def test_two_ranks_stay_in_sync(tmp_path):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    a = load_file(tmp_path / "rank0.safetensors")
    b = load_file(tmp_path / "rank1.safetensors")
    assert set(a["__texts"].tolist()).isdisjoint(b["__texts"].tolist())  # data split
    assert a["__memory"].abs().sum() > 0
    assert torch.equal(a["__memory"], b["__memory"])  # refresh split + all-reduced
    for name in a:
        if not name.startswith("__"):
            assert torch.equal(a[name], b[name]), name
    assert (tmp_path / "run" / "summary.json").exists()
