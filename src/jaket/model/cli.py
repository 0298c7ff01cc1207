"""``jaket embed``: entity embeddings of any KG (also one never seen in pre-training), or
embeddings of texts read with that KG.

The KG's entity and relation memories are recomputed from its descriptions with the model's LM1
(Eq. 7), then the knowledge module runs over each entity's sampled neighbourhood (Eq. 1-5); LM2 is
not used (the paper's KG-only setting). Writes ``OUT`` (``.npy``, float32, one row per entity) and
``OUT.ids.json`` (the entity ids, row order), both atomically.

With ``--texts FILE`` (one text a line, or ``.jsonl`` with a ``"text"`` field) the texts are linked
to the KG's entities and encoded by the whole model (``JaketModel.encode_texts``: LM1, the KM
output fused at the mentions, LM2). ``OUT`` holds what was asked for, one row per text: the mean
of its tokens' ``Z^LM`` (special tokens left out, the fused entities included). Beside it, named in
the summary: ``OUT.mention-vectors.npy`` (one row per linked mention: ``(Z^LM_s + Z^LM_o) / 2``),
``OUT.mentions.jsonl`` (its row order: text index, character span, surface, entity id),
``OUT.tokens.npy`` (every token's ``Z^LM``, all texts one after the other) and
``OUT.texts.jsonl`` (per text: its rows in ``OUT.tokens.npy``, tokens and character offsets).

``--normalize`` scales every entity, mention and text vector to unit length (cosine similarity
becomes a dot product). ``--format parquet`` writes the vectors with their ids in one file
instead (``OUT``: entity id and vector; with ``--texts``, ``OUT`` the texts and
``OUT.mention-vectors.parquet`` the mentions, each row with its metadata and vector; needs pyarrow,
``pip install 'jaket[parquet]'``).

``--faiss-index`` also writes ``OUT.faiss`` (with ``--texts`` also ``OUT.mention-vectors.faiss``): an
exact inner-product FAISS index (``IndexFlatIP``) of the same vectors, unit length (it implies
``--normalize``, so a search ranks by cosine); row ``i`` of an index is row ``i`` of its vectors,
so the ids are the ones above. Needs faiss, ``pip install 'jaket[faiss]'``.

Before the model is loaded, ``OUT`` and every file beside it are checked
(:func:`jaket.output.check_output_file`: none may exist unless ``--overwrite``, be a folder or an
input, and the folder must be writable), and an empty ``--texts`` file is refused.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from jaket.atomic import atomic_open, write_lines, write_text
from jaket.kg.io import load_kg
from jaket.kg.linking import read_texts
from jaket.kg.readers import refuse_empty
from jaket.flags import add_device_argument, deprecated_alias, positive_int
from jaket.model.device import resolve_device
from jaket.output import check_output_file, print_json
from jaket.paths import require_package


#: ``--batch-size``'s default: entities per sampled batch, and with ``--texts`` texts per forward pass
ENTITY_BATCH_SIZE, TEXT_BATCH_SIZE = 1024, 16
#: an output format or index -> the module it needs and the extra of jaket that brings it
NEEDS = {"parquet": ("pyarrow.parquet", "parquet"), "faiss": ("faiss", "faiss")}


def beside(out: Path, suffix: str) -> Path:
    """``OUT.suffix``: a file written next to the main output."""
    return out.with_name(f"{out.name}.{suffix}")


def companions(out: Path, texts: bool, fmt: str = "npy", faiss_index: bool = False) -> dict[str, Path]:
    """The files ``embed`` writes beside ``OUT`` (module docstring), as the summary names them:
    with ``texts`` the mentions' vectors and rows, the tokens and the texts' rows; else the entity
    ids (``npy``); and the FAISS indexes."""
    if texts:
        files = {"mention_vectors": beside(out, f"mention-vectors.{fmt}"), "mentions": beside(out, "mentions.jsonl"),
                 "tokens": beside(out, "tokens.npy"), "texts": beside(out, "texts.jsonl")}
    else:
        files = {"ids": beside(out, "ids.json")} if fmt == "npy" else {}
    if faiss_index:
        files["faiss_index"] = beside(out, "faiss")
        if texts:
            files["mention_faiss_index"] = beside(out, "mention-vectors.faiss")
    return files


def unit_rows(array):
    """Each row divided by its L2 norm (a zero row stays zero)."""
    import numpy as np

    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return (array / np.where(norms > 0, norms, 1)).astype(np.float32)


def write_faiss_index(path: Path, vectors) -> None:
    """An exact inner-product FAISS index (``IndexFlatIP``) of ``vectors`` (float32, one row each;
    unit rows make the inner product the cosine) at ``path``, atomically; its row ``i`` is row
    ``i`` of ``vectors``. ``faiss.read_index(str(path))`` loads it."""
    import numpy as np

    faiss = require_package(*NEEDS["faiss"])
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    index = faiss.IndexFlatIP(int(vectors.shape[1]))
    index.add(vectors)
    with atomic_open(path, "wb") as handle:
        handle.write(faiss.serialize_index(index).tobytes())


def write_vectors(path: Path, vectors, rows: list[dict], fmt: str = "npy", normalize: bool = False,
                  faiss_path: Path | None = None) -> None:
    """``vectors`` (float32, one row each) at ``path``: ``npy``, or ``parquet`` with each row's
    metadata (``rows``) beside its vector in one table; atomically either way. With
    ``faiss_path``, also an inner-product index of the (normalised) vectors there
    (:func:`write_faiss_index`)."""
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    if normalize:
        vectors = unit_rows(vectors)
    if faiss_path is not None:
        write_faiss_index(faiss_path, vectors)
    if fmt == "npy":
        _write_atomic_npy(path, vectors)
        return
    pa = require_package("pyarrow", "parquet")
    pq = require_package(*NEEDS["parquet"])
    columns = {key: [row[key] for row in rows] for key in (rows[0] if rows else {})}
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim)
    with atomic_open(path, "wb") as handle:
        pq.write_table(pa.table(columns), handle)


def embed(model_dir: Path, kg_dir: Path, out: Path, batch_size: int = 1024, layer: str = "km",
          seed: int = 0, device="cpu", fmt: str = "npy", normalize: bool = False,
          faiss_index: bool = False) -> dict:
    """Embed every entity of ``kg_dir``; ``layer="km"`` = E^KM, ``"memory"`` = E^context (LM1 only);
    ``faiss_index``: also ``OUT.faiss`` (module docstring; implies ``normalize``)."""
    import numpy as np
    import torch

    kg = load_kg(kg_dir)  # the inputs first: a bad KG fails before the model code loads
    from jaket.model.jaket import JaketModel  # the model (torch_geometric), loaded when the command runs

    model = JaketModel.from_pretrained(model_dir, load_memory=False, device=device)
    with torch.no_grad():
        memory = model.memory_for(kg, progress=True)
        if layer == "memory":
            rows = memory.entity_rows(torch.arange(kg.num_entities))
        else:
            rows = model.encode_entities(kg, np.arange(kg.num_entities), memory=memory,
                                         batch_size=batch_size, generator=np.random.default_rng(seed))
    normalize = normalize or faiss_index
    files = companions(out, False, fmt, faiss_index)
    write_vectors(out, rows.float().cpu().numpy(), [{"entity": e} for e in kg.entity_ids], fmt, normalize,
                  files.get("faiss_index"))
    if "ids" in files:
        write_text(files["ids"], json.dumps(list(kg.entity_ids)))
    named = {name: str(path) for name, path in files.items()}
    return {"entities": kg.num_entities, "dim": int(rows.shape[1]), "layer": layer, "normalized": normalize,
            "format": fmt, "embeddings": str(out), **named, "companions": named}


def _write_atomic_npy(path: Path, array) -> None:
    import numpy as np

    with atomic_open(path, "wb") as handle:
        np.save(handle, array, allow_pickle=False)


def _write_atomic_lines(path: Path, rows) -> None:
    write_lines(path, (json.dumps(row, ensure_ascii=False) for row in rows))


def embed_texts(model_dir: Path, kg_dir: Path, texts_path: Path, out: Path, max_length: int = 128,
                batch_size: int = 16, seed: int = 0, device="cpu", fmt: str = "npy",
                normalize: bool = False, faiss_index: bool = False) -> dict:
    """Link and encode every text of ``texts_path`` with the KG of ``kg_dir`` (module docstring;
    ``faiss_index``: also ``OUT.faiss`` and ``OUT.mention-vectors.faiss``, implies ``normalize``)."""
    import numpy as np
    import torch

    inputs = read_texts(texts_path)  # the inputs first: bad ones fail before the model code loads
    kg = load_kg(kg_dir)
    from jaket.model.jaket import JaketModel  # the model (torch_geometric), loaded when the command runs

    model = JaketModel.from_pretrained(model_dir, load_memory=False, device=device)
    encoding = model.encode_texts(inputs.texts, kg, max_length=max_length, batch_size=batch_size,
                                  generator=np.random.default_rng(seed))
    tokenizer = model.language.tokenizer
    dim = model.hidden_size
    special = set(tokenizer.all_special_ids)
    mentions, text_rows, text_vectors, first = [], [], [], 0
    for i, text in enumerate(encoding.texts):
        content = ~np.isin(encoding.input_ids[i].numpy(), list(special))
        tokens = encoding.tokens[i][torch.from_numpy(content)] if content.any() else encoding.tokens[i]
        text_vectors.append(tokens.float().mean(0) if len(tokens) else torch.zeros(dim))
        for m in encoding.mentions[i]:
            mentions.append({"row": len(mentions), "text": i, "start": m.start, "end": m.end,
                             "surface": text[m.start:m.end], "entity": kg.entity_ids[m.entity]})
        length = len(encoding.input_ids[i])
        text_rows.append({"text": text, "index": i, "token_rows": [first, first + length],
                          "tokens": tokenizer.convert_ids_to_tokens(encoding.input_ids[i].tolist()),
                          "offsets": encoding.offsets[i].tolist()})
        first += length
    empty = torch.zeros(0, dim)
    normalize = normalize or faiss_index
    files = companions(out, True, fmt, faiss_index)
    write_vectors(out, torch.stack(text_vectors).numpy() if text_vectors else empty.numpy(),
                  [{"index": row["index"], "text": row["text"]} for row in text_rows], fmt, normalize,
                  files.get("faiss_index"))
    write_vectors(files["mention_vectors"], torch.cat(encoding.mention_embeddings or [empty]).numpy(), mentions,
                  fmt, normalize, files.get("mention_faiss_index"))
    _write_atomic_npy(files["tokens"], torch.cat(encoding.tokens or [empty]).numpy().astype(np.float32))
    _write_atomic_lines(files["mentions"], mentions)
    _write_atomic_lines(files["texts"], text_rows)
    return {"texts": len(encoding.texts), "blank_lines_skipped": inputs.blank_lines,
            "mentions": len(mentions), "mentions_cut_by_max_length": encoding.dropped_mentions,
            "tokens": first, "dim": dim, "normalized": normalize, "format": fmt, "embeddings": str(out),
            "pooling": "mean of the text's tokens (Z^LM, entities fused at their mentions), special tokens "
            "left out", "companions": {name: str(path) for name, path in files.items()}}


def _run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # not six lines on which build it loaded
    for wanted in ([args.format] if args.format in NEEDS else []) + (["faiss"] if args.faiss_index else []):
        require_package(*NEEDS[wanted])  # before the model runs: one line naming the extra to install
    texts = args.texts is not None
    files = companions(args.out, texts, args.format, args.faiss_index)
    check_output_file(args.out, args.overwrite, inputs=[args.texts, args.model, args.kg], companions=files.values())
    if texts:
        refuse_empty(args.texts, "--texts", "embed")
        summary = embed_texts(args.model, args.kg, args.texts, args.out, args.max_length,
                              args.batch_size or TEXT_BATCH_SIZE, args.seed, device=device, fmt=args.format,
                              normalize=args.normalize, faiss_index=args.faiss_index)
    else:
        summary = embed(args.model, args.kg, args.out, args.batch_size or ENTITY_BATCH_SIZE, args.layer, args.seed,
                        device=device, fmt=args.format, normalize=args.normalize,
                        faiss_index=args.faiss_index)
    print_json(summary)
    what = f"{summary['texts']:,} text vectors" if texts else f"{summary['entities']:,} entity vectors"
    print(f"{args.out}: {what}; beside it: {', '.join(Path(p).name for p in files.values()) or 'nothing'}",
          file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "embed", help="entity embeddings of a KG (unseen KGs too) with a pre-trained model",
        description=__doc__.split("\n\n")[1])
    parser.add_argument("--model", type=Path, required=True, metavar="DIR",
                        help="a pre-trained jaket model folder (`jaket pretrain`'s OUT/model)")
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR", help="a KG directory")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE",
                        help="output file (.npy or .parquet): the entity vectors, with --texts the text vectors")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out and the files beside it (refused otherwise)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout, alone (everything else goes to stderr)")
    parser.add_argument("--texts", type=Path, metavar="FILE",
                        help="embed these texts instead (one a line, or .jsonl with a 'text' field): "
                             "linked to the KG, encoded with the KM fused at the mentions")
    parser.add_argument("--max-length", type=positive_int, default=128, metavar="TOKENS",
                        help="with --texts: tokens per text, special tokens included (default 128)")
    parser.add_argument("--layer", choices=["km", "memory"], default="km",
                        help="km = knowledge-module output E^KM (default); memory = LM1 description "
                             "embeddings E^context")
    parser.add_argument("--batch-size", type=positive_int, default=None, metavar="N",
                        help=f"entities per sampled batch (default {ENTITY_BATCH_SIZE}); with --texts, texts per "
                             f"forward pass (default {TEXT_BATCH_SIZE})")
    deprecated_alias(parser, "--text-batch-size", "--batch-size")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="the seed of the neighbour sampling (default 0)")
    parser.add_argument("--normalize", action="store_true", help="unit-length vectors (cosine = dot product)")
    parser.add_argument("--format", choices=["npy", "parquet"], default="npy",
                        help="npy (ids in OUT.ids.json / OUT.texts.jsonl) or parquet (ids and vectors "
                             "in one file; pip install 'jaket[parquet]')")
    parser.add_argument("--faiss-index", action="store_true",
                        help="also write OUT.faiss (with --texts also OUT.mention-vectors.faiss): an exact "
                             "inner-product FAISS index of the vectors, row i = row i of the ids; implies "
                             "--normalize, so it ranks by cosine (pip install 'jaket[faiss]')")
    add_device_argument(parser)
    parser.set_defaults(func=_run)
