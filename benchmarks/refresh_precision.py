"""The memory refresh's LM1 pass in bf16: autocast over the fp32 weights against the reading copy (issue 68).

    python -m benchmarks.refresh_precision --encoder models/all-mpnet-base-v2 \\
        --kg runs/reference/data/kg-pretrain [--descriptions 2048] [--window 32] [--batch-size 256] [--repeats 3]

Reads a seeded sample of the KG's descriptions the way a refresh does (:func:`jaket.model.memory.description_batches`:
length-sorted batches, Eq. 7's span mean) three ways: fp32, bf16 autocast over the fp32 weights (the refresh before
the change) and :meth:`SplitLanguageModel.reading_copy` in bf16 (the refresh now). Prints, as JSON, the descriptions
a second of the two bf16 passes (the best of ``--repeats`` interleaved repeats, after a warm-up) and each one's
cosine with fp32's rows (mean and smallest). The threads are torch's default unless ``--threads``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from jaket.kg.errors import KGFormatError
from jaket.kg.io import load_kg
from jaket.model.language import EncoderLoadError, SplitLanguageModel
from jaket.model.memory import DescriptionTokens, description_batches


def rows(language, tokens: DescriptionTokens, batch_size: int, autocast: bool) -> torch.Tensor:
    """Eq. 7 of every description in ``tokens``, each at its own position, as float32 (as
    :func:`jaket.model.memory.description_features`, but over tokens made once, so that the timed
    repeats do not tokenise)."""
    out = torch.zeros(len(tokens), int(language.hidden_size))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        for chunk, vectors in description_batches(language, tokens, np.arange(len(tokens)), batch_size):
            out[torch.from_numpy(chunk)] = vectors
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", required=True)
    parser.add_argument("--kg", required=True, help="a KG folder (entities.jsonl with descriptions)")
    parser.add_argument("--descriptions", type=int, default=2048)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        kg = load_kg(args.kg)
        language = SplitLanguageModel.from_pretrained(args.encoder).eval()
    except (KGFormatError, EncoderLoadError, FileNotFoundError) as error:
        parser.error(str(error).strip().splitlines()[0])
    pick = np.random.default_rng(args.seed).choice(kg.num_entities, min(args.descriptions, kg.num_entities),
                                                   replace=False)
    tokens = DescriptionTokens([kg.entity_descriptions[i] for i in pick], [kg.entity_names[i] for i in pick],
                               language.tokenizer, args.window)
    reference = rows(language, tokens, args.batch_size, autocast=False)
    passes = {"autocast": (language, True), "reading_copy": (language.reading_copy(torch.bfloat16), False)}
    figures: dict = {"descriptions": len(tokens), "window": args.window, "batch_size": args.batch_size,
                     "threads": torch.get_num_threads()}
    for name, (model, autocast) in passes.items():
        cosine = torch.nn.functional.cosine_similarity(rows(model, tokens, args.batch_size, autocast), reference)
        figures[name] = {"cosine_to_fp32_mean": round(float(cosine.mean()), 6),
                         "cosine_to_fp32_min": round(float(cosine.min()), 6), "seconds": []}
    for _ in range(args.repeats):
        for name, (model, autocast) in passes.items():
            began = time.perf_counter()
            rows(model, tokens, args.batch_size, autocast)
            figures[name]["seconds"].append(round(time.perf_counter() - began, 3))
    for name in passes:
        figures[name]["descriptions_per_second"] = round(len(tokens) / min(figures[name]["seconds"]), 1)
    print(json.dumps(figures, indent=1))
    return figures


if __name__ == "__main__":
    main()
