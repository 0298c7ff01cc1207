"""Fine-tuning logs through the engine's trackers (``--log-with``): each step's loss reaches every
tracker as ``RUN/train_loss``, one curve per run, equal to the ``train_loss`` of metrics.json."""

import importlib.util

import numpy as np
import pytest

from jaket.cli import main


@pytest.mark.parametrize("train_encoder", [False, True], ids=["frozen", "train-encoder"])
def test_link_prediction_logs_each_runs_loss_curve(train_encoder, small_kg, tiny_bert_dir, recording_tracker):
    from jaket.tasks.link_prediction import run as lp

    triples = np.asarray(small_kg.triples, dtype=np.int64)
    recorder = recording_tracker
    config = lp.LinkPredictionConfig(variants=("lm+g+m",), scorers=("distmult", "transe"), steps=3, batch_size=8,
                                     negatives=4, fanouts=(3, 3), encoder=tiny_bert_dir, km_heads=4,
                                     description_max_length=16, train_encoder=train_encoder, refresh_initial=0)
    results = lp.run_link_prediction(small_kg, triples[6:], {"valid": triples[:6]}, config, log_with=[recorder])
    curves = recorder.curves()
    assert set(curves) == {"lm+g+m_distmult_seed_0/train_loss", "lm+g+m_transe_seed_0/train_loss"}
    for scorer in ("distmult", "transe"):
        logged = curves[f"lm+g+m_{scorer}_seed_0/train_loss"]
        assert [s for s, _ in logged] == [1, 2, 3]
        assert [v for _, v in logged] == results["runs"]["lm+g+m"][scorer][0]["train_loss"]
    assert recorder.config["steps"] == 3 and recorder.config["train_encoder"] is train_encoder
    assert recorder.finished


def test_entity_classification_logs_each_epochs_loss(small_kg, tiny_bert_dir, recording_tracker):
    from jaket.tasks.entity_classification import run as ec

    recorder = recording_tracker
    config = ec.EntityClassificationConfig(variants=("gnn",), train_fractions=(1.0, 0.5), seeds=(0, 1), epochs=3,
                                           encoder=tiny_bert_dir, km_heads=4)
    results = ec.run_entity_classification(small_kg, config, log_with=[recorder])
    curves = recorder.curves()
    assert set(curves) == {f"gnn_train_{f}_seed_{s}/train_loss" for f in ("1", "0.5") for s in (0, 1)}
    for fraction in ("1", "0.5"):
        for seed, run in enumerate(results["runs"]["gnn"][str(float(fraction))]):
            assert curves[f"gnn_train_{fraction}_seed_{seed}/train_loss"] == \
                list(enumerate(run["history"]["train_loss"], 1))


def test_log_with_names_a_tracker_it_cannot_use(capsys):
    assert main(["finetune", "kgqa", "--log-with", "banana"]) == 2
    assert "--log-with banana: unknown tracker(s) banana" in capsys.readouterr().err
    if importlib.util.find_spec("wandb") is None:
        assert main(["evaluate", "relation-classification", "--log-with", "wandb"]) == 2
        assert "--log-with wandb: wandb not installed" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="tensorboard is not installed")
def test_log_with_tensorboard_writes_the_loss_curve(small_kg, tiny_bert_dir, tmp_path):
    from jaket.kg.io import save_kg

    kg_dir = save_kg(small_kg, tmp_path / "kg")
    e, r = small_kg.entity_ids, small_kg.relation_ids
    valid = tmp_path / "valid.txt"
    valid.write_text("".join(f"{e[h]}\t{r[p]}\t{e[t]}\n" for h, p, t in np.asarray(small_kg.triples)[:4].tolist()))
    out = tmp_path / "run"
    assert main(["finetune", "link-prediction", "--kg", str(kg_dir), "--test", str(valid), "--encoder",
                 str(tiny_bert_dir), "--km-heads", "4", "--scorers", "distmult", "--steps", "3", "--batch-size", "8",
                 "--negatives", "4", "--log-with", "tensorboard", "--out", str(out)]) == 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = [EventAccumulator(str(p.parent)) for p in (out / "tensorboard").rglob("events.out.tfevents.*")]
    scalars = {tag: [s.value for s in acc.Scalars(tag)] for acc in events for tag in acc.Reload().Tags()["scalars"]}
    assert len(scalars["lm+g+m_distmult_seed_0/train_loss"]) == 3
