"""float32 against bf16 on this machine: a matrix product, a fine-tuning step, and what auto picks.

``--precision auto`` (:func:`jaket.model.device.choose_precision`) takes bf16 only where the device
computes it natively: a GPU with bf16, or a CPU on which a bf16 matrix product measures at least as
fast as the float32 one (:func:`jaket.model.device.bf16_slowdown`, a sub-second check at start-up).
This benchmark shows what that rule protects, on the machine it runs on:

- ``matmul_*``: a ``512 x 384 @ 384 x 1536`` product (a MiniLM feed-forward layer over 512 tokens)
  in float32 and in bfloat16, median of ``--matmul-repeats`` interleaved repeats, and GFLOP/s
  (``2 m k n`` flops) per wall second and per CPU second;
- ``step_*``: one fine-tuning step of the language module (LM1 + LM2, a linear head on the
  first token, cross-entropy, backward, AdamW step through
  :func:`jaket.tasks.training.fine_tuning_step`) on ``--batch`` x ``--length`` tokens, in float32
  and under bf16 autocast (:func:`jaket.model.device.autocast`: weights, gradients and the
  optimizer stay float32), the bundled MiniLM unless ``--encoder``;
- ``auto_*``: what ``--precision auto`` chooses here, the measurement it decides on and why.

``*_bf16_speedup`` is the float32 time over the bf16 time (above 1: bf16 is faster), in wall time
and in CPU time of the process (``*_cpu_*``: the steadier figure on a shared machine). Each pair is
timed interleaved within one run, after one warm-up of each, so both sides see the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from jaket.flags import add_device_argument, positive_int
from jaket.model.device import (BF16_SLOWDOWN_LIMIT, autocast, bf16_slowdown, choose_precision, native_bf16,
                                resolve_device)
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.tasks.training import fine_tuning_step

#: the product timed: (m, k) @ (k, n)
MATMUL_SHAPE = (512, 384, 1536)
#: classes of the fine-tuning step's head
CLASSES = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--encoder", metavar="PATH", default=None,
                        help="Hugging Face encoder folder for the fine-tuning step (default: bundled MiniLM)")
    parser.add_argument("--batch", type=int, default=32, help="sequences per fine-tuning step (default 32)")
    parser.add_argument("--length", type=int, default=64, help="tokens per sequence (default 64)")
    parser.add_argument("--repeats", type=int, default=7,
                        help="timed repeats of each side, after one warm-up (default 7)")
    parser.add_argument("--matmul-repeats", type=int, default=None,
                        help="timed matrix products per side (default 5 x --repeats)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads (default: torch's)")
    add_device_argument(parser)


def _seconds(device: torch.device, function) -> tuple[float, float]:
    """Wall and process CPU seconds of one call (the device synchronised before and after)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - wall, time.process_time() - cpu


def _interleaved(device: torch.device, sides: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each side's function over ``repeats`` rounds, the sides
    alternating within a round; one untimed warm-up call of each first (oneDNN builds its kernels
    there)."""
    for function in sides.values():
        function()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for _ in range(repeats):
        for name, function in sides.items():
            times[name].append(_seconds(device, function))
    return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for name, values in times.items()}


def matmul_figures(device: torch.device, repeats: int) -> dict:
    """The float32 and bfloat16 ``m x k @ k x n`` product: median ms, GFLOP/s, bf16 speed-up."""
    m, k, n = MATMUL_SHAPE
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=generator), torch.randn(k, n, generator=generator)
    operands = {"fp32": (a.to(device), b.to(device)),
                "bf16": (a.to(device, torch.bfloat16), b.to(device, torch.bfloat16))}
    sides = {name: (lambda x=x, y=y: x @ y) for name, (x, y) in operands.items()}
    median = _interleaved(device, sides, repeats)
    flops = 2 * m * k * n
    figures = {"matmul_shape": f"{m}x{k} @ {k}x{n}", "matmul_flops": flops, "matmul_repeats": repeats}
    for name, (wall, cpu) in median.items():
        figures[f"matmul_{name}_ms"] = 1000 * wall
        figures[f"matmul_{name}_cpu_ms"] = 1000 * cpu
        figures[f"matmul_{name}_gflops"] = flops / wall / 1e9
        figures[f"matmul_{name}_cpu_gflops"] = flops / max(cpu, 1e-9) / 1e9  # per CPU second: one thread's rate
    figures.update(_speedups("matmul", median))
    return figures


def _speedups(prefix: str, median: dict[str, tuple[float, float]]) -> dict[str, float]:
    """float32 time / bf16 time, in wall and in CPU time."""
    (wall32, cpu32), (wall16, cpu16) = median["fp32"], median["bf16"]
    return {f"{prefix}_bf16_speedup": wall32 / wall16, f"{prefix}_bf16_cpu_speedup": cpu32 / max(cpu16, 1e-9)}


def _step(language: SplitLanguageModel, head: nn.Module, optimizer, batch: dict, device: torch.device,
          bf16: bool, losses: list[float]):
    """One fine-tuning step: forward (under bf16 autocast when ``bf16``), loss in float32, update."""
    def step() -> None:
        with autocast(device, bf16):
            hidden = language(batch["input_ids"], batch["attention_mask"])
            logits = head(hidden[:, 0])
        loss = nn.functional.cross_entropy(logits.float(), batch["labels"])
        fine_tuning_step(optimizer, loss, losses)

    return step


def step_figures(encoder, device: torch.device, batch_size: int, length: int, repeats: int) -> dict:
    """One fine-tuning step of the language module in float32 and under bf16 autocast."""
    torch.manual_seed(0)
    language = SplitLanguageModel.from_pretrained(encoder).to(device).train()
    head = nn.Linear(language.hidden_size, CLASSES).to(device)
    parameters = [p for module in (language, head) for p in module.parameters()]
    optimizer = torch.optim.AdamW(parameters, lr=1e-5)
    tokenizer = language.tokenizer
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(len(tokenizer.all_special_ids) + 100, language.config.vocab_size,
                        (batch_size, length), generator=generator)
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    batch = {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device),
             "labels": torch.randint(CLASSES, (batch_size,), generator=generator).to(device)}
    losses: dict[str, list[float]] = {"fp32": [], "bf16": []}
    sides = {name: _step(language, head, optimizer, batch, device, name == "bf16", losses[name])
             for name in losses}
    median = _interleaved(device, sides, repeats)
    figures = {"step_encoder": str(encoder), "step_batch": batch_size, "step_length": length,
               "step_parameters": sum(p.numel() for p in parameters), "step_repeats": repeats}
    for name, (wall, cpu) in median.items():
        figures[f"step_{name}_s"] = wall
        figures[f"step_{name}_cpu_s"] = cpu
        figures[f"step_{name}_tokens_per_s"] = batch_size * length / wall
        figures[f"step_{name}_last_loss"] = losses[name][-1]
    figures.update(_speedups("step", median))
    return figures


def auto_figures(device: torch.device) -> dict:
    """What ``--precision auto`` chooses on ``device`` and the measurement it decided on."""
    chosen = choose_precision("auto", device)
    figures = {"auto_device": str(device), "auto_chooses": chosen}
    if device.type == "cpu":
        slowdown = bf16_slowdown()
        verdict = "at most" if slowdown <= 1.0 else "more than"
        emulated = (" (bf16 is emulated here: an explicit --precision bf16 warns)"
                    if slowdown > BF16_SLOWDOWN_LIMIT else "")
        figures.update(auto_bf16_slowdown=slowdown, auto_rule="bf16 where bf16_slowdown <= 1.0",
                       auto_why=f"a bf16 product (256x384 @ 384x384, one thread, its CPU time) takes "
                                f"{slowdown:.2f}x the float32 time here: {verdict} 1.0, so {chosen}{emulated}")
    else:
        supports = "supports" if native_bf16(device) else "lacks"
        figures.update(auto_rule="bf16 where the GPU supports it",
                       auto_why=f"{device.type} {supports} bf16, so {chosen}")
    return figures


def run(args: argparse.Namespace) -> dict:
    encoder = args.encoder or default_model_path()  # first: a missing encoder fails before any timing
    device = resolve_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    figures = {"device": str(device), "threads": torch.get_num_threads()}
    figures.update(matmul_figures(device, args.matmul_repeats or 5 * args.repeats))
    figures.update(step_figures(encoder, device, args.batch, args.length, args.repeats))
    figures.update(auto_figures(device))
    return figures
