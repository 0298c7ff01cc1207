"""Pre-training reads E^context from a memory-mapped .npy file when one is given."""

import json

import numpy as np

from jaket.kg.toy import toy_kg
from jaket.train.config import load_config
from jaket.train.pretrain import pretrain


def test_an_existing_memory_file_is_the_first_fill_and_stays_memory_mapped(tiny_bert_dir, tmp_path):
    kg, _ = toy_kg()
    path = tmp_path / "memory.npy"
    rows = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(kg.num_entities, 32))
    rows[:] = np.arange(kg.num_entities, dtype=np.float16)[:, None] / 10
    rows.flush()
    del rows
    config = load_config(None, ["data.source=toy", "steps=2", "text_batch_size=4", "tasks.root_entities=6",
                                "tasks.relation_pairs=4", "model.km_heads=2", "model.fanouts=[3,3]",
                                f"model.encoder={tiny_bert_dir}", "model.memory_dtype=float16",
                                f"memory.path={path}", "memory.initial=50", "checkpoint_every=0",
                                "eval_texts=0", "tensorboard=false"])
    summary = pretrain(config, tmp_path / "run", progress=False)
    assert summary["refresh_count"] == 0  # the file's rows were used, not recomputed
    on_disk = np.load(path, allow_pickle=False)
    assert on_disk.dtype == np.float16 and np.allclose(on_disk[:, 0], np.arange(kg.num_entities) / 10, atol=1e-2)
    # a file of the wrong shape is refused with its path named
    bad = load_config(None, ["data.source=toy", f"model.encoder={tiny_bert_dir}",
                             "model.memory_dtype=float32", f"memory.path={path}"])
    try:
        pretrain(bad, tmp_path / "bad", progress=False)
    except ValueError as error:
        assert str(path) in str(error)
    else:
        raise AssertionError("a float16 file read as float32 must be refused")


def test_a_second_run_reads_its_first_fill_from_the_cache(tiny_bert_dir, tmp_path, monkeypatch):
    """Issue 68: the first fill depends on LM1's weights, the KG, the window and the precision only.
    A second seed's run with the same key reads no description through LM1 before step 0 and
    starts from the very rows the first computed; a changed key (the window) computes again, and
    ``memory.cache=false`` always computes."""
    import torch

    from jaket.model.memory import EntityContextMemory
    from jaket.train import pretrain as module

    monkeypatch.setenv("JAKET_CACHE", str(tmp_path / "cache"))
    passes, first_rows = [], []
    real_refresh, real_first = EntityContextMemory.refresh, module.Pretrainer._first_fill_and_evaluation

    def counted(self, *args, **kwargs):
        passes.append(kwargs.get("momentum"))
        return real_refresh(self, *args, **kwargs)

    def recorded(self):
        real_first(self)
        first_rows.append(self.memory.entities.detach().clone())

    monkeypatch.setattr(EntityContextMemory, "refresh", counted)
    monkeypatch.setattr(module.Pretrainer, "_first_fill_and_evaluation", recorded)

    def run(name: str, *extra: str) -> list:
        passes.clear()
        config = load_config(None, ["data.source=toy", "steps=2", "text_batch_size=4", "tasks.root_entities=6",
                                    "tasks.relation_pairs=4", "model.km_heads=2", "model.fanouts=[3,3]",
                                    f"model.encoder={tiny_bert_dir}", "memory.initial=50", "checkpoint_every=0",
                                    "eval_texts=0", "tensorboard=false", *extra])
        pretrain(config, tmp_path / name, progress=False)
        return list(passes)

    assert run("seed0", "seed=0") == [0.0]  # computed, and stored
    assert run("seed1", "seed=1") == []  # the same key: read, no pass through LM1 before step 0
    assert torch.equal(first_rows[0], first_rows[1])
    saved = [json.loads((tmp_path / name / "model" / "memory" / "memory.json").read_text())["refreshes"]
             for name in ("seed0", "seed1")]
    assert saved[0] == saved[1] == 1  # the fill counted whether computed or read (memory.initial=50 > steps)
    assert run("window", "seed=1", "model.description_max_length=12") == [0.0]  # another key: computed
    assert run("off", "seed=1", "memory.cache=false") == [0.0]
    # the precision of the pass (bf16: a bf16 copy of LM1): another key, computed once, then read
    assert run("bf16", "seed=1", "bf16=true") == [0.0]
    assert run("bf16-again", "seed=2", "bf16=true") == []
    assert len(list((tmp_path / "cache" / "memory").glob("*.safetensors"))) == 3
