"""Pre-training on the fake accelerator of tests/conftest.py (a GPU's code path on the CPU)."""

import numpy as np


def test_pretraining_step_and_evaluation_on_the_fake_device(make_trainer, tmp_path, fake_device):
    trainer = make_trainer(tmp_path)
    fake_device(trainer.model)
    values = trainer.train_step()
    assert all(np.isfinite(float(values[f"loss_{k}"])) for k in ("category", "relation", "mlm", "entity"))
    result = trainer.evaluate_masked_entity(8)
    assert 0 <= result["masked_entity_accuracy"] <= 1
