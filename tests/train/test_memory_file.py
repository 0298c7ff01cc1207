"""Pre-training reads E^context from a memory-mapped .npy file when one is given."""

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
