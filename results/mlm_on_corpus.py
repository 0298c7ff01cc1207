"""The text-only control of issue 66: the same encoder given the same verbalised corpus by masked
language modelling alone (no knowledge module, no fusion, no KG task), for as many steps and texts a
step as JAKET's pre-training, so that a KGQA gain can be told from the domain text's::

    python -m results.mlm_on_corpus --kg runs/metaqa-kb/kg --config configs/pretrain-metaqa-kb.yaml \\
        --out runs/metaqa-kb/mlm-only

Reads the config's steps, text batch size, ``data.max_length``, ``data.heldout_fraction``, seed and
``optim.lm_lr`` / ``warmup_fraction``, trains on the same training share of ``KG/corpus.jsonl``
(:meth:`jaket.kg.corpus.MentionCorpus.split`, the same seed) with 15% of the tokens masked (BERT's
80/10/10), and writes a plain Hugging Face folder: fine-tune it with ``--encoder OUT`` (LM+G+M row).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

from jaket.kg.io import load_corpus, load_kg
from jaket.paths import default_model_path
from jaket.train.config import load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kg", type=Path, required=True)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--encoder", type=Path, default=None, help="default: the bundled MiniLM")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    config = load_config(args.config)
    torch.manual_seed(config.seed)
    encoder = args.encoder or default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(encoder, local_files_only=True)
    model = AutoModelForMaskedLM.from_pretrained(encoder, local_files_only=True)
    corpus = load_corpus(args.kg, load_kg(args.kg))
    _, train = corpus.split(config.data.heldout_fraction, seed=config.seed)
    collate = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.optim.lm_lr, weight_decay=config.optim.weight_decay)
    warmup = max(1, int(config.steps * config.optim.warmup_fraction))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (config.steps - s) / max(1, config.steps - warmup))))
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(config.seed)).tolist()
    began, losses, model = time.perf_counter(), [], model.train()
    for step in range(config.steps):
        start = (step * config.text_batch_size) % len(order)
        batch = [train.texts[order[(start + k) % len(order)]] for k in range(config.text_batch_size)]
        encoded = tokenizer(batch, truncation=True, max_length=config.data.max_length)
        inputs = collate([{"input_ids": ids} for ids in encoded["input_ids"]])
        loss = model(input_ids=inputs["input_ids"], attention_mask=(inputs["input_ids"] != tokenizer.pad_token_id),
                     labels=inputs["labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        if (step + 1) % 100 == 0:
            print(f"step {step + 1}: mlm loss {sum(losses[-100:]) / 100:.3f}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)
    summary = {"steps": config.steps, "texts_per_step": config.text_batch_size, "train_texts": len(train),
               "epochs": config.steps * config.text_batch_size / len(train), "final_loss_100": sum(losses[-100:]) /
               min(100, len(losses)), "seconds": round(time.perf_counter() - began, 1),
               "perplexity_100": math.exp(min(20.0, sum(losses[-100:]) / min(100, len(losses))))}
    (args.out / "mlm-summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
