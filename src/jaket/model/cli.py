"""``jaket embed``: entity embeddings of any KG (also one never seen in pre-training).

The KG's entity and relation memories are recomputed from its descriptions with the model's LM1
(Eq. 7), then the knowledge module runs over each entity's sampled neighbourhood (Eq. 1-5); LM2 is
not used (the paper's KG-only setting). Writes ``OUT`` (``.npy``, float32, one row per entity) and
``OUT.ids.json`` (the entity ids, row order), both atomically.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaket.atomic import atomic_open, write_text


def embed(model_dir: Path, kg_dir: Path, out: Path, batch_size: int = 1024, layer: str = "km",
          seed: int = 0) -> dict:
    """Embed every entity of ``kg_dir``; ``layer="km"`` = E^KM, ``"memory"`` = E^context (LM1 only)."""
    import numpy as np
    import torch

    from jaket.kg.io import load_kg
    from jaket.model.jaket import JaketModel

    kg = load_kg(kg_dir)
    model = JaketModel.from_pretrained(model_dir, load_memory=False).eval()
    with torch.no_grad():
        memory = model.memory_for(kg, progress=True)
        if layer == "memory":
            rows = memory.entity_rows(torch.arange(kg.num_entities))
        else:
            rows = model.encode_entities(kg, np.arange(kg.num_entities), memory=memory,
                                         batch_size=batch_size, generator=np.random.default_rng(seed))
    with atomic_open(out, "wb") as handle:
        np.save(handle, rows.float().numpy(), allow_pickle=False)
    ids_path = out.with_name(out.name + ".ids.json")
    write_text(ids_path, json.dumps(list(kg.entity_ids)))
    return {"entities": kg.num_entities, "dim": int(rows.shape[1]), "layer": layer,
            "embeddings": str(out), "ids": str(ids_path)}


def _run(args: argparse.Namespace) -> int:
    summary = embed(args.model, args.kg, args.out, args.batch_size, args.layer, args.seed)
    print(json.dumps(summary, indent=2))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "embed", help="entity embeddings of a KG (unseen KGs too) with a pre-trained model",
        description=__doc__.split("\n\n")[1])
    parser.add_argument("--model", type=Path, required=True, help="a pre-trained jaket model folder")
    parser.add_argument("--kg", type=Path, required=True, help="a KG directory")
    parser.add_argument("--out", type=Path, required=True, help="output .npy file")
    parser.add_argument("--layer", choices=["km", "memory"], default="km",
                        help="km = knowledge-module output E^KM (default); memory = LM1 description "
                             "embeddings E^context")
    parser.add_argument("--batch-size", type=int, default=1024, help="entities per sampled batch")
    parser.add_argument("--seed", type=int, default=0, help="neighbour sampling seed")
    parser.set_defaults(func=_run)
