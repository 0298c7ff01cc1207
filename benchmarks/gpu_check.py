"""The prepared GPU check: the device tests for real, then the paper-shape pre-training step measured.

    python -m benchmarks.gpu_check [--device cuda] [--out DIR] [--tiny] [--skip PART ...]

Nothing is downloaded: a synthetic power-law KG with descriptions and a corpus of 512-token texts
(about one mention per five tokens, as the paper's), and a random-weight RoBERTa-base-shaped
encoder (12 x 768, FFN 3072, 50,265-token vocabulary, a byte-level BPE tokenizer trained here on the
corpus) are built in ``--work``. The parts (each runs whatever the others do; a failure is recorded,
not fatal):

``tests``      ``pytest -m gpu`` with ``JAKET_TEST_DEVICE`` set to the device: every task's
               fine-tune -> save -> load -> predict, pre-training killed and resumed (on the CPU
               ``make test`` runs them through the strict fake device, so ``--device cpu`` skips it)
``step``       the real pre-training loop (:class:`jaket.train.pretrain.Pretrainer`) at the paper's
               shape under bf16: step time, tokens/s and model FLOP utilisation against the card's
               bf16 peak; the first memory fill gives the refresh rate (descriptions/s)
``ratio``      the knowledge module's time over the language module's (forward + backward, the
               step's own batch; paper: KM < 1/7 of LM)
``memory``     the step reading E^context from the memory against encoding every subgraph entity's
               description with LM1 on the fly (paper: about 15x): without gradients (real steps;
               a lower bound of the paper's), and the paper's way, back-propagating through the
               descriptions (LM1 forward + backward measured on the step's own descriptions, in
               chunks, times the step's descriptions: tens of thousands at the paper's shape,
               which no card holds the activations of at once)
``host``       the memory kept in host memory (as one too large for the card): a refresh into it
               against the same refresh on the device, and the step time
``workers``    how long the step waits for its batch with 0, 2 and 8 loader workers (pinned)
``compiled``   the same step with every encoder layer and the knowledge module under
               ``torch.compile`` (dynamic shapes): the time to compile, the step time and MFU
               against the eager step's, and the four losses of one batch in eval mode, eager
               against compiled (the lever must leave training exact)
``launchers``  one ``accelerate launch`` and one ``torchrun`` run of ``jaket pretrain``, 1 process each

Writes ``OUT/gpu_check.json`` and ``OUT/gpu_check.md`` (also printed). ``--device cpu --tiny``
runs every part but ``tests`` at toy sizes in well under a minute (tests/bench/test_gpu_check.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

#: the paper's shape (RoBERTa-base, 512 tokens, fan-out 10 x 10, 2 KM layers; 1,024 texts a step on 8 GPUs:
#: 128 a GPU) and a toy one
SHAPES = {
    "paper": dict(hidden=768, layers=12, heads=12, intermediate=3072, vocab=50265, length=512,
                  texts=128, fanouts=(10, 10), km_layers=2, km_heads=12, entities=100_000,
                  triples=1_000_000, corpus=2048, bpe_vocab=2000, steps=10, warmup=3, slow_steps=3),
    "tiny": dict(hidden=32, layers=2, heads=4, intermediate=64, vocab=None, length=64, texts=4,
                 fanouts=(3, 3), km_layers=2, km_heads=4, entities=300, triples=1500, corpus=64,
                 bpe_vocab=300, steps=3, warmup=1, slow_steps=2),
}
#: dense bf16 tensor-core peaks (TFLOP/s) by the name CUDA reports (SXM boards); --peak-tflops overrides
PEAK_BF16_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0, "L40S": 362.1, "A10": 125.0, "L4": 121.0}
#: the paper's figures (Computation Analysis; Entity Context Embedding Memory) and its length:
#: 8 epochs of ~4B Wikipedia tokens at 1,024 x 512 tokens a step = 61,035 steps (docs/scaling.md)
PAPER = {"km_over_lm": 1 / 7, "memory_speedup": 15.0, "tokens_per_step": 1024 * 512,
         "steps": 61_035, "gpus": 8}
PARTS = ("tests", "step", "ratio", "memory", "host", "workers", "compiled", "launchers")


# ------------------------------------------------------------------------------- building
def _texts(kg, count: int, length_tokens: int, rng) -> list[dict]:
    """Corpus rows of about ``length_tokens`` tokens: sentences linking two entities of a triple,
    each name a mention (about one mention per five tokens)."""
    rows = []
    sentences = length_tokens // 10 + 2  # a little over: the texts fill data.max_length
    for _ in range(count):
        text, mentions = "", []
        for h, _r, t in kg.triples[rng.integers(0, kg.num_triples, sentences)].tolist():
            for k, entity in enumerate((h, t)):
                name = kg.entity_names[entity]
                mentions.append({"start": len(text), "end": len(text) + len(name), "entity": kg.entity_ids[entity]})
                text += name + (" is linked to " if k == 0 else ". ")
        rows.append({"text": text.strip(), "mentions": mentions})
    return rows


def build(work: Path, shape: dict, tiny: bool) -> dict:
    """The synthetic KG folder (with corpus.jsonl) and the random encoder folder, built once."""
    import torch

    from jaket.kg.io import save_kg
    from jaket.kg.toy import synthetic_kg

    kg_dir, encoder_dir = work / "kg", work / "encoder"
    if not (kg_dir / "corpus.jsonl").exists():
        kg = synthetic_kg(shape["entities"], shape["triples"], seed=0)
        save_kg(kg, kg_dir)
        rows = _texts(kg, shape["corpus"], shape["length"], np.random.default_rng(0))
        (kg_dir / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if not (encoder_dir / "config.json").exists():
        from tokenizers import ByteLevelBPETokenizer
        from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

        texts = [json.loads(line)["text"] for line in (kg_dir / "corpus.jsonl").read_text().splitlines()]
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(texts, vocab_size=shape["bpe_vocab"], min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
        tokenizer = RobertaTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                         sep_token="</s>", cls_token="<s>", unk_token="<unk>",
                                         pad_token="<pad>", mask_token="<mask>")
        torch.manual_seed(0)
        config = RobertaConfig(vocab_size=shape["vocab"] or len(tokenizer), hidden_size=shape["hidden"],
                               num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"],
                               intermediate_size=shape["intermediate"], max_position_embeddings=shape["length"] + 2,
                               pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                               eos_token_id=tokenizer.eos_token_id)
        RobertaForMaskedLM(config).save_pretrained(encoder_dir)
        tokenizer.save_pretrained(encoder_dir)
    return {"kg": str(kg_dir), "encoder": str(encoder_dir)}


# ------------------------------------------------------------------------------- the parts
def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed_steps(trainer, count: int) -> list[float]:
    out = []
    for _ in range(count):
        _sync(trainer.device)
        began = time.perf_counter()
        trainer.train_step()
        _sync(trainer.device)
        out.append(time.perf_counter() - began)
    return out


def make_trainer(paths: dict, shape: dict, device: str, out: Path, precision: str):
    from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
    from jaket.train.config import load_config
    from jaket.train.pretrain import Pretrainer

    config = load_config(None, [
        "data.source=dir", f"data.max_length={shape['length']}", "data.heldout_fraction=0.01",
        f"model.fanouts={list(shape['fanouts'])}", f"model.km_layers={shape['km_layers']}",
        f"model.km_heads={shape['km_heads']}", "model.description_max_length=64",
        f"text_batch_size={shape['texts']}", "tasks.root_entities=64", "tasks.relation_pairs=32",
        "tasks.description_rows=0", "steps=100000", "memory.initial=1000000", "memory.batch_size=512",
        "checkpoint_every=0", "eval_texts=0", "tensorboard=false", "log_every=1000000"],
        {"data.path": paths["kg"], "model.encoder": paths["encoder"], "mixed_precision": precision})
    kg, corpus, report = load_kg_and_corpus(config)
    model = build_model(config, kg)
    data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
    return Pretrainer(config, model, data, out, device=device)


class _Loader:
    """The run's batch loader with ``workers`` processes (pinned next to a GPU), as ``run()`` builds it."""

    def __init__(self, trainer, workers: int):
        self.trainer, self.workers = trainer, workers

    def __enter__(self):
        from jaket.train.batching import batch_loader

        t = self.trainer
        t._batches = batch_loader(t.builder, t.step * t.config.optim.accumulation_steps, self.workers,
                                  t.config.data.prefetch, t.device.type == "cuda")
        return t

    def __exit__(self, *exc):
        self.trainer._batches = None


def _loader_steps(trainer, count: int, workers: int | None = None) -> list[float]:
    """:func:`_timed_steps` fed by the run's loader (``workers``: default the run's own)."""
    with _Loader(trainer, trainer.data_workers() if workers is None else workers):
        return _timed_steps(trainer, count)


def step_figures(trainer, shape: dict, peak_tflops: float | None) -> dict:
    """The memory's first fill and a refresh (descriptions/s), then timed steps with the run's
    default loader workers: time, tokens/s, MFU."""
    from jaket.bench.model import encoder_flops_per_sequence, paper_km_flops_per_sequence

    kg = trainer.data.kg
    began = time.perf_counter()
    trainer.refresh_memory()  # the first fill: tokenises every description too
    _sync(trainer.device)
    fill = time.perf_counter() - began
    began = time.perf_counter()
    trainer.refresh_memory()  # a refresh with momentum (Eq. 12)
    _sync(trainer.device)
    refresh = time.perf_counter() - began
    times = _loader_steps(trainer, shape["warmup"] + shape["steps"])[shape["warmup"]:]
    step = statistics.median(times)
    language = trainer.model.language.config
    hidden, vocab = language.hidden_size, language.vocab_size
    text = trainer.sample_batch(0).text
    length = int(text.input_ids.shape[1])
    tokens = int(text.attention_mask.sum())
    # model flops of one step (forward x 3 for forward + backward): the encoder, the MLM head at
    # the 15% masked tokens, and the paper's KM estimate (N/5 x r^L x 2H^2 per text)
    encoder = encoder_flops_per_sequence(language.num_hidden_layers, hidden, language.intermediate_size,
                                         length) * shape["texts"]
    mlm = 2 * hidden * (vocab + hidden) * 0.15 * tokens
    km = paper_km_flops_per_sequence(length, hidden, shape["fanouts"][0], shape["km_layers"]) * shape["texts"]
    flops = 3 * (encoder + mlm + km)
    figures = {
        "texts_per_step": shape["texts"], "text_length": length, "tokens_per_step": tokens,
        "mixed_precision": trainer.config.mixed_precision, "step_seconds_median": step,
        "step_seconds_min": min(times), "step_seconds_max": max(times), "timed_steps": len(times),
        "tokens_per_second": tokens / step, "model_tflops_per_step": flops / 1e12,
        "achieved_tflops": flops / step / 1e12, "peak_bf16_tflops": peak_tflops,
        "mfu": flops / step / 1e12 / peak_tflops if peak_tflops else None,
        "loader_workers": trainer.data_workers(),
        "memory_fill_seconds": fill, "memory_refresh_seconds": refresh,
        "descriptions": kg.num_entities + kg.num_relations,
        "refresh_descriptions_per_second": (kg.num_entities + kg.num_relations) / refresh,
        "first_fill_descriptions_per_second": (kg.num_entities + kg.num_relations) / fill,
        "kg_entities": kg.num_entities, "kg_triples": kg.num_triples,
    }
    paper_tokens = PAPER["tokens_per_step"] * PAPER["steps"]
    figures["paper_pretraining_hours_on_8"] = paper_tokens / (figures["tokens_per_second"] * PAPER["gpus"]) / 3600
    return figures


def ratio_figures(trainer, repeats: int = 5) -> dict:
    """KM and LM1 + LM2 forward + backward on the step's own batch (under the run's autocast)."""
    model, device = trainer.model, trainer.device
    batch = trainer.sample_batch(10**6).to(device)
    text = batch.text
    times: dict[str, list[float]] = {"lm": [], "km": []}

    def lm():
        z = model.language.lm1(text.input_ids, text.attention_mask)
        out = model.language.lm2(z, text.attention_mask)
        out.float().sum().backward()

    def km():  # as the step runs it: each layer restricted to what the seeds need
        out = model.knowledge_forward(batch.subgraph)
        out.float().sum().backward()

    def km_full():  # every node of the subgraph through every layer
        out = model.knowledge_forward(batch.subgraph, seeds_only=False)
        out.float().sum().backward()

    times["km_full"] = []
    model.train()
    for repeat in range(repeats + 1):
        for name, function in (("lm", lm), ("km", km), ("km_full", km_full)):
            _sync(device)
            began = time.perf_counter()
            with trainer.accelerator.autocast():
                function()
            _sync(device)
            if repeat:
                times[name].append(time.perf_counter() - began)
        model.zero_grad(set_to_none=True)
    lm_s, km_s, full_s = (statistics.median(times[k]) for k in ("lm", "km", "km_full"))
    return {"lm_forward_backward_seconds": lm_s, "km_forward_backward_seconds": km_s,
            "km_over_lm": km_s / lm_s, "km_untrimmed_over_lm": full_s / lm_s,
            "paper_km_over_lm_below": PAPER["km_over_lm"],
            "subgraph_nodes": batch.subgraph.num_nodes, "subgraph_edges": batch.subgraph.num_edges,
            "mentions": int(len(text.mention_entity))}


def memory_figures(trainer, shape: dict, memory_step: float) -> dict:
    """Steps that encode every subgraph entity's description on the fly against the memory's."""
    from jaket.bench.pretrain import OnTheFlyDescriptions

    trainer.before_forward = on_the_fly = OnTheFlyDescriptions(trainer)
    try:
        times = _loader_steps(trainer, shape["slow_steps"])
    finally:
        trainer.before_forward = None
    slow = statistics.median(times)
    per_step = on_the_fly.descriptions / len(times)
    with_gradients = memory_step + per_step * description_gradient_seconds(trainer, shape)
    return {"on_the_fly_step_seconds": slow, "memory_step_seconds": memory_step,
            "memory_speedup": slow / memory_step, "paper_memory_speedup": PAPER["memory_speedup"],
            "description_seconds_per_step": on_the_fly.seconds / len(times),
            "descriptions_per_step": per_step,
            "on_the_fly_with_gradients_step_seconds": with_gradients,
            "memory_speedup_with_gradients": with_gradients / memory_step}


def description_gradient_seconds(trainer, shape: dict, rows: int = 1024, chunk: int = 256) -> float:
    """Seconds per description of Eq. 7 with gradients (LM1 forward + backward, under the run's
    autocast), on the first ``rows`` descriptions of a step's own subgraph, ``chunk`` at a time."""
    model, device = trainer.model, trainer.device
    tokens, _ = trainer.memory.description_tokens(model.language, trainer.data.kg,
                                                  model.config.description_max_length)
    nodes = trainer.sample_batch(10**6).subgraph.node_ids.numpy()[:rows]
    model.train()
    times = []
    for repeat in range(1 + shape["slow_steps"]):
        _sync(device)
        began = time.perf_counter()
        for begin in range(0, len(nodes), chunk):
            ids, mask, start, end = (t.to(device) for t in tokens.batch(nodes[begin:begin + chunk]))
            with trainer.accelerator.autocast():
                rows_out = model.describe(ids, mask, start, end)
            rows_out.float().sum().backward()
        _sync(device)
        if repeat:  # the first pass warms up
            times.append(time.perf_counter() - began)
        model.zero_grad(set_to_none=True)
    return statistics.median(times) / len(nodes)


def host_memory_figures(trainer, shape: dict, memory_step: float) -> dict:
    """The memory kept in host memory, as one too large for the card: a refresh into it (each batch
    copied back to the host before the momentum blend) against the same refresh on the device, and
    steps that gather their rows into pinned memory and copy them without blocking."""
    memory = trainer.memory
    old = memory.entities.detach().clone()
    trainer.refresh_memory()
    on_device = memory.entities.detach().clone()
    memory.entities = old.cpu()  # the host path, from the same rows
    try:
        trainer.refresh_memory()
        difference = float((memory.entities.to(on_device.device) - on_device).abs().max())
        times = _loader_steps(trainer, shape["steps"])
    finally:
        memory.entities = on_device
    step = statistics.median(times)
    return {"refresh_max_abs_difference_host_vs_device": difference, "host_memory_step_seconds": step,
            "device_memory_step_seconds": memory_step,
            "host_over_device_step": step / memory_step if memory_step else None}


def compiled_figures(trainer, shape: dict, eager: dict) -> dict:
    """The step with the encoder's layers and the KM compiled (last: compiling cannot be undone);
    ``eager``: the step part's figures."""
    import torch

    model = trainer.model
    batch = trainer.sample_batch(10**6).to(trainer.device)

    def losses() -> dict:
        model.eval()
        with torch.no_grad(), trainer.accelerator.autocast():
            _, values, _ = trainer.objective(batch)
        model.train()
        return {name: float(value) for name, value in values.items()}

    eager_step, eager_mfu = eager.get("step_seconds_median"), eager.get("mfu")
    before = losses()
    began = time.perf_counter()
    model.language.compile_layers(dynamic=True)
    model.knowledge.compile(dynamic=True)
    compiled = losses()  # compiles the forward
    _sync(trainer.device)
    compile_seconds = time.perf_counter() - began
    times = _loader_steps(trainer, shape["warmup"] + shape["steps"])  # the warm-up compiles the backward
    step = statistics.median(times[shape["warmup"]:])
    return {"compile_seconds_forward": compile_seconds, "first_steps_seconds": times[:shape["warmup"]],
            "compiled_step_seconds": step, "eager_step_seconds": eager_step,
            "compiled_over_eager_step": step / eager_step if eager_step else None,
            "compiled_mfu": eager_mfu * eager_step / step if eager_mfu and eager_step else None,
            "losses_eager": before, "losses_compiled": compiled,
            "max_loss_difference": max(abs(before[k] - compiled[k]) for k in before) if before else None}


def worker_figures(trainer, shape: dict, counts=(0, 2, 8)) -> dict:
    """Seconds per step the loop waits for its batch with ``counts`` loader workers."""
    import warnings

    warnings.filterwarnings("ignore", message="This DataLoader will create")  # 8 on a small CPU: measured anyway
    figures = {}
    for workers in counts:
        with _Loader(trainer, workers):
            _timed_steps(trainer, 1)  # the workers start
            trainer.batch_seconds = 0.0
            times = _timed_steps(trainer, shape["steps"])
        figures[f"workers_{workers}"] = {"wait_seconds_per_step": trainer.batch_seconds / len(times),
                                         "step_seconds_median": statistics.median(times)}
    return figures


def launcher_figures(paths: dict, work: Path, device: str) -> dict:
    """``jaket pretrain`` under ``accelerate launch`` and under ``torchrun``, one process each."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p), OMP_NUM_THREADS="1")
    common = ["-m", "jaket", "pretrain", "--config", str(REPO / "configs" / "pretrain-tiny.yaml"),
              "--kg", paths["kg"], "--encoder", paths["encoder"], "--steps", "4", "--no-progress",
              "--set", "checkpoint_every=2", "--set", "memory.initial=2", "--set", "data.max_length=64",
              "--overwrite"]
    cpu = ["--cpu"] if device == "cpu" else []
    launchers = {
        "accelerate_launch": [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1",
                              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *cpu],
        "torchrun": [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"],
    }
    figures = {}
    for name, launcher in launchers.items():
        out = work / f"launch-{name}"
        began = time.perf_counter()
        done = subprocess.run(launcher + common + ["--out", str(out)] + (["--device", "cpu"] if cpu else []),
                              env=env, capture_output=True, text=True, timeout=600)
        entry = {"returncode": done.returncode, "seconds": time.perf_counter() - began}
        if done.returncode == 0:
            summary = json.loads((out / "summary.json").read_text())
            rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
            entry.update(device=summary.get("device"), world_size=summary.get("world_size"),
                         last_losses={k: v for k, v in rows[-1].items() if k.startswith("loss_")})
        else:
            entry["stderr_tail"] = done.stderr[-2000:]
        figures[name] = entry
    a, b = (figures[n].get("last_losses") for n in launchers)
    if a and b:
        figures["max_loss_difference"] = max(abs(a[k] - b[k]) for k in a.keys() & b.keys())
    return figures


def device_tests(device: str) -> dict:
    if device == "cpu":
        return {"skipped": "on the CPU `make test` runs the gpu-marked tests through the strict fake device"}
    env = dict(os.environ, JAKET_TEST_DEVICE=device, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p))
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                           "--no-header", str(REPO / "tests")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    tail = done.stdout.strip().splitlines()
    return {"returncode": done.returncode, "seconds": time.perf_counter() - began,
            "summary": tail[-1] if tail else "", "output_tail": "\n".join(tail[-40:]) + done.stderr[-2000:]}


# ------------------------------------------------------------------------------- report
def environment(device: str, peak: float | None) -> dict:
    import torch

    from jaket.model.device import cpu_description

    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": device,
            "cpu": cpu_description()}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update(gpu=props.name, gpu_memory_gib=props.total_memory / 2**30,
                    multiprocessors=props.multi_processor_count, capability=f"{props.major}.{props.minor}",
                    bf16_supported=torch.cuda.is_bf16_supported())
        if peak is None:
            peak = next((v for k, v in PEAK_BF16_TFLOPS.items() if k in props.name), None)
    info["peak_bf16_tflops"] = peak
    return info


def _fmt(value, digits=3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def markdown(result: dict) -> str:
    env, parts = result["environment"], result["parts"]
    lines = [f"# GPU check: {env.get('gpu', env['device'])} ({'tiny' if result['tiny'] else 'paper shape'})", "",
             f"torch {env['torch']} (CUDA {env['cuda']}); CPU {env['cpu'].get('model', '?')}; "
             f"{result['seconds']:.0f} s in all.", "",
             "| figure | ours | paper |", "| --- | --- | --- |"]
    step, ratio, memory = parts.get("step", {}), parts.get("ratio", {}), parts.get("memory", {})
    rows = [
        ("step time (s), %s texts x %s tokens, %s" % (step.get("texts_per_step"), step.get("text_length"),
                                                      step.get("mixed_precision")),
         step.get("step_seconds_median"), None),
        ("tokens/s", step.get("tokens_per_second"), None),
        ("achieved TFLOP/s (model flops)", step.get("achieved_tflops"), None),
        ("model FLOP utilisation vs bf16 peak", step.get("mfu"), None),
        ("KM / LM time (forward + backward), as the step runs the KM", ratio.get("km_over_lm"), "< 1/7 (0.143)"),
        ("KM / LM time, every subgraph node through every KM layer", ratio.get("km_untrimmed_over_lm"), None),
        ("memory speed-up over on-the-fly descriptions (no gradients through them)", memory.get("memory_speedup"), None),
        ("memory speed-up, the paper's way (gradients through the descriptions)",
         memory.get("memory_speedup_with_gradients"), "~15x"),
        ("memory in host memory: step time over the on-device memory's", parts.get("host", {}).get("host_over_device_step"), None),
        ("torch.compile (encoder layers + KM): step time over the eager step's",
         parts.get("compiled", {}).get("compiled_over_eager_step"), None),
        ("torch.compile: model FLOP utilisation", parts.get("compiled", {}).get("compiled_mfu"), None),
        ("torch.compile: largest difference of a batch's losses from eager",
         parts.get("compiled", {}).get("max_loss_difference"), None),
        ("memory in host memory: largest difference of a refresh from the on-device one",
         parts.get("host", {}).get("refresh_max_abs_difference_host_vs_device"), None),
        ("memory refresh (descriptions/s, 64 tokens each)", step.get("refresh_descriptions_per_second"), None),
        ("memory's first fill, tokenising included (descriptions/s)", step.get("first_fill_descriptions_per_second"), None),
        ("paper's pre-training (61,035 steps x 1,024 x 512 tokens) on 8 such GPUs, hours",
         step.get("paper_pretraining_hours_on_8"), None),
    ]
    lines += [f"| {name} | {_fmt(ours)} | {paper or ''} |" for name, ours, paper in rows]
    workers = parts.get("workers", {})
    if workers and "error" not in workers:
        lines += ["", "| loader workers | wait per step (s) | step (s) |", "| --- | --- | --- |"]
        lines += [f"| {k.split('_')[1]} | {_fmt(v['wait_seconds_per_step'])} | {_fmt(v['step_seconds_median'])} |"
                  for k, v in workers.items() if k.startswith("workers_")]
    launch = parts.get("launchers", {})
    if launch and "error" not in launch:
        lines += ["", "| launcher (1 process) | exit | device | seconds |", "| --- | --- | --- | --- |"]
        lines += [f"| {k} | {v['returncode']} | {v.get('device', '-')} | {v['seconds']:.0f} |"
                  for k, v in launch.items() if isinstance(v, dict)]
        lines += ["", f"Largest difference of the last step's losses between the two: "
                      f"{_fmt(launch.get('max_loss_difference'))}"]
    tests = parts.get("tests", {})
    lines += ["", f"Device tests: {tests.get('summary') or tests.get('skipped') or tests.get('error', '-')}"]
    failed = [name for name, part in parts.items() if "error" in part]
    if failed:
        lines += ["", "Failed parts: " + ", ".join(failed) + " (see gpu_check.json)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cuda (default when visible) or cpu")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (the CPU smoke run)")
    parser.add_argument("--out", type=Path, default=Path("runs/gpu-check"))
    parser.add_argument("--work", type=Path, default=None, help="built inputs (default OUT/work)")
    parser.add_argument("--skip", nargs="*", default=[], choices=PARTS)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the card's dense bf16 peak (default: by GPU name)")
    args = parser.parse_args(argv)
    from jaket.paths import offline_environment

    offline_environment()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    shape = SHAPES["tiny" if args.tiny else "paper"]
    work = args.work or args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    result: dict = {"environment": environment(device, args.peak_tflops), "tiny": args.tiny,
                    "shape": {k: v for k, v in shape.items()}, "parts": {}}
    peak = result["environment"]["peak_bf16_tflops"]
    parts = result["parts"]

    def attempt(name, function):
        if name in args.skip:
            parts[name] = {"skipped": "--skip"}
            return None
        t0 = time.perf_counter()
        try:
            parts[name] = function()
        except Exception as error:  # recorded; the other parts still run
            parts[name] = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()[-3000:]}
        parts[name]["part_seconds"] = time.perf_counter() - t0
        print(f"[gpu_check] {name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2, default=str))
        return parts[name]

    attempt("tests", lambda: device_tests(device))
    precision = "bf16" if device != "cpu" else "no"
    built: dict = {}

    def setup():
        began = time.perf_counter()
        paths = build(work, shape, args.tiny)
        built["trainer"] = make_trainer(paths, shape, device, work / "run", precision)
        return {"build_seconds": time.perf_counter() - began, "mixed_precision": precision}

    attempt("setup", setup)
    trainer = built.get("trainer")
    if trainer is not None:
        attempt("step", lambda: step_figures(trainer, shape, peak))
        attempt("ratio", lambda: ratio_figures(trainer))
        memory_step = parts.get("step", {}).get("step_seconds_median")
        attempt("memory", lambda: memory_figures(trainer, shape, memory_step))
        attempt("host", lambda: host_memory_figures(trainer, shape, memory_step))
        attempt("workers", lambda: worker_figures(trainer, shape))
        attempt("compiled", lambda: compiled_figures(trainer, shape, parts.get("step", {})))
    trainer = None  # the paper-shape model leaves the GPU before the launchers start theirs
    built.clear()
    if device == "cuda":
        torch.cuda.empty_cache()
    attempt("launchers", lambda: launcher_figures(build(work / "tiny", SHAPES["tiny"], True), work, device))
    result["seconds"] = time.perf_counter() - began
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2, default=str))
    report = markdown(result)
    (args.out / "gpu_check.md").write_text(report)
    print(report)
    return 0 if not any("error" in p for p in parts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
