"""Turn one pre-training checkpoint into a model folder (the "pre-training length" ablation).

    python -m results.checkpoint_model runs/reference-snapshots/step-0000300 \\
        --config runs/reference/config.yaml --out runs/reference-300/model

A checkpoint (``jaket pretrain``'s ``checkpoints/step-N``) holds the model's parameters and the
entity context memory of step ``N``; this verifies it (sizes and SHA-256 of the manifest), loads
both into the model the run's config builds, and writes what ``jaket pretrain`` writes at the end
of a run (``JaketModel.save_pretrained``), so the downstream commands take it as ``--model``. The
learning rate of a snapshot taken mid-run has not decayed: it is "the reference run after N of
its steps", not a separately scheduled short run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from safetensors.torch import load_file

from jaket.train.build import build_model, load_kg_and_corpus
from jaket.train.checkpoint import verify_checkpoint
from jaket.train.config import load_config


def export(checkpoint: Path, config_path: Path, out: Path) -> Path:
    verify_checkpoint(checkpoint)
    config = load_config(config_path)
    kg, _, _ = load_kg_and_corpus(config)
    model = build_model(config, kg)
    missing, unexpected = model.load_state_dict(load_file(checkpoint / "model.safetensors"), strict=False)
    if missing or unexpected:
        raise SystemExit(f"{checkpoint}: does not fit the config's model (missing {missing}, "
                         f"unexpected {unexpected})")
    memory = load_file(checkpoint / "memory.safetensors")
    with torch.no_grad():
        model.memory.entities.copy_(memory["entities"])
        model.memory.relations.copy_(memory["relations"])
    return model.save_pretrained(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", type=Path, help="a checkpoints/step-N folder")
    parser.add_argument("--config", type=Path, required=True, help="the run's config.yaml")
    parser.add_argument("--out", type=Path, required=True, help="model folder to write")
    args = parser.parse_args(argv)
    print(export(args.checkpoint, args.config, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
