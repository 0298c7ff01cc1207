"""Two CPU processes (gloo, DistributedDataParallel) pre-train the real JaketModel (tiny BERT, toy
KG) through `jaket.train.pretrain.pretrain`, as under torchrun: their parameters and memories must
stay identical while each trains on its own texts, and only rank 0 writes."""

import json
import os

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file

from .conftest import CONFIGS

STEPS = 4


def _worker(rank: int, world: int, port: int, out: str, encoder: str) -> None:
    from jaket.train.config import load_config
    from jaket.train.batching import BatchBuilder
    from jaket.train.build import build_model
    from jaket.train.pretrain import pretrain

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(world), TOKENIZERS_PARALLELISM="false")
    config = load_config(CONFIGS / "pretrain-tiny.yaml",
                         [f"steps={STEPS}", "checkpoint_every=2", "memory.initial=2"],
                         {"model.encoder": encoder})
    built = {}

    def factory(cfg, kg):
        built["model"] = model = build_model(cfg, kg)
        built["initial"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return model

    texts = []
    original = BatchBuilder.text_indices

    def recording(self, position):
        chosen = original(self, position)
        texts.extend(chosen.tolist())
        return chosen

    BatchBuilder.text_indices = recording
    pretrain(config, os.path.join(out, "run"), progress=False, model_factory=factory)
    model = built["model"]
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors["__memory"] = model.memory.entities.clone()
    tensors["__texts"] = torch.tensor(texts)
    tensors["__changed"] = torch.tensor([sum(not torch.equal(v, built["initial"][k])
                                             for k, v in model.state_dict().items())])
    save_file(tensors, os.path.join(out, f"rank{rank}.safetensors"))


@pytest.mark.distributed
def test_two_ranks_stay_in_sync(tiny_bert_dir, tmp_path, free_port):
    mp.spawn(_worker, args=(2, free_port, str(tmp_path), str(tiny_bert_dir)), nprocs=2, join=True)
    a = load_file(tmp_path / "rank0.safetensors")
    b = load_file(tmp_path / "rank1.safetensors")
    assert len(a["__texts"]) == len(b["__texts"]) == STEPS * 4
    assert set(a["__texts"].tolist()).isdisjoint(b["__texts"].tolist())  # data split
    assert a["__changed"].item() > 0  # training moved the parameters
    assert a["__memory"].abs().sum() > 0
    assert torch.equal(a["__memory"], b["__memory"])  # refresh split + all-reduced
    for name in a:
        if not name.startswith("__"):
            assert torch.equal(a[name], b[name]), name
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["refresh_count"] == 2
    # rank 0 alone wrote: one metrics row per step, checkpoints at 2 and the end
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert sorted(p.name for p in (run / "checkpoints").glob("step-*")) == ["step-0000002", "step-0000004"]
    saved = load_file(run / "model" / "jaket.safetensors")
    for name, value in saved.items():
        assert torch.equal(value, a[name]), name
