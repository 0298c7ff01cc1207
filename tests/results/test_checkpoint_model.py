"""results/checkpoint_model.py: a pre-training checkpoint becomes a model folder that loads
with the checkpoint's parameters and memory (the pre-training-length ablation of docs/results.md)."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from jaket.cli import main
from jaket.model.jaket import JaketModel
from results.checkpoint_model import export

REPO = Path(__file__).resolve().parents[2]


def test_a_checkpoint_becomes_a_model_folder_with_its_weights_and_memory(tiny_bert_dir, tmp_path):
    out = tmp_path / "run"
    assert main(["pretrain", "--config", str(REPO / "configs" / "pretrain-tiny.yaml"), "--encoder", str(tiny_bert_dir),
                 "--out", str(out), "--no-progress", "--steps", "4", "--set", "checkpoint_every=2",
                 "--set", "keep_checkpoints=3", "--set", "eval_texts=0"]) == 0
    step2 = out / "checkpoints" / "step-0000002"
    model = JaketModel.from_pretrained(export(step2, out / "config.yaml", tmp_path / "model-2"))
    saved = load_file(step2 / "model.safetensors")
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in saved.items())
    memory = load_file(step2 / "memory.safetensors")
    assert torch.equal(model.memory.entities.float(), memory["entities"].float())
    final = JaketModel.from_pretrained(out / "model").state_dict()
    assert any(not torch.equal(final[k], state[k]) for k in saved)  # step 2 is not the end of the run
