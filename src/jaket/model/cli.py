"""``jaket embed``: entity embeddings of any KG (also one never seen in pre-training), or
embeddings of texts read with that KG.

The KG's entity and relation memories are recomputed from its descriptions with the model's LM1
(Eq. 7), then the knowledge module runs over each entity's sampled neighbourhood (Eq. 1-5); LM2 is
not used (the paper's KG-only setting). Writes ``OUT`` (``.npy``, float32, one row per entity) and
``OUT.ids.json`` (the entity ids, row order), both atomically.

With ``--texts FILE`` (one text a line, or ``.jsonl`` with a ``"text"`` field) the texts are linked
to the KG's entities and encoded by the whole model (``JaketModel.encode_texts``: LM1, the KM
output fused at the mentions, LM2). Writes ``OUT`` (one row per linked mention:
``(Z^LM_s + Z^LM_o) / 2``), ``OUT.mentions.jsonl`` (row order: text index, character span,
surface, entity id), ``OUT.tokens.npy`` (every token's ``Z^LM``, all texts one after the other)
and ``OUT.texts.jsonl`` (per text: its rows in ``OUT.tokens.npy``, tokens and character offsets).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaket.atomic import atomic_open, write_lines, write_text
from jaket.kg.io import load_kg
from jaket.kg.linking import read_texts
from jaket.model.device import add_device_argument, resolve_device
from jaket.output import print_json


def embed(model_dir: Path, kg_dir: Path, out: Path, batch_size: int = 1024, layer: str = "km",
          seed: int = 0, device="cpu") -> dict:
    """Embed every entity of ``kg_dir``; ``layer="km"`` = E^KM, ``"memory"`` = E^context (LM1 only)."""
    import numpy as np
    import torch

    from jaket.model.jaket import JaketModel  # the model (torch_geometric), loaded when the command runs

    kg = load_kg(kg_dir)
    model = JaketModel.from_pretrained(model_dir, load_memory=False, device=device)
    with torch.no_grad():
        memory = model.memory_for(kg, progress=True)
        if layer == "memory":
            rows = memory.entity_rows(torch.arange(kg.num_entities))
        else:
            rows = model.encode_entities(kg, np.arange(kg.num_entities), memory=memory,
                                         batch_size=batch_size, generator=np.random.default_rng(seed))
    _write_atomic_npy(out, rows.float().cpu().numpy())
    ids_path = out.with_name(out.name + ".ids.json")
    write_text(ids_path, json.dumps(list(kg.entity_ids)))
    return {"entities": kg.num_entities, "dim": int(rows.shape[1]), "layer": layer,
            "embeddings": str(out), "ids": str(ids_path)}


def _write_atomic_npy(path: Path, array) -> None:
    import numpy as np

    with atomic_open(path, "wb") as handle:
        np.save(handle, array, allow_pickle=False)


def _write_atomic_lines(path: Path, rows) -> None:
    write_lines(path, (json.dumps(row, ensure_ascii=False) for row in rows))


def embed_texts(model_dir: Path, kg_dir: Path, texts_path: Path, out: Path, max_length: int = 128,
                batch_size: int = 16, seed: int = 0, device="cpu") -> dict:
    """Link and encode every text of ``texts_path`` with the KG of ``kg_dir`` (module docstring)."""
    import numpy as np
    import torch

    from jaket.model.jaket import JaketModel  # the model (torch_geometric), loaded when the command runs

    inputs = read_texts(texts_path)
    kg = load_kg(kg_dir)
    model = JaketModel.from_pretrained(model_dir, load_memory=False, device=device)
    encoding = model.encode_texts(inputs.texts, kg, max_length=max_length, batch_size=batch_size,
                                  generator=np.random.default_rng(seed))
    tokenizer = model.language.tokenizer
    dim = model.hidden_size
    mentions, text_rows, first = [], [], 0
    for i, text in enumerate(encoding.texts):
        for m in encoding.mentions[i]:
            mentions.append({"row": len(mentions), "text": i, "start": m.start, "end": m.end,
                             "surface": text[m.start:m.end], "entity": kg.entity_ids[m.entity]})
        length = len(encoding.input_ids[i])
        text_rows.append({"text": text, "index": i, "token_rows": [first, first + length],
                          "tokens": tokenizer.convert_ids_to_tokens(encoding.input_ids[i].tolist()),
                          "offsets": encoding.offsets[i].tolist()})
        first += length
    empty = torch.zeros(0, dim)
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic_npy(out, torch.cat(encoding.mention_embeddings or [empty]).numpy().astype(np.float32))
    _write_atomic_npy(out.with_name(out.name + ".tokens.npy"),
                      torch.cat(encoding.tokens or [empty]).numpy().astype(np.float32))
    _write_atomic_lines(out.with_name(out.name + ".mentions.jsonl"), mentions)
    _write_atomic_lines(out.with_name(out.name + ".texts.jsonl"), text_rows)
    return {"texts": len(encoding.texts), "blank_lines_skipped": inputs.blank_lines,
            "mentions": len(mentions), "mentions_cut_by_max_length": encoding.dropped_mentions,
            "tokens": first, "dim": dim, "embeddings": str(out)}


def _run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    if args.texts is not None:
        summary = embed_texts(args.model, args.kg, args.texts, args.out, args.max_length,
                              args.text_batch_size, args.seed, device=device)
    else:
        summary = embed(args.model, args.kg, args.out, args.batch_size, args.layer, args.seed,
                        device=device)
    print_json(summary)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "embed", help="entity embeddings of a KG (unseen KGs too) with a pre-trained model",
        description=__doc__.split("\n\n")[1])
    parser.add_argument("--model", type=Path, required=True, help="a pre-trained jaket model folder")
    parser.add_argument("--kg", type=Path, required=True, help="a KG directory")
    parser.add_argument("--out", type=Path, required=True, help="output .npy file")
    parser.add_argument("--texts", type=Path, metavar="FILE",
                        help="embed these texts instead (one a line, or .jsonl with a 'text' field): "
                             "linked to the KG, encoded with the KM fused at the mentions")
    parser.add_argument("--max-length", type=int, default=128,
                        help="with --texts: tokens per text, special tokens included (default 128)")
    parser.add_argument("--text-batch-size", type=int, default=16, help="with --texts: texts per batch (default 16)")
    parser.add_argument("--layer", choices=["km", "memory"], default="km",
                        help="km = knowledge-module output E^KM (default); memory = LM1 description "
                             "embeddings E^context")
    parser.add_argument("--batch-size", type=int, default=1024, help="entities per sampled batch (default 1024)")
    parser.add_argument("--seed", type=int, default=0, help="neighbour sampling seed")
    add_device_argument(parser)
    parser.set_defaults(func=_run)
