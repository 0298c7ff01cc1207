"""The mentions pass of ``jaket link --model`` (:meth:`ContextLinker.queries`): padding and seconds.

    python -m benchmarks.mention_pass --kg runs/bench-link/wordnet --model runs/bench-link/pretrain/model \\
        --texts runs/bench-link/wic-train-sentences.txt [--limit 2000] [--save queries.npy]

Finds the ranked mentions (two or more candidates) of the first ``--limit`` texts with the linker's
gazetteer, then reads them as ``link`` does (chunks of 16 × ``batch_size`` texts), fp32, one thread:
the wall and CPU seconds of the pass, and the padding of its batches in the texts' given order
against the length-sorted order the pass uses (:func:`jaket.model.memory.length_sorted_batches`),
counted from the tokenizer (it does not depend on the machine). To compare two versions of the code,
run it from each (a worktree first on ``PYTHONPATH``), interleaved, and compare the ``--save``d
queries. Prints JSON (docs/performance.md, "The mentions pass, length-sorted").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from jaket.kg.io import load_kg
from jaket.model.memory import length_sorted_batches
from jaket.senses.linker import ContextLinker


def padding(lengths: np.ndarray, batch_size: int) -> dict:
    """Token positions of batches of ``batch_size`` texts of token counts ``lengths``, in the given
    order and length-sorted (each batch padded to its longest text)."""
    given = sum(int(lengths[b:b + batch_size].max()) * len(lengths[b:b + batch_size])
                for b in range(0, len(lengths), batch_size))
    ordered = sum(int(lengths[i].max()) * len(i) for i in length_sorted_batches(lengths, batch_size))
    return {"tokens": int(lengths.sum()), "positions_given_order": given, "positions_sorted": ordered}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kg", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--texts", type=Path, required=True, help="one text a line")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--save", type=Path, help="write the queries (mentions × hidden, float32) here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:  # one line for a missing or unreadable input, as jaket's commands give
        texts = args.texts.read_text(encoding="utf-8").splitlines()[:args.limit]
        linker = ContextLinker.from_pretrained(args.model, load_kg(args.kg), device="cpu", precision="fp32")
    except (OSError, ValueError) as error:
        parser.error(str(error))
    chunk = 16 * linker.batch_size
    chunks = []  # link's chunks: the ranked mentions of each, and their texts' token counts
    counts = {"tokens": 0, "positions_given_order": 0, "positions_sorted": 0}
    for begin in range(0, len(texts), chunk):
        mentions = [(text, (span.start, span.end)) for text in texts[begin:begin + chunk]
                    for span in linker._spans(text, None) if len(getattr(span, "candidates", ())) > 1]
        chunks.append(mentions)
        distinct = list(dict.fromkeys(text for text, _ in mentions))
        lengths = np.array([len(ids) for ids in linker.model.language.tokenizer(
            distinct, truncation=True, max_length=linker.max_length)["input_ids"]])
        for key, value in padding(lengths, linker.batch_size).items():
            counts[key] += value
    wall, cpu = time.perf_counter(), time.process_time()
    queries = [q for mentions in chunks
               for q in linker.queries([t for t, _ in mentions], [s for _, s in mentions])]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if args.save:
        np.save(args.save, np.stack([q.numpy() for q in queries]))
    figures = {"texts": len(texts), "ranked_mentions": len(queries), "wall_seconds": round(wall, 2),
               "cpu_seconds": round(cpu, 2), **counts,
               "padding_given_order": round(1 - counts["tokens"] / counts["positions_given_order"], 4),
               "padding_sorted": round(1 - counts["tokens"] / counts["positions_sorted"], 4)}
    print(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
