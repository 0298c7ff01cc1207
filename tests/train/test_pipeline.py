"""The data pipeline: batches built in DataLoader worker processes are those built in the main
process (each depends on its (seed, step, rank) alone), so a run with workers trains exactly as
one without, and losses are read back from the device only at logged steps."""

import json

import torch

from jaket.train.batching import batch_loader


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if hasattr(a, "__dict__"):
        return a.__dict__.keys() == b.__dict__.keys() and all(_same(a.__dict__[k], b.__dict__[k])
                                                              for k in a.__dict__)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "shape"):  # numpy
        return a.shape == b.shape and (a == b).all()
    return a == b


def test_worker_batches_equal_main_process_batches(make_trainer, tmp_path):
    builder = make_trainer(tmp_path, "tasks.description_rows=3", "steps=20").builder
    loader = batch_loader(builder, 5, workers=2)
    from_workers = [next(loader) for _ in range(4)]
    assert [b.position for b in from_workers] == [5, 6, 7, 8]
    for batch in from_workers:
        assert _same(batch, builder.sample_batch(batch.position))
    assert not _same(from_workers[0], from_workers[1])


def test_a_run_with_workers_trains_as_one_without(make_trainer, tmp_path):
    results = {}
    for workers in (0, 1):
        out = tmp_path / str(workers)
        trainer = make_trainer(out, "steps=3", "checkpoint_every=0", "eval_texts=0",
                               f"data.workers={workers}", "log_every=2")
        summary = trainer.run(progress=False)
        assert summary["data_workers"] == workers
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [2, 3]  # only the logged steps are read back
        results[workers] = (rows, {k: v.clone() for k, v in trainer.model.state_dict().items()})
    assert results[0][0] == results[1][0]
    for name, value in results[0][1].items():
        assert torch.equal(value, results[1][1][name]), name


def test_steps_that_are_not_logged_read_nothing_back(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "steps=4", "log_every=3")
    assert [trainer.train_step() is None for _ in range(4)] == [True, True, False, False]


def test_a_pinning_loader_pins_every_tensor_of_a_step_batch(make_trainer, tmp_path, monkeypatch):
    """Issue #29: the loader of a GPU run pins its batches (``pin_memory=True``) through the
    batch's own ``pin_memory()``; a StepBatch without one came back unpinned and its copy to the
    GPU blocked. Every tensor (text, subgraph, targets, description tokens) comes back pinned."""
    from torch.utils.data._utils.pin_memory import pin_memory as loader_pinning

    from jaket.train.batching import StepBatch

    class Pinned(torch.Tensor):
        pass

    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda t, *a: t.clone().as_subclass(Pinned))
    trainer = make_trainer(tmp_path, "tasks.description_rows=4")
    batch = trainer.sample_batch(0)
    pinned = loader_pinning(batch)
    assert isinstance(pinned, StepBatch) and pinned.position == batch.position
    tensors = [v for v in vars(pinned).values() if isinstance(v, torch.Tensor)]
    tensors += [v for v in vars(pinned.text).values()] + list(pinned.description_tokens)
    tensors += [v for v in vars(pinned.subgraph).values() if isinstance(v, torch.Tensor)]
    assert len(tensors) >= 20 and all(isinstance(t, Pinned) for t in tensors)
    assert torch.equal(pinned.text.input_ids.as_subclass(torch.Tensor), batch.text.input_ids)
    assert pinned.counts == batch.counts and pinned.subgraph.num_seeds == batch.subgraph.num_seeds
