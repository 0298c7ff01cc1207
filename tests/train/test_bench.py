import numpy as np


def test_on_the_fly_mode_encodes_subgraph_descriptions(make_trainer, tmp_path):
    """The flag `jaket bench pretrain` uses: each step encodes its subgraph's descriptions."""
    trainer = make_trainer(tmp_path, "checkpoint_every=0")
    trainer.train_step()
    assert trainer.description_seconds == 0
    before = trainer.memory.entities.clone()
    trainer.on_the_fly_descriptions = True
    values = trainer.train_step()
    assert trainer.description_seconds > 0 and np.isfinite(values["loss_entity"])
    assert not np.allclose(before.numpy(), trainer.memory.entities.numpy())
