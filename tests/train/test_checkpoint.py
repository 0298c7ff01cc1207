"""Checkpoints that lose no work: verified on load, fall-back to the newest intact one, no silent
restart, nothing of another run deleted, the KG and model shapes checked before loading, one
writer per output folder, and a checkpoint on SIGTERM / SIGINT (real JaketModel on the tiny BERT,
toy KG, `jaket pretrain` in this process)."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from jaket.train import checkpoint as ckpt
from jaket.train.rundir import LOCK_FILE


@pytest.fixture
def pretrain(pretrain):
    """The tiny run of the conftest without its held-out evaluation: these tests look at the
    checkpoints, not at what was learnt."""
    return lambda out, *extra, **schedule: pretrain(out, "--set", "eval_texts=0", *extra, **schedule)


def _steps(out):
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def _names(out):
    return [p.name for p in ckpt.checkpoint_dirs(out)]


@pytest.fixture
def run4(pretrain, tmp_path):
    """A finished 4-step run with checkpoints at steps 2 and 4."""
    out = tmp_path / "run"
    assert pretrain(out) == 0
    assert _names(out) == ["step-0000004", "step-0000002"]
    return out


def test_manifest_lists_every_file_with_its_size_and_hash(run4):
    path = run4 / "checkpoints" / "step-0000004"
    manifest = json.loads((path / "manifest.json").read_text())
    assert set(manifest["files"]) == set(ckpt.FILES) and manifest["step"] == 4
    for name, entry in manifest["files"].items():
        assert (path / name).stat().st_size == entry["size"]
    assert ckpt.verify_checkpoint(path) == manifest
    state = json.loads((path / "state.json").read_text())
    assert state["kg"]["entities"] == 40 and state["kg"]["relations"] == 5


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "manifest"])
def test_verification_names_the_damaged_file(run4, damage):
    path = run4 / "checkpoints" / "step-0000004"
    target = path / ("manifest.json" if damage == "manifest" else "optimizer.safetensors")
    data = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        target.unlink()
    with pytest.raises(ckpt.CorruptCheckpointError) as caught:
        ckpt.verify_checkpoint(path)
    assert str(target if damage != "manifest" else path) in str(caught.value)


@pytest.mark.parametrize("pointer", ["dangling", "empty", "corrupt-newest"])
def test_resume_falls_back_to_the_newest_intact_checkpoint(pretrain, run4, pointer, caplog):
    out = run4
    newest = out / "checkpoints" / "step-0000004"
    if pointer == "corrupt-newest":  # a truncated model file in the newest checkpoint
        model = newest / "model.safetensors"
        model.write_bytes(model.read_bytes()[:1000])
        expected = "step-0000002"
    else:
        (out / "checkpoints" / "latest").write_text("step-0000099\n" if pointer == "dangling" else "")
        expected = "step-0000004"
    (out / "summary.json").unlink()
    with caplog.at_level(logging.INFO):
        assert pretrain(out, "--resume", steps=6) == 0
    assert f"resumed from {out / 'checkpoints' / expected}" in caplog.text
    if pointer == "corrupt-newest":
        assert "model.safetensors: 1000 bytes, the manifest says" in caplog.text
        assert "resuming from step-0000002, the newest intact checkpoint" in caplog.text
    else:
        assert "latest" in caplog.text and "newest intact checkpoint" in caplog.text
    assert _steps(out) == [1, 2, 3, 4, 5, 6]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["session"]["resumed_from"] == expected and summary["steps"] == 6


def test_no_intact_checkpoint_is_an_error_not_a_restart(pretrain, run4, capsys):
    for path in ckpt.checkpoint_dirs(run4):
        (path / "state.json").write_text("{}")
    rows = (run4 / "metrics.jsonl").read_text()
    assert pretrain(run4, "--resume", steps=6) == 1
    err = capsys.readouterr().err
    assert "no intact checkpoint to resume from" in err and "state.json" in err
    assert "Traceback" not in err
    assert (run4 / "metrics.jsonl").read_text() == rows  # nothing deleted
    assert _names(run4) == ["step-0000004", "step-0000002"]


def test_resume_without_checkpoint_is_an_error_unless_auto(pretrain, tmp_path, capsys):
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "latest").write_text("step-0000050\n")  # dangling, no step-* folder
    assert pretrain(out, "--resume") == 1
    err = capsys.readouterr().err
    assert f"{out / 'checkpoints'}: no checkpoint to resume from" in err and "--resume=auto" in err
    assert not (out / "metrics.jsonl").exists()
    (out / "metrics.jsonl").write_text('{"step": 1}\n')  # a run killed before its first checkpoint
    assert pretrain(out, "--resume=auto") == 0
    assert _steps(out) == [1, 2, 3, 4]
    assert (out / "metrics.restarted-1.jsonl").read_text() == '{"step": 1}\n'  # kept, not deleted
    assert json.loads((out / "summary.json").read_text())["session"]["resumed"] is False
    assert pretrain(out, "--resume=auto", steps=6) == 0  # now there is one
    assert _steps(out) == [1, 2, 3, 4, 5, 6]


def test_a_fresh_start_never_deletes_an_earlier_run(pretrain, run4, capsys):
    rows = (run4 / "metrics.jsonl").read_text()
    assert pretrain(run4) == 1
    err = capsys.readouterr().err
    assert f"{run4} holds an earlier run" in err and "--resume" in err
    assert (run4 / "metrics.jsonl").read_text() == rows
    assert _names(run4) == ["step-0000004", "step-0000002"]
    assert pretrain(run4, "--overwrite", steps=2, every=0) == 0
    assert _steps(run4) == [1, 2] and _names(run4) == ["step-0000002"]


def test_pruning_keeps_checkpoints_of_other_runs(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    memory = {"entities": torch.zeros(4, 3), "relations": torch.zeros(2, 3)}

    def save(step, run):
        return ckpt.save_checkpoint(tmp_path, step, model, optimizer, scheduler, memory, {}, keep=1,
                                    run_id=run)

    save(1, "other")
    save(2, "other")
    assert _names(tmp_path) == ["step-0000002"]  # its own older one is pruned
    save(3, "ours")
    save(4, "ours")
    assert _names(tmp_path) == ["step-0000004", "step-0000002"]  # the other run's stays
    # a folder of another run (or a damaged one) at the step being written is set aside, not deleted
    save(2, "ours")
    assert (tmp_path / "checkpoints" / "replaced-step-0000002").is_dir()
    assert ckpt.verify_checkpoint(tmp_path / "checkpoints" / "step-0000002")["run_id"] == "ours"


def test_a_checkpoint_for_another_kg_or_model_is_refused_before_loading(pretrain, tmp_path, capsys):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    save_kg(kg, tmp_path / "kg", corpus=corpus)
    out = tmp_path / "run"
    assert pretrain(out, "--kg", str(tmp_path / "kg"), steps=2) == 0
    (out / "summary.json").unlink()
    with open(tmp_path / "kg" / "entities.jsonl", "a") as handle:
        for name in ("quokka", "wombat"):
            handle.write(json.dumps({"id": name, "name": name, "description": f"a {name}",
                                     "category": "animal"}) + "\n")
    written = {name: (out / name).read_bytes() for name in ("config.yaml", "data_report.json")}
    assert pretrain(out, "--kg", str(tmp_path / "kg"), "--resume", steps=4) == 1
    err = capsys.readouterr().err
    assert "this checkpoint was made for a KG of 40 entities; the KG has 42" in err
    assert "Traceback" not in err
    # the refused resume left the run's settings and data report as the run wrote them
    assert {name: (out / name).read_bytes() for name in written} == written
    # same KG, another knowledge-module shape
    assert pretrain(out, "--resume", "--set", "model.km_layers=2", steps=4) == 1
    err = capsys.readouterr().err
    assert "do not fit the model built from the config" in err and "model.km_layers (1 -> 2)" in err
    assert _steps(out) == [1, 2]


def test_resume_without_config_continues_with_the_runs_own_settings(pretrain, tmp_path, capsys, caplog):
    from jaket.cli import main

    out = tmp_path / "run"
    assert pretrain(out, "--set", "checkpoint_every=1", steps=3) == 0
    settings = (out / "config.yaml").read_bytes()
    for name in ("summary.json", "model"):  # the run as it was before its last step
        shutil.rmtree(out / name) if (out / name).is_dir() else (out / name).unlink()
    shutil.rmtree(out / "checkpoints" / "step-0000003")
    (out / "checkpoints" / "latest").write_text("step-0000002")
    capsys.readouterr()
    with caplog.at_level(logging.INFO, logger="jaket.train.job"):
        assert main(["pretrain", "--out", str(out), "--no-progress", "--resume"]) == 0
    assert f"resume: the settings of {out / 'config.yaml'}" in caplog.text
    assert json.loads((out / "summary.json").read_text())["steps"] == 3
    assert _steps(out) == [1, 2, 3]
    assert (out / "config.yaml").read_bytes() == settings


def test_a_resume_on_other_texts_is_refused_one_that_only_reads_them_otherwise_is_not(pretrain, tmp_path, capsys,
                                                                                        caplog):
    """The KG has its signature in a checkpoint; so do the tokenised texts. A resume whose ``data.*``
    settings change the texts (here the held-out share) would continue on others than the run was
    trained on (a leak, when the change drops an exclusion): refused, naming the setting. A change
    that leaves the texts as they were (``data.prefetch``) resumes with a warning."""
    out = tmp_path / "run"
    assert pretrain(out, "--set", "checkpoint_every=1", steps=2) == 0
    (out / "summary.json").unlink()
    written = {name: (out / name).read_bytes() for name in ("config.yaml", "data_report.json")}
    capsys.readouterr()
    assert pretrain(out, "--resume", "--set", "data.heldout_fraction=0.5", steps=3) == 1
    err = capsys.readouterr().err
    assert "this checkpoint was made with other pre-training texts" in err
    assert "data.heldout_fraction (0.1 -> 0.5)" in err and "training texts: 64 then, 35 now" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert {name: (out / name).read_bytes() for name in written} == written and _steps(out) == [1, 2]
    state = json.loads((out / "checkpoints" / "step-0000002" / "state.json").read_text())
    assert set(state["corpus"]) == {"train_texts", "heldout_texts", "train_mentions", "heldout_mentions", "sha256"}
    with caplog.at_level(logging.WARNING):
        assert pretrain(out, "--resume", "--set", "data.prefetch=3", steps=3) == 0
    assert "differs from the checkpoint's in: " in caplog.text and "data.prefetch (2 -> 3)" in caplog.text
    assert _steps(out) == [1, 2, 3]


def test_a_second_run_on_the_same_folder_is_refused(pretrain, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(  # another process holding the folder's lock, as a running pretrain does
        [sys.executable, "-c", "import fcntl, sys, time\n"
         f"f = open({str(out / LOCK_FILE)!r}, 'w'); f.write('pid 4242 on elsewhere'); f.flush()\n"
         "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert pretrain(out) == 1
        err = capsys.readouterr().err
        assert "another jaket pretrain is writing this folder (pid 4242 on elsewhere)" in err
        assert not (out / "metrics.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    assert pretrain(out, steps=2) == 0  # the lock died with its holder: it runs


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_saves_the_current_step_and_exits_with_its_code(pretrain, tmp_path, signum,
                                                                 capsys):
    from jaket.train.pretrain import Pretrainer

    out = tmp_path / "run"
    original = Pretrainer.train_step

    def step_then_signal(self):
        values = original(self)
        if self.step == 3:
            os.kill(os.getpid(), signum)
        return values

    Pretrainer.train_step = step_then_signal
    try:
        status = pretrain(out, steps=6, every=0)
    finally:
        Pretrainer.train_step = original
    assert status == 128 + signum
    err = capsys.readouterr().err
    assert f"stopped by {signal.Signals(signum).name} after step 3" in err
    assert _names(out) == ["step-0000003"] and _steps(out) == [1, 2, 3]
    assert not (out / "summary.json").exists()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers restored
    assert pretrain(out, "--resume", steps=6, every=0) == 0
    assert _steps(out) == [1, 2, 3, 4, 5, 6]
    state = load_file(out / "checkpoints" / "step-0000006" / "model.safetensors")
    assert state  # the final checkpoint exists and loads


def test_a_checkpoint_from_before_manifests_still_resumes(pretrain, run4, caplog):
    """A checkpoint of the previous format (no manifest, no KG record in state.json) resumes with a
    warning; one of this format that lost its manifest does not (see the damage test above)."""
    for name in ("step-0000004", "step-0000002"):
        path = run4 / "checkpoints" / name
        (path / "manifest.json").unlink()
        state = json.loads((path / "state.json").read_text())
        del state["kg"]
        (path / "state.json").write_text(json.dumps(state))
    with caplog.at_level(logging.WARNING):
        assert pretrain(run4, "--resume", steps=6) == 0
    assert "before checkpoints carried a manifest" in caplog.text
    assert _steps(run4)[-2:] == [5, 6]


def test_an_fp16_runs_gradient_scaler_survives_a_checkpoint(make_trainer, tmp_path):
    """Issue #29: the fp16 GradScaler (loss scale, growth tracker) was not saved, so a resumed fp16
    run started from the initial scale and no longer repeated the uninterrupted one."""
    state = {"scale": 512.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
             "_growth_tracker": 7}
    trainer = make_trainer(tmp_path / "run", "eval_texts=0")
    trainer.accelerator.scaler = torch.amp.GradScaler("cpu")  # what Accelerate makes for fp16 on a GPU
    trainer.accelerator.scaler.load_state_dict(state)
    trainer.train_step()
    trainer.save()
    resumed = make_trainer(tmp_path / "run", "eval_texts=0")
    resumed.accelerator.scaler = torch.amp.GradScaler("cpu")  # a fresh scale of 65536
    assert resumed.resume() and resumed.step == 1
    assert resumed.accelerator.scaler.state_dict() == state
