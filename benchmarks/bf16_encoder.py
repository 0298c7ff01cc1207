"""fp32 against bf16 autocast for the encoder's forward and forward + backward on this CPU.

The fine-tuning tasks' ``--precision bf16`` (:func:`jaket.model.device.autocast`) runs the encoder's matrix
products in bfloat16; on CPUs with AMX or AVX512-BF16 oneDNN executes them natively. This measures
what that buys for the shape of a relation-classification episode (``--pairs`` sequences of
about ``--tokens`` tokens, the bundled MiniLM unless ``--encoder``)::

    python -m benchmarks.bf16_encoder --threads 1 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def _time(fn, repeats: int) -> float:
    fn()  # warm-up (oneDNN primitive creation)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _bf16_flags() -> list[str]:
    """The CPU's bfloat16 instruction sets (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return []
    return sorted(f for f in set(flags) if f in ("avx512_bf16", "amx_bf16", "amx_tile"))


def main(argv: list[str] | None = None) -> int:
    from transformers import AutoModel, AutoTokenizer

    from jaket.paths import default_model_path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default=None, help="Hugging Face folder (default: bundled MiniLM)")
    parser.add_argument("--pairs", type=int, default=25, help="sequences per batch (5-way 5-shot: 25)")
    parser.add_argument("--tokens", type=int, default=48, help="approximate tokens per sequence")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    path = args.encoder or default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path)
    words = " ".join(["token"] * max(1, args.tokens - 2))
    batch = tokenizer([words] * args.pairs, return_tensors="pt", truncation=True, max_length=args.tokens)
    figures = {"pairs": args.pairs, "tokens": int(batch["input_ids"].shape[1]), "threads": args.threads,
               "cpu_flags": _bf16_flags()}
    for name, enabled in (("fp32", False), ("bf16", True)):
        def forward():
            model.eval()
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
                model(**batch)

        def train_step():
            model.train()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
                out = model(**batch).last_hidden_state[:, 0].float().sum()
            out.backward()
            model.zero_grad(set_to_none=True)

        figures[f"{name}_forward_seconds"] = _time(forward, args.repeats)
        figures[f"{name}_train_step_seconds"] = _time(train_step, args.repeats)
    figures["forward_speedup"] = figures["fp32_forward_seconds"] / figures["bf16_forward_seconds"]
    figures["train_step_speedup"] = figures["fp32_train_step_seconds"] / figures["bf16_train_step_seconds"]
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
