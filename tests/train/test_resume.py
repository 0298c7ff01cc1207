"""`jaket pretrain` killed with SIGKILL after a checkpoint, resumed with --resume: the losses after
the resume point and the final parameters equal those of an uninterrupted run (real JaketModel on
the tiny BERT, toy KG, separate processes)."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from safetensors.torch import load_file

from .conftest import CONFIGS

STEPS = 60


def _command(tiny_bert_dir, out, resume=False, device="cpu"):
    command = [sys.executable, "-m", "jaket", "pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"),
               "--encoder", str(tiny_bert_dir), "--out", str(out), "--no-progress",
               "--steps", str(STEPS), "--set", "checkpoint_every=5", "--set", "memory.initial=3",
               "--device", device]
    return command + (["--resume"] if resume else [])


def _env():
    # one thread each: the same arithmetic in every process, and gentle on a shared machine
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")


def _rows(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _tensors(out):
    tensors = {}
    for name in ("model/jaket.safetensors", "model/encoder/model.safetensors",
                 "model/memory/memory.safetensors"):
        for key, value in load_file(out / name).items():
            tensors[f"{name}:{key}"] = value
    return tensors


@pytest.mark.gpu
def test_killed_run_resumes_exactly(tiny_bert_dir, tmp_path, run_device):
    # on a GPU the knowledge module's scatter-adds use atomics (summation order varies run to run)
    tolerance = 1e-6 if run_device == "cpu" else 1e-4
    full, cut = tmp_path / "full", tmp_path / "cut"
    uninterrupted = subprocess.Popen(_command(tiny_bert_dir, full, device=run_device), env=_env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    victim = subprocess.Popen(_command(tiny_bert_dir, cut, device=run_device), env=_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    latest = cut / "checkpoints" / "latest"
    deadline = time.monotonic() + 300
    while not latest.exists() and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    _, err = victim.communicate()
    assert victim.returncode == -signal.SIGKILL, err.decode()[-3000:]
    assert not (cut / "summary.json").exists()  # it really died mid-run
    killed_at = max(r["step"] for r in _rows(cut))
    checkpoint = int(latest.read_text().split("-")[1])
    print(f"killed after step {killed_at}, resuming from checkpoint {checkpoint}")
    assert 5 <= checkpoint < STEPS and checkpoint <= killed_at < STEPS

    resumed = subprocess.run(_command(tiny_bert_dir, cut, resume=True, device=run_device), env=_env(),
                             capture_output=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert f"resumed from {latest.parent / f'step-{checkpoint:07d}'}" in resumed.stderr.decode()
    _, err = uninterrupted.communicate(timeout=600)
    assert uninterrupted.returncode == 0, err.decode()[-3000:]

    a, b = _rows(full), _rows(cut)
    assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(1, STEPS + 1))
    for ra, rb in zip(a, b):
        for key in ("loss_category", "loss_relation", "loss_mlm", "loss_entity", "grad_norm"):
            assert abs(ra[key] - rb[key]) <= tolerance, (ra["step"], key, ra[key], rb[key])
    assert json.loads((cut / "summary.json").read_text())["refresh_count"] == \
        json.loads((full / "summary.json").read_text())["refresh_count"]
    ta, tb = _tensors(full), _tensors(cut)
    assert ta.keys() == tb.keys()
    for name in ta:
        assert np.allclose(ta[name].float().numpy(), tb[name].float().numpy(), atol=tolerance, rtol=0), name


def test_sigterm_saves_the_current_step_and_resume_loses_none(tiny_bert_dir, tmp_path):
    """A scheduler's pre-emption (SIGTERM) of a real `jaket pretrain` process mid-run: it finishes
    the step it is in, checkpoints it and exits 143; `--resume` continues from that very step."""
    out, steps = tmp_path / "run", 16
    command = [sys.executable, "-m", "jaket", "pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"),
               "--encoder", str(tiny_bert_dir), "--out", str(out), "--no-progress", "--steps", str(steps),
               "--set", "checkpoint_every=0", "--set", "eval_texts=0"]
    victim = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while victim.poll() is None and time.monotonic() < deadline and \
            (not metrics.exists() or metrics.read_text().count("\n") < 3):
        time.sleep(0.01)
    victim.send_signal(signal.SIGTERM)
    _, err = victim.communicate(timeout=300)
    assert victim.returncode == 128 + signal.SIGTERM, err.decode()[-3000:]
    last = max(r["step"] for r in _rows(out))
    assert 3 <= last < steps
    assert f"stopped by SIGTERM after step {last}" in err.decode()
    assert (out / "checkpoints" / "latest").read_text().strip() == f"step-{last:07d}"  # none lost
    assert not (out / "summary.json").exists()

    resumed = subprocess.run(command + ["--resume"], env=_env(), capture_output=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert f"resumed from {out / 'checkpoints' / f'step-{last:07d}'} at step {last}" in resumed.stderr.decode()
    assert [r["step"] for r in _rows(out)] == list(range(1, steps + 1))
