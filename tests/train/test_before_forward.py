"""Pretrainer.before_forward, the loop's one hook: `jaket bench pretrain`'s on-the-fly mode
(jaket.bench.pretrain.OnTheFlyDescriptions) encodes each batch's subgraph descriptions there."""

import numpy as np

from jaket.bench.pretrain import OnTheFlyDescriptions


def test_the_hook_sees_every_micro_step_batch_before_its_forward(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "checkpoint_every=0", "optim.accumulation_steps=2")
    seen = []
    trainer.before_forward = seen.append
    trainer.train_step()
    assert [b.position for b in seen] == [0, 1]  # both micro-steps of step 0, in order
    trainer.before_forward = None
    trainer.train_step()
    assert len(seen) == 2


def test_on_the_fly_descriptions_encode_the_subgraph_rows(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "checkpoint_every=0")
    trainer.train_step()  # the first fill
    before = trainer.memory.entities.clone()
    on_the_fly = OnTheFlyDescriptions(trainer)
    trainer.before_forward = on_the_fly
    values = trainer.train_step()
    assert on_the_fly.seconds > 0 and np.isfinite(values["loss_entity"])
    changed = ~np.isclose(before.numpy(), trainer.memory.entities.numpy()).all(axis=1)
    batch = trainer.sample_batch(1)  # step 1's batch again (sampling is deterministic per position)
    assert changed.any() and set(np.flatnonzero(changed)) <= set(batch.subgraph.node_ids.tolist())
