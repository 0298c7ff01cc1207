"""Fixtures of the training tests: the real JaketModel on the tiny random BERT and the toy KG, a
`jaket pretrain` run of the tiny config, and a free port for a process group."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from jaket.paths import default_model_path
    return AutoTokenizer.from_pretrained(default_model_path())


@pytest.fixture
def pretrain_argv(tiny_bert_dir):
    """``pretrain_argv(out, *extra, steps=4, every=2)``: the arguments of `jaket pretrain` for a run of
    the tiny config (toy KG, tiny BERT) into ``out``: ``steps`` steps, a checkpoint every ``every``
    steps, no progress bar; ``extra`` adds flags (``--kg DIR``, ``--resume``, ``--set KEY=VALUE``)."""

    def argv(out, *extra, steps=4, every=2) -> list[str]:
        return ["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(tiny_bert_dir),
                "--out", str(out), "--no-progress", "--steps", str(steps), "--set", f"checkpoint_every={every}",
                *extra]

    return argv


@pytest.fixture
def pretrain(pretrain_argv):
    """``pretrain(out, *extra, steps=4, every=2)``: that run, in this process; its exit status."""
    from jaket.cli import main

    return lambda out, *extra, **schedule: main(pretrain_argv(out, *extra, **schedule))


@pytest.fixture
def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free when asked, for a process group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
