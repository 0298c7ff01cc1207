"""The engine's own launcher and torchrun: two CPU processes (gloo) pre-train the real JaketModel
(tiny BERT, toy KG) through `jaket pretrain`. A run under `torchrun`, cut back to its step-2
checkpoint (as after a `kill -9` there) and resumed under `accelerate launch`, ends with exactly
the parameters, memory and losses of the uninterrupted run."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

BIN = Path(sys.executable).parent


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
                PYTHONPATH=os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2] / "src"),
                                                       os.environ.get("PYTHONPATH")) if p))


def _launch(launcher: list[str], argv: list[str]) -> str:
    """`jaket pretrain` with ``argv`` under ``launcher`` on the CPU; its log."""
    command = launcher + ["-m", "jaket", *argv, "--device", "cpu", "--set", "memory.initial=2"]
    done = subprocess.run(command, env=_env(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return done.stdout.decode() + done.stderr.decode()


@pytest.mark.distributed
@pytest.mark.skipif(shutil.which("accelerate", path=str(BIN)) is None, reason="accelerate not installed")
def test_torchrun_run_resumes_exactly_under_accelerate_launch(pretrain_argv, free_port, tmp_path):
    full, cut = tmp_path / "full", tmp_path / "cut"
    torchrun = [str(BIN / "torchrun"), "--standalone", "--nproc_per_node", "2"]
    log = _launch(torchrun, pretrain_argv(full))
    assert "rank 1 of 2" in log and "on each of 2 ranks" in log
    summary = json.loads((full / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["device"].startswith("cpu")

    shutil.copytree(full, cut)  # back to the step-2 checkpoint, as a run killed after it
    shutil.rmtree(cut / "checkpoints" / "step-0000004")
    shutil.rmtree(cut / "model")
    (cut / "summary.json").unlink()
    (cut / "checkpoints" / "latest").write_text("step-0000002\n")
    accelerate = [str(BIN / "accelerate"), "launch", "--multi_gpu", "--num_processes", "2",
                  "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                  "--main_process_port", str(free_port)]
    log = _launch(accelerate, pretrain_argv(cut, "--resume"))
    assert "resumed from" in log and "rank 1 of 2" in log
    assert json.loads((cut / "summary.json").read_text())["world_size"] == 2

    rows = [[json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            for run in (full, cut)]
    assert rows[0] == rows[1] and [r["step"] for r in rows[0]] == [1, 2, 3, 4]
    for name in ("jaket.safetensors", "encoder/model.safetensors", "memory/memory.safetensors"):
        a, b = load_file(full / "model" / name), load_file(cut / "model" / name)
        assert a.keys() == b.keys()
        for key in a:
            assert torch.equal(a[key], b[key]), (name, key)
