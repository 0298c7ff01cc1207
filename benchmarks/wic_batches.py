"""Word-in-context training with random against length-grouped batches: padding and CPU seconds.

    python -m benchmarks.wic_batches --train ../shared/data/wic/train.data.txt \\
        [--encoder models/all-mpnet-base-v2] [--steps 12] [--rounds 2]

The padding of one epoch's batches (32 pairs, both texts padded to the batch's longest) in the
shuffled order that ``fit`` cuts in turn, against :func:`jaket.tasks.training.length_grouped_batches`
(``--group-by-length``), counted from the tokenizer (it does not depend on the machine); then the LM-only
model's training steps (forward, backward, AdamW), fp32, one thread, ``--steps`` batches of each
order per round, the rounds interleaved (random, grouped, random, grouped, ...) so that a
neighbour's load falls on both: CPU seconds per step and per token position, and one run's
estimate (the epochs' positions times the seconds per position; the selection and evaluation
passes are not counted). Prints JSON (docs/performance.md, x).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from jaket.model.device import cpu_description
from jaket.tasks.training import length_grouped_batches
from jaket.tasks.word_in_context import load_pairs
from jaket.tasks.word_in_context import WordInContextConfig
from jaket.tasks.word_in_context import build_model, encode_pairs


def positions(batches, lengths: np.ndarray) -> int:
    """Token positions of ``batches`` of pairs: both texts of each pair padded to the batch's longest."""
    return sum(2 * len(b) * int(lengths[b].max()) for b in batches)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=Path, required=True, help="WiC *.data.txt (labels beside it) or JSONL")
    parser.add_argument("--encoder", type=Path, default=None, help="default: the bundled MiniLM")
    parser.add_argument("--steps", type=int, default=12, help="timed steps of each order per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = WordInContextConfig(encoder=args.encoder, batch_size=args.batch_size)
    try:  # one line for a missing or unreadable input, as jaket's commands give
        pairs = load_pairs(args.train)
        model = build_model(config, "lm", 0)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    data = encode_pairs(pairs, model.language.tokenizer, None, config.max_length, 1)
    lengths = data.pair_lengths()
    tokens = int(sum(len(ids) for ids in data.input_ids))
    rng = np.random.default_rng(0)
    order = rng.permutation(len(data))
    orders = {"random": [order[b:b + args.batch_size] for b in range(0, len(order), args.batch_size)],
              "grouped": length_grouped_batches(order, lengths, args.batch_size, rng)}
    epoch = {name: positions(batches, lengths) for name, batches in orders.items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    pad = int(model.language.tokenizer.pad_token_id)
    model.train()
    spent = {name: {"cpu_seconds": 0.0, "steps": 0, "positions": 0} for name in orders}
    for round_ in range(args.rounds):
        for name, batches in orders.items():
            for rows in batches[round_ * args.steps:(round_ + 1) * args.steps]:
                batch = data.batch(rows, pad)
                cpu = time.process_time()
                logits, _ = model(batch)
                loss = F.binary_cross_entropy_with_logits(logits.float(), batch["labels"])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                spent[name]["cpu_seconds"] += time.process_time() - cpu
                spent[name]["steps"] += 1
                spent[name]["positions"] += int(batch["input_ids"].numel())
    figures = {"cpu": cpu_description(), "encoder": str(args.encoder or "bundled MiniLM"), "pairs": len(data),
               "tokens": tokens, "steps_per_epoch": len(orders["random"])}
    for name in orders:
        s = spent[name]
        per_position = s["cpu_seconds"] / max(1, s["positions"])
        figures[name] = {"padding": round(1 - tokens / epoch[name], 4), "epoch_positions": epoch[name],
                         "timed_steps": s["steps"], "cpu_seconds_per_step": round(s["cpu_seconds"] / max(1, s["steps"]), 2),
                         "cpu_microseconds_per_position": round(1e6 * per_position, 1),
                         "cpu_hours_three_epochs": round(3 * epoch[name] * per_position / 3600, 2)}
    figures["positions_ratio"] = round(epoch["random"] / epoch["grouped"], 2)
    print(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
