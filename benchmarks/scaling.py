"""``docs/scaling.md``: a projection to Wikidata size on 8 GPUs from the measured per-item costs.

    python -m benchmarks.scaling            # from docs/performance.json (the suite calls this too)

Every number is computed here from ``docs/performance.json`` and the stated assumptions, and the
document shows the arithmetic, so a new benchmark run updates the projection.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from jaket.bench.model import encoder_flops_per_sequence

ROOT = Path(__file__).resolve().parent.parent

GB = 1e9
GIB = 2**30

#: the paper's Wikidata KG and pre-training run
N, P, T = 3_657_658, 799, 20_113_978
F_PAPER = 768
WORLD = 8
TEXTS, TEXT_TOKENS, DESC_TOKENS = 1024, 512, 64
KG_BATCH, FANOUT = 16_384, 10
MENTIONS_PER_TEXT = TEXT_TOKENS / 5
EPOCH_TOKENS, EPOCHS = 4e9, 8

#: assumptions (stated in the document)
GPU_TFLOPS = 30.0  # sustained fp16 tensor-core rate of a V100 on BERT-size matmuls (peak 125)
DESC_BYTES = 290  # 64 BPE tokens of English ≈ 4.5 bytes each
NAME_BYTES, ID_BYTES, ALIAS_BYTES = 20, 9, 40
PCIE_GBS = 12.0  # host -> GPU copy, PCIe 3 x16 in practice
ALLREDUCE_GBS = 5.0  # gloo all-reduce bus bandwidth between 8 processes of one host


def _median(perf: dict, key: str, name: str):
    entry = perf["benchmarks"].get(key, {}).get("summary", {}).get(name)
    if entry is None:
        return None
    return entry.get("median", entry.get("value"))


def fmt_bytes(b: float) -> str:
    return f"{b / GB:.2f} GB" if b >= 0.1 * GB else f"{b / 1e6:.0f} MB"


def fmt_s(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.1f} s"
    return f"{s * 1000:.0f} ms"


#: the launch commands and what of them is tested (prose kept here so regeneration keeps it)
RUNNING = """## Running it: launch commands, and what is tested

Pre-training runs on Hugging Face Accelerate (`jaket.train.engine`): the engine places the model
on each rank's device, wraps the objective in DistributedDataParallel (NCCL between GPUs, gloo
between CPU processes), runs the forward under autocast for `mixed_precision` (`bf16`, or `fp16`
with its gradient scaler) and accumulates gradients over `optim.accumulation_steps`. The entity
context memory goes to the GPU when it fits in a quarter of its free memory, else it stays in
host memory as it is (or in its memory-mapped file, `memory.path`; never a pinned copy of the
whole table) and each step gathers the rows it needs into pinned memory and copies them without
blocking. `data.workers` processes (default 2 next to a GPU) build the batches
ahead of the model step. Every rank reads the output folder when it resumes, so on several nodes
`--out` (and the KG folder) must be on a shared file system.

**One GPU**

```bash
jaket pretrain --config configs/pretrain-wordnet.yaml --device cuda \\
    --set mixed_precision=bf16 --set data.workers=2 --out runs/pretrain-gpu
```

**8 GPUs, one node** (either launcher; `--resume=auto` lets a restarted job continue)

```bash
accelerate launch --multi_gpu --num_processes 8 --mixed_precision bf16 \\
    -m jaket pretrain --config configs/pretrain-wordnet.yaml --out runs/pretrain-8gpu --resume=auto
torchrun --standalone --nproc_per_node 8 \\
    -m jaket pretrain --config configs/pretrain-wordnet.yaml --set mixed_precision=bf16 \\
    --out runs/pretrain-8gpu --resume=auto
```

**2 nodes × 8 GPUs** (the same command on each node, `--machine_rank` / `--node_rank` 0 and 1;
10.0.0.1 is node 0's address)

```bash
accelerate launch --multi_gpu --num_machines 2 --num_processes 16 --machine_rank 0 \\
    --main_process_ip 10.0.0.1 --main_process_port 29500 --mixed_precision bf16 \\
    -m jaket pretrain --config configs/pretrain-wordnet.yaml --out /shared/runs/pretrain --resume=auto
torchrun --nnodes 2 --nproc_per_node 8 --node_rank 0 --master_addr 10.0.0.1 --master_port 29500 \\
    -m jaket pretrain --config configs/pretrain-wordnet.yaml --set mixed_precision=bf16 \\
    --out /shared/runs/pretrain --resume=auto
```

| what | tested (on this machine, 2 CPU cores; "H200": by `benchmarks/gpu_check.py` on an NVIDIA H200, 2026-11-26) | not tested |
|---|---|---|
| one process | `jaket pretrain --device cpu`: bit-identical parameters, memory and logged losses to the loop before the engine (commit 9a58f60), and it resumes that loop's checkpoints exactly (checked by hand: `jaket pretrain --config configs/pretrain-tiny.yaml --steps 8 --set checkpoint_every=4 --set memory.initial=3` with both versions, then the old run's step-4 checkpoint resumed by the new code); exact resume after `kill -9` (`tests/train/test_resume.py`); H200: the same test with `--device cuda` (losses and parameters within 1e-4: the knowledge module's scatter-adds use atomics) | `cuda:N`, `mps` |
| several processes | 2 CPU processes over gloo: `pretrain()` under `mp.spawn` keeps parameters and memory identical on both ranks (`tests/train/test_distributed.py`); `torchrun --standalone --nproc_per_node 2` and `accelerate launch --multi_gpu --num_processes 2` with `--device cpu` (a torchrun run resumed from its step-2 checkpoint under `accelerate launch` ends exactly as the uninterrupted one, `tests/train/test_launchers.py`) ; H200: one process under `accelerate launch` and under `torchrun`, the same losses | NCCL, several GPUs or nodes, `accelerate launch --cpu --num_processes 2` (Accelerate's `--cpu` path starts one process unless MPI is set up: use `--multi_gpu --num_processes N` with `--device cpu`) |
| mixed precision | bf16 autocast on the CPU through the engine (`tests/train/test_loop.py`); fp16's gradient scaler saved in checkpoints and restored on resume (`tests/train/test_checkpoint.py`); H200: bf16 pre-training at the paper's shape and the memory refresh under the same autocast | an fp16 run on a GPU |
| device code path | a fake accelerator whose tensors refuse `.numpy()` as CUDA tensors do runs a pre-training step, the masked-entity evaluation, entity classification, `encode_entities` and `encode_texts` (`tests/*/test_device.py`); the memory kept on the host serves rows to another device (`meta`), pins only the rows a step reads, and a refresh into it waits for its device-to-host copy (a non-blocking one reads as not yet landed: `tests/model/test_device.py`); H200: pinned batches and non-blocking copies in every pre-training step | the host-memory path on a real GPU (the check's 100,000-entity memory fits on the card) |
| fine-tuning and prediction on a device | every task (entity classification, link prediction frozen and `--train-encoder`, KGQA on the step's subgraph and on the whole graph, relation classification with `--precision bf16`) runs with `device="cpu"` as `--device cpu` runs it, on the *strict* fake accelerator, and so do its saved model moved with `.to(device)` and its predictions (`tests/tasks/test_device.py`): what the code places (`module.to(device)`, `tensor.to(device)`, `device=`) is on the fake device, a CPU tensor that meets a device tensor fails as on CUDA ("Expected all tensors to be on the same device"), and so does `.numpy()` without `.cpu()`. Removing any one of the moves fails the test (checked by hand for six of them). `jaket finetune`/`evaluate`/`predict` of every task with `--device cpu` (`tests/tasks/test_link_predict.py`, `test_qa_rc_predict.py`), and a device the machine lacks refused before any work (`tests/model/test_device.py`); H200: the `gpu`-marked tests (these, word-in-context fine-tune → predict, and the killed-and-resumed pre-training) for real under `JAKET_TEST_DEVICE=cuda`, 11 passed | `mps` |
| data pipeline | batches from 1-2 DataLoader workers equal those built in the main process, and a run with workers trains exactly as one without, and a pinning loader pins every tensor of a batch (`StepBatch.pin_memory`, `tests/train/test_pipeline.py`); H200: with 2 workers the step waits 0.1 ms for its batch, with none 77 ms (docs/performance.md, *On a GPU*) | - |

### Fine-tuning and prediction

Every command takes `--device` (default `cuda` when a GPU is visible, else `cpu`): `pretrain`,
`embed`, `demo`, and `finetune`, `evaluate` and `predict` of all four tasks. A task builds its
backbone on the CPU (so a seed gives the same weights on every device), moves it with
`.to(device)` and computes the frozen memory there; its head is seeded on the CPU and moved the
same way; every batch, index tensor and mask is moved to the device before it meets the model,
and only scores and ranks are read back (`.cpu()` before `.numpy()`; `.item()`, `float()` and
`.tolist()` copy a scalar or a list, which CUDA allows). `--precision bf16` autocasts on the run's device
type. `metrics.json` records the device (`"device": "cuda:0"`).

| task | on the device | on the CPU |
|---|---|---|
| entity classification | backbone, memory, KM over the whole graph, classifier, labels | split indices (numpy), accuracy read-back |
| link prediction (frozen memory) | backbone, memory, scorer, each step's sampled subgraph, batch and negatives, the whole-graph KM and the filtered ranking of each evaluation batch | neighbour sampling (numpy), the filter lists, ranks read back per batch |
| link prediction `--train-encoder` | LM1 and its description batches, the memory rows when they fit (else host memory, the step's rows copied over), the KM, the loss (in-batch or contrastive) and its masks, the queue | tokenised descriptions, sampling, the known-triple test (numpy) |
| KGQA | backbone, memory, question batches, the step's computation subgraph (or the whole graph), candidate scores | candidate sets and subgraph building (numpy), Hits@1 |
| relation classification | encoder and score head, each episode's token batch, targets and weights | episode sampling, accuracy |
| `jaket predict` (every task) | the loaded model (`.to(device)`), the memory recomputed for the KG, the queries | the JSON rows |

```bash
jaket finetune link-prediction --data wn18rr_dir/ --train-encoder --precision bf16 --device cuda --out runs/lp
jaket evaluate kgqa --model runs/mine/model --metaqa metaqa/ --device cuda:1 --out runs/qa
jaket predict link-prediction --model runs/lp/model --kg my_kg/ --queries q.tsv --device cuda
```

On the CPU nothing changed: these runs give the same per-step losses and the same metrics,
to the last digit, with `--device cpu` as with the code before the tasks took a device (commit
914bf68; compared by hand, `metrics.json` without the timings):

```bash
jaket finetune link-prediction --max-entities 300 --steps 5 --scorers distmult --max-eval 50 --device cpu
jaket finetune link-prediction --max-entities 300 --steps 3 --train-encoder --batch-size 16 \\
    --refresh-initial 2 --max-eval 50 --precision bf16 --device cpu
jaket finetune kgqa --max-entities 300 --max-questions 60 --steps 3 --kg-settings full --select-every 2 --device cpu
jaket finetune relation-classification --max-entities 1000 --train-steps 3 --episodes 10 --settings 4-1 --precision bf16 --device cpu
```

The fine-tuning loops run in one process (no DDP): a task's model and data fit one GPU.
`--log-with tensorboard` (or `wandb`, `mlflow`) sends each step's loss to the engine's trackers
while a fine-tuning run goes, as pre-training does (docs/data.md, *What a fine-tuning run
writes*); tested with a recording tracker for link prediction (both modes) and entity
classification, and with TensorBoard's own event files when `tensorboard` is installed
(`tests/tasks/test_tracking.py`; it is not installed in this venv, so that test skips here: it
passed once with tensorboard 2.21.0 installed into a separate folder on `PYTHONPATH`).

### The GPU check: one command on a machine with no network

`benchmarks/gpu_check.py` is the prepared check of a GPU (issue #29): it builds everything it
needs locally (a 100,000-entity synthetic KG with a corpus of 512-token texts, about one mention
per five tokens, and a random-weight RoBERTa-base-shaped encoder with a byte-level BPE tokenizer
trained on that corpus), runs the `gpu`-marked tests for real on the device (`pytest -m gpu` with
`JAKET_TEST_DEVICE=cuda`: every task's fine-tune → save → load → predict, pre-training killed and
resumed), measures the paper-shape bf16 step (RoBERTa-base, 128 texts × 512 tokens, fan-out
10 × 10, 2 KM layers: time, tokens/s, MFU against the card's bf16 peak, KM / LM time, the memory's
speed-up over on-the-fly descriptions, the refresh rate, the batch wait with 0 / 2 / 8 workers)
and runs `jaket pretrain` once under `accelerate launch` and once under `torchrun`. It writes
`OUT/gpu_check.json` and `OUT/gpu_check.md`; a part that fails is recorded and the others still
run. On an H200 it took 146 s (tests 65 s); `python -m benchmarks.gpu_check --device cpu --tiny`
runs every part but the tests at toy sizes in about 25 s here, and `make test` runs it
(`tests/bench/test_gpu_check.py`).

What to bring: the GPU image this project is checked on has torch (with CUDA), transformers,
accelerate, torch_geometric, safetensors, numpy, tqdm, PyYAML and pytest, but not pydantic, `wn`
or the bundled MiniLM. On a machine with the network, in the repository:

```bash
make gpu-bundle      # .whl/: pydantic, pydantic-core, annotated-types, typing-inspection, wn (34 MB)
                     # .gpu/minilm-tokenizer/: the bundled tokenizer, for the tests' tiny encoders
```

Copy the repository with `.whl/` and `.gpu/` to the GPU machine, then there, in its root:

```bash
make gpu-check       # installs the wheels into /tmp/site, runs the check into runs/gpu-check/
```

(`make gpu-check` is `python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl`
then `JAKET_MODEL=$PWD/.gpu/minilm-tokenizer PYTHONPATH=$PWD/src:/tmp/site python3 -m
benchmarks.gpu_check --out runs/gpu-check`; `--skip tests` leaves the tests out, `--peak-tflops`
sets the peak of a card the table does not know.) The figures of the H200 run are in
docs/performance.md, *On a GPU*, and in `benchmarks/results/gpu_check-h200.json`."""


def steps_of_run() -> int:
    return int(EPOCHS * EPOCH_TOKENS / (TEXTS * TEXT_TOKENS))


def refreshes_in(total: int) -> int:
    """Refreshes in ``total`` steps of the paper's schedule (Eq. 11), the initial fill included."""
    from jaket.bench.pretrain import paper_refresh_steps

    return paper_refresh_steps(total)


@dataclass(frozen=True)
class Measured:
    """The figures of ``performance.json`` the projection starts from (medians; ``None`` where the
    suite did not measure them)."""

    cpu_ms_desc_minilm: float | None  # MiniLM's LM1 over one 64-token description, CPU ms
    lm_flops_seq: float | None  # flops of the full MiniLM over one 128-token sequence
    lm_cpu_ms: float  # LM1 + LM2 forward over a batch, CPU ms (0 when not measured)
    batch: int
    train_over_fwd: float  # forward + backward over forward, measured in pre-training
    km_cpu_ms_node: float | None  # knowledge module, CPU ms per sampled node
    sampler_rate: float | None  # sampled edges per second, one core
    tok_rate: float | None  # descriptions tokenised per second, one core
    load_rss: float | None  # peak RSS after loading the compiled 10^6-entity KG, MB
    load_base: float | None  # RSS after the imports, MB
    load_s: float | None  # opening the compiled cache, s
    compile_s: float | None  # parsing + compiling it once, s
    load_triples: int | None
    load_entities: int | None
    fp16_error: float  # mean relative rounding error of the memory in fp16 (nan if not measured)
    bf16_error: float

    @classmethod
    def from_performance(cls, perf: dict) -> Measured:
        def m(key: str, name: str, default=None):
            value = _median(perf, key, name)
            return default if value is None else value

        return cls(
            cpu_ms_desc_minilm=m("memory", "lm1_cpu_ms_per_description_at_64_tokens"),
            lm_flops_seq=m("model", "lm_flops_per_sequence"),
            lm_cpu_ms=(m("model", "lm1_forward_cpu_ms", 0) or 0) + (m("model", "lm2_forward_cpu_ms", 0) or 0),
            batch=m("model", "batch", 32),
            train_over_fwd=m("pretrain", "training_over_forward", 3.0),
            km_cpu_ms_node=m("model", "km_forward_cpu_ms_per_node"),
            sampler_rate=m("sampler-1000000", "edges_per_second") or m("sampler-default", "edges_per_second"),
            tok_rate=(m("refresh-1000000", "tokenize_descriptions_per_second")
                      or m("memory", "tokenize_descriptions_per_second")),
            load_rss=m("sampler-1000000", "load_peak_rss_mb"),
            load_base=m("sampler-1000000", "load_rss_after_import_mb"),
            load_s=m("sampler-1000000", "load_cached_seconds"),
            compile_s=m("sampler-1000000", "load_compile_seconds"),
            load_triples=m("sampler-1000000", "load_triples"),
            load_entities=m("sampler-1000000", "load_entities"),
            fp16_error=m("memory", "memory_float16_mean_relative_error", float("nan")),
            bf16_error=m("memory", "memory_bfloat16_mean_relative_error", float("nan")),
        )


@dataclass(frozen=True)
class StepCosts:
    """The projected costs of the paper's run on ``WORLD`` GPUs, from the flop counts and the
    assumed GPU rate: per item (a description, a training text) and per training step."""

    desc_flops: float  # one description through RoBERTa-base's LM1 (6 layers), 64 tokens
    text_fwd: float  # one 512-token text through RoBERTa-base, forward
    text_train: float  # the same, forward + backward
    t_desc: float  # seconds of GPU time per description
    t_text: float  # seconds of GPU time per training text
    step_lm: float  # the language module's seconds per step and rank
    seeds: float  # KM seed entities per step (KG batch + mentions)
    sampled_edges: float  # sampled edges per step, all ranks
    nodes_rank: float  # at most one new node per sampled edge, per rank
    gather_bytes: float  # fp16 memory rows a rank copies to its GPU per step

    @classmethod
    def project(cls, measured: Measured) -> StepCosts:
        desc_flops = encoder_flops_per_sequence(6, F_PAPER, 3072, DESC_TOKENS)
        text_fwd = encoder_flops_per_sequence(12, F_PAPER, 3072, TEXT_TOKENS)
        text_train = measured.train_over_fwd * text_fwd
        gpu = GPU_TFLOPS * 1e12
        t_text = text_train / gpu
        seeds = KG_BATCH + TEXTS * MENTIONS_PER_TEXT
        sampled_edges = seeds * (FANOUT + FANOUT ** 2)
        nodes_rank = min(N, sampled_edges / WORLD)  # at most one new node per sampled edge
        return cls(desc_flops=desc_flops, text_fwd=text_fwd, text_train=text_train, t_desc=desc_flops / gpu,
                   t_text=t_text, step_lm=TEXTS * t_text / WORLD, seeds=seeds, sampled_edges=sampled_edges,
                   nodes_rank=nodes_rank, gather_bytes=nodes_rank * F_PAPER * 2)


def _introduction() -> list[str]:
    """The title, what the document is, and the assumptions every projection rests on."""
    lines: list[str] = []
    add = lines.append
    add("# Scaling to Wikidata on 8 GPUs: a projection from measured costs")
    add("")
    add("Generated by `python -m benchmarks.scaling` from [performance.json](performance.json) "
        "(the benchmark suite runs it after `docs/performance.md`); every figure below is either "
        "measured there, an exact size computation, or an assumption stated in the next table. "
        f"Target: the paper's Wikidata KG — N = {N:,} entities, P = {P} relations, T = {T:,} triples — "
        f"RoBERTa-base (H = {F_PAPER}, LM1 = 6 layers), {TEXTS:,} texts × {TEXT_TOKENS} tokens and "
        f"{KG_BATCH:,} KG entities per step, fan-out {FANOUT} × {FANOUT}, descriptions of "
        f"{DESC_TOKENS} tokens, {WORLD} GPUs under `torchrun` (one rank per GPU, one host).")
    add("")
    add("## Assumptions")
    add("")
    add("| assumption | value | why |")
    add("|---|---|---|")
    add(f"| sustained GPU rate on BERT-size matrix products (fp16 / bf16) | {GPU_TFLOPS:.0f} TFLOP/s per GPU | "
        "a V100's tensor-core peak is 125; well-batched BERT training reaches 25-40% of it |")
    add("| GPU time is flop-proportional | – | our CPU measurements give flops per item; the GPU "
        "rate turns them into seconds (the CPU rate is shown for comparison only) |")
    add(f"| bytes of a 64-token description | {DESC_BYTES} | English BPE ≈ 4.5 bytes per token "
        "(our WordNet glosses average 81 bytes for ~19 tokens) |")
    add(f"| bytes of an id / name / aliases | {ID_BYTES} / {NAME_BYTES} / {ALIAS_BYTES} | Q-ids, "
        "short labels, ~2 aliases |")
    add(f"| host → GPU copy | {PCIE_GBS:.0f} GB/s | PCIe 3 x16 in practice |")
    add(f"| all-reduce between the 8 ranks of one host (gloo, CPU tensors) | {ALLREDUCE_GBS:.0f} GB/s bus bandwidth | |")
    add(f"| pre-training length | {EPOCHS} epochs × {EPOCH_TOKENS / 1e9:.0f}B tokens = "
        f"{steps_of_run():,} steps | paper: 8 epochs, ~4B tokens, batch 1,024 × 512 |")
    add("")
    return lines


#: the KG's structures at Wikidata size: (what, bytes, how it is held)
STRUCTURES = [
    ("triples (T, 3) int32", T * 3 * 4, "eager; `T × 12`"),
    ("CSR indptr (N + 1) int64", (N + 1) * 8, "`(N+1) × 8`"),
    ("CSR neighbors (2T) int32", 2 * T * 4, "`2T × 4`"),
    ("CSR edge_type (2T) int32", 2 * T * 4, "`2T × 4` (int16 would do: 2P < 32,768)"),
    ("CSR triple_id (2T) int32", 2 * T * 4, "`2T × 4`"),
    ("edge positions of triples (T, 2) int64", T * 2 * 8, "lazy, only when triples are hidden (relation prediction)"),
    ("entity categories (N) int32", N * 4, ""),
    ("string tables: ids", N * (ID_BYTES + 8), "UTF-8 blob + int64 offsets, memory-mapped, decoded on access"),
    ("string tables: names", N * (NAME_BYTES + 8), "same"),
    ("string tables: descriptions", N * (DESC_BYTES + 8), "same"),
    ("string tables: aliases", N * (ALIAS_BYTES + 8 + 8), "blob + offsets + per-entity pointer"),
    ("id → index dict (only if ids are looked up)", N * 110, "Python dict of str, ~110 B per entry"),
    ("description token cache (N, 64) int32 + lengths, spans", N * (DESC_TOKENS * 4 + 3 * 8),
     "built by every rank at its first refresh (`DescriptionTokens`)"),
    ("E^context memory (N, 768) fp16", N * F_PAPER * 2, "memory-mapped `.npy` (`path=`): shared page cache"),
    ("E^context memory (N, 768) fp32", N * F_PAPER * 4, "if kept in float32"),
    ("R^context (P, 768)", P * F_PAPER * 4, ""),
]


def _memory_footprint(measured: Measured) -> list[str]:
    """Bytes of each structure at Wikidata size, checked against the measured load of a 10^6-entity KG."""
    lines: list[str] = []
    add = lines.append
    add("## Memory footprint of each structure")
    add("")
    add("| structure | bytes | note |")
    add("|---|---|---|")
    for name, b, note in STRUCTURES:
        add(f"| {name} | {fmt_bytes(b)} | {note} |")
    eager = T * 12 + (N + 1) * 8 + 3 * 2 * T * 4 + N * 4
    add("")
    add(f"What a rank holds in RAM after loading the compiled KG: triples + CSR + categories = "
        f"{fmt_bytes(eager)}; the string tables ({fmt_bytes(N * (ID_BYTES + NAME_BYTES + DESC_BYTES + ALIAS_BYTES + 32))}) "
        "stay in the page cache, shared by the 8 ranks.")
    add("")
    load_rss, load_base, load_triples, load_entities = (measured.load_rss, measured.load_base,
                                                        measured.load_triples, measured.load_entities)
    if load_rss and load_base and load_triples:
        measured_bytes = (load_rss - load_base) * 1e6
        predicted = load_triples * 12 + (load_entities + 1) * 8 + 3 * 2 * load_triples * 4 + load_entities * 4
        per_triple = measured_bytes / load_triples
        add(f"Check against the measurement: loading the compiled synthetic KG of {load_entities:,} entities "
            f"and {load_triples:,} triples raised the peak RSS of a fresh process by "
            f"{load_rss:.0f} − {load_base:.0f} = {load_rss - load_base:.0f} MB ({per_triple:.1f} B per triple), "
            f"against {predicted / 1e6:.0f} MB for its triples + CSR + categories. At Wikidata size the "
            f"same per-triple cost gives {per_triple:.1f} × {T:,} = {fmt_bytes(per_triple * T)} "
            f"(N/T is larger for Wikidata, so the N-sized arrays add a little).")
        add("")
    if measured.load_s is not None:
        add(f"Opening the compiled cache took {measured.load_s:.2f} s at {load_entities:,} entities (arrays are "
            f"memory-mapped); the one-off parse + compile took {measured.compile_s:.0f} s, which grows about "
            f"linearly: ≈ {measured.compile_s * T / load_triples / 60:.1f} min at {T:,} triples (done once, on one rank, "
            "before `torchrun`: `jaket kg ...` writes the cache).")
    add("")
    add(f"**Per rank and per host.** 8 ranks × (KG arrays {fmt_bytes(eager)} + token cache "
        f"{fmt_bytes(N * (DESC_TOKENS * 4 + 24))}) = {fmt_bytes(8 * (eager + N * (DESC_TOKENS * 4 + 24)))} of "
        f"private RAM, plus one shared copy of the memory ({fmt_bytes(N * F_PAPER * 2)} fp16) and of the "
        "string tables in the page cache. Two things in today's code do not fit this budget and "
        "should change before a Wikidata run (see *Recommendations*): the refresh's all-reduce "
        "materialises float32 copies of the whole memory, and every rank tokenises every "
        "description.")
    add("")
    return lines


def _compute_per_item(measured: Measured, costs: StepCosts) -> list[str]:
    """Flops of a description and of a training text, the CPU rate measured here, the GPU time assumed."""
    lines: list[str] = []
    add = lines.append
    minilm_desc_flops = encoder_flops_per_sequence(3, 384, 1536, DESC_TOKENS)
    cpu_ms_desc_minilm = measured.cpu_ms_desc_minilm
    cpu_rate_desc = minilm_desc_flops / (cpu_ms_desc_minilm / 1000) if cpu_ms_desc_minilm else None
    cpu_rate_lm = (measured.lm_flops_seq * measured.batch / (measured.lm_cpu_ms / 1000)
                   if measured.lm_flops_seq and measured.lm_cpu_ms else None)
    desc_flops, text_fwd, text_train = costs.desc_flops, costs.text_fwd, costs.text_train
    add("## Compute per item")
    add("")
    add("Flops from `jaket.bench.model.encoder_flops_per_sequence` (2 per multiply-add; RoBERTa-base "
        "at 128 tokens gives 22.3·10⁹, the paper's \"over 22 billion\"):")
    add("")
    add(f"- one description, RoBERTa-base LM1 (6 layers) at 64 tokens: **{desc_flops / 1e9:.2f} GFLOP**;")
    add(f"- one training text, RoBERTa-base at 512 tokens: forward {text_fwd / 1e9:.1f} GFLOP; forward + "
        f"backward = {measured.train_over_fwd:.2f} × forward (measured ratio, `pretrain.training_over_forward`) = "
        f"**{text_train / 1e9:.0f} GFLOP**.")
    if cpu_rate_desc:
        add(f"- measured on this machine (one thread): MiniLM's LM1 at 64 tokens = "
            f"{minilm_desc_flops / 1e9:.2f} GFLOP in {cpu_ms_desc_minilm:.1f} ms CPU → "
            f"{cpu_rate_desc / 1e9:.1f} GFLOP/s"
            + (f"; the full MiniLM at 128 tokens ran at {cpu_rate_lm / 1e9:.1f} GFLOP/s" if cpu_rate_lm else "")
            + f". At that rate a RoBERTa-base description would take "
            f"{desc_flops / cpu_rate_desc * 1000:.0f} ms on one core; the assumed GPU rate is "
            f"{GPU_TFLOPS * 1e12 / cpu_rate_desc:,.0f}× that core.")
    add("")
    add(f"On one GPU: a description costs {desc_flops / 1e9:.2f} / {GPU_TFLOPS:.0f}·10³ = "
        f"{costs.t_desc * 1e3:.3f} ms; a training text {text_train / 1e9:.0f} / {GPU_TFLOPS:.0f}·10³ = "
        f"{costs.t_text * 1e3:.1f} ms.")
    add("")
    return lines


def _training_step(measured: Measured, costs: StepCosts) -> list[str]:
    """One step on 8 GPUs: the language module, the sampling, the memory rows and the knowledge module."""
    lines: list[str] = []
    add = lines.append
    sampler_rate, sampled_edges, nodes_rank = measured.sampler_rate, costs.sampled_edges, costs.nodes_rank
    train_over_fwd = measured.train_over_fwd
    add("## One training step on 8 GPUs")
    add("")
    add(f"- **language module**: {TEXTS:,} texts / {WORLD} ranks × {costs.t_text * 1e3:.1f} ms = "
        f"**{fmt_s(costs.step_lm)}** per step.")
    if sampler_rate:
        add(f"- **sampling (CPU, each rank its share)**: seeds = {KG_BATCH:,} KG entities + {TEXTS:,} × "
            f"{MENTIONS_PER_TEXT:.0f} mentions = {costs.seeds:,.0f}; up to {FANOUT} + {FANOUT}² edges each = "
            f"{sampled_edges / 1e6:.1f}M edges per step, {sampled_edges / WORLD / 1e6:.2f}M per rank; at the "
            f"measured {sampler_rate / 1e6:.1f}M edges/s (1M-entity KG, one core) that is "
            f"{fmt_s(sampled_edges / WORLD / sampler_rate)} per rank per step — overlappable with the GPU "
            "work in a data-loader process.")
    add(f"- **E⁽⁰⁾ from the memory**: at most one new entity per sampled edge, ≤ {nodes_rank / 1e6:.2f}M rows "
        f"per rank ({fmt_bytes(costs.gather_bytes)} of fp16 read from the memory-mapped file and copied to the GPU: "
        f"{fmt_s(costs.gather_bytes / (PCIE_GBS * GB))} at {PCIE_GBS:.0f} GB/s); sharing of hub neighbours "
        "makes it fewer.")
    km_flops_node = 2 * F_PAPER * F_PAPER  # one H x H product per node and layer (W E computed once)
    # layer 1 over all nodes, layer 2 trimmed to seeds + hop 1 (~1/10 of them); forward + backward
    km_rank = 1.1 * nodes_rank * km_flops_node * train_over_fwd
    add(f"- **knowledge module**: one H×H product per node and layer (`CompGATConv` computes W·E once); "
        f"with the last layer trimmed to the seeds and their hop-1 neighbours (≈ 1/10 of the nodes), ≈ 1.1 × "
        f"{nodes_rank / 1e6:.2f}M × 2·768² × {train_over_fwd:.1f} (forward + backward) = {km_rank / 1e12:.1f} TFLOP per rank, "
        f"{fmt_s(km_rank / (GPU_TFLOPS * 1e12))} on the GPU at the assumed rate; the per-edge gathers and scatters are "
        "memory-bound and add about as much again on a GPU.")
    if measured.km_cpu_ms_node:
        add(f"  Measured here: {measured.km_cpu_ms_node * 1000:.1f} µs CPU per sampled node (MiniLM width, 384; "
            f"untrimmed forward); at width 768 the matrix part grows 4×.")
    add("")
    return lines


def _memory_refresh(measured: Measured, costs: StepCosts) -> list[str]:
    """A full refresh split across ranks, its share of the run under Eq. 11's schedule, the
    tokenisation, and the all-reduce that exchanges the refreshed rows."""
    lines: list[str] = []
    add = lines.append
    t_desc, step_lm = costs.t_desc, costs.step_lm
    add("## The memory refresh")
    add("")
    full_refresh_gpu = N * t_desc / WORLD
    add(f"A full refresh encodes all {N:,} descriptions, split across ranks (rank r takes rows r, r + 8, "
        f"...: `EntityContextMemory.refresh(rank=, world_size=)`): {N:,} × {t_desc * 1e3:.3f} ms / {WORLD} = "
        f"**{fmt_s(full_refresh_gpu)}** of GPU time per rank.")
    add("")
    add("| schedule step (Eq. 11) | interval T(i) | descriptions per training step | refresh time per step (8 GPUs) | refresh / training |")
    add("|---|---|---|---|---|")
    for i in (0, 3, 6, 9, 12, 15, 18):
        interval = min(500, 10 * 2 ** (i // 3))
        per_step = N / interval
        t = per_step * t_desc / WORLD
        add(f"| i = {i} | {interval} | {per_step:,.0f} | {fmt_s(t)} | {t / step_lm:.3f} |")
    add("")
    total_steps = steps_of_run()
    refreshes = refreshes_in(total_steps)
    overhead = refreshes * full_refresh_gpu / (total_steps * step_lm)
    add(f"Over the whole run of {total_steps:,} steps the schedule makes {refreshes} refreshes "
        f"(18 before step 1,890, then one every 500 steps): {refreshes} × {fmt_s(full_refresh_gpu)} = "
        f"{fmt_s(refreshes * full_refresh_gpu)} against {total_steps:,} × {fmt_s(step_lm)} = "
        f"{fmt_s(total_steps * step_lm)} of training, **{overhead:.1%}** overall; in the steady state "
        f"(T = 500) {N / 500 * t_desc / WORLD / step_lm:.1%}, against the paper's \"about 1/5\" "
        f"(which counts training as 2× a forward pass; we measure {measured.train_over_fwd:.1f}×). The early "
        "refreshes are the expensive part: while T(i) = 10 a refresh costs several training steps' "
        "worth per step.")
    add("")
    if measured.tok_rate:
        add(f"**Tokenisation** (CPU, once per KG and process, cached by `DescriptionTokens`): at the "
            f"measured {measured.tok_rate:,.0f} descriptions/s (one core; short synthetic descriptions, so "
            f"optimistic for 64-token ones) all {N:,} take {fmt_s(N / measured.tok_rate)} — on every rank today.")
        add("")
    delta_bytes = N * F_PAPER * 4
    add("**The exchange after a refresh** (`Pretrainer.refresh_memory` → "
        "`jaket.train.engine.all_reduce_delta`): every rank holds a copy of the memory, refreshes "
        "its own rows, and all-reduces the float32 difference of the *whole* table: "
        f"N × 768 × 4 = {fmt_bytes(delta_bytes)} per rank. A ring all-reduce moves 2 × 7/8 × that = "
        f"{fmt_bytes(2 * 7 / 8 * delta_bytes)} per rank: {fmt_s(2 * 7 / 8 * delta_bytes / (ALLREDUCE_GBS * GB))} "
        f"at {ALLREDUCE_GBS:.0f} GB/s, once per refresh (small next to the refresh itself), but the "
        f"temporaries (`before` clone, two float32 copies, the delta) need ≈ "
        f"{fmt_bytes(N * F_PAPER * (2 + 4 + 4 + 4))} of RAM *per rank*, "
        f"{fmt_bytes(WORLD * N * F_PAPER * (2 + 4 + 4 + 4))} on the host for 8 ranks.")
    add("")
    return lines


def _where_things_run(measured: Measured, costs: StepCosts) -> list[str]:
    """The table of what each part of a step costs and where it runs under ``torchrun``."""
    sampler_rate, sampled_edges = measured.sampler_rate, costs.sampled_edges
    return [
        "## What runs where under `torchrun --nproc-per-node 8`",
        "",
        "| work | where | per step (steady state) |",
        "|---|---|---|",
        f"| neighbour sampling, text batches, masking | CPU, each rank (or its data-loader workers) | "
        f"{fmt_s(sampled_edges / WORLD / sampler_rate) if sampler_rate else '–'} |",
        f"| E⁽⁰⁾ rows from the memory-mapped memory → GPU | host RAM / page cache → PCIe | "
        f"≤ {fmt_s(costs.gather_bytes / (PCIE_GBS * GB))} |",
        f"| LM1 + KM + fusion + LM2, forward + backward | GPU, each rank its 128 texts | {fmt_s(costs.step_lm)} + KM |",
        "| gradient all-reduce (DDP) | NCCL | 125M parameters × 2 B, overlapped with backward |",
        f"| memory refresh (every T(i) steps): LM1 over rows r::8 | GPU, each rank | "
        f"{fmt_s(N / 500 * costs.t_desc / WORLD)} amortised |",
        "| memory exchange | the engine's all-reduce, 65,536 rows at a time through the GPU "
        "(`jaket.train.engine.all_reduce_delta`); a shared file recommended | see above |",
        "",
    ]


def _recommendations(measured: Measured) -> list[str]:
    """What should change in the code before a Wikidata-size run, each with what it saves."""
    return [
        "## Recommendations before a Wikidata-size run",
        "",
        "1. **Exchange only the refreshed rows.** With the memory memory-mapped from one file "
        "(`EntityContextMemory(path=...)`, already supported), each rank can write its own rows "
        "r::8 into the shared mapping and the ranks only need a barrier: no all-reduce, no "
        f"float32 temporaries, {fmt_bytes(N * F_PAPER * 2)} for the whole host. Across hosts, an "
        f"all-gather of each rank's fp16 rows moves {fmt_bytes(N * F_PAPER * 2 / WORLD)} per rank "
        "instead of all-reducing the full float32 table.",
        "2. **Tokenise each rank's rows only** (or cache `DescriptionTokens` as `.npy` beside the "
        f"compiled KG): today each of the 8 ranks tokenises all {N:,} descriptions and keeps "
        f"{fmt_bytes(N * (DESC_TOKENS * 4 + 24))} of token ids.",
        "3. **Trim the knowledge module's last layer** to the seeds (and layer 1 to seeds + hop 1): "
        "exact for every current caller, and it makes the KM's cost what the paper's formula counts "
        "(see docs/performance.md, *Model stages*).",
        "4. **Store `edge_type` as int16** (2P < 32,768): saves "
        f"{fmt_bytes(2 * T * 2)} per rank; `edge_positions_of_triples` could be int32 "
        f"({fmt_bytes(T * 2 * 4)} saved when relation prediction hides edges).",
        "5. **Memory in fp16 or bf16**: halves the table to "
        f"{fmt_bytes(N * F_PAPER * 2)}; the measured rounding error on real rows is "
        f"{measured.fp16_error:.1e} (fp16) and "
        f"{measured.bf16_error:.1e} (bf16) of the mean "
        "magnitude (docs/performance.md, memory section).",
        "",
    ]


def write_scaling(perf: dict, out: Path) -> None:
    """Write ``docs/scaling.md`` from the suite's figures: the assumptions, the footprint, the costs
    of an item, a step and a refresh, where each part runs, how to launch it, what to change first."""
    measured = Measured.from_performance(perf)
    costs = StepCosts.project(measured)
    lines = [*_introduction(), *_memory_footprint(measured), *_compute_per_item(measured, costs),
             *_training_step(measured, costs), *_memory_refresh(measured, costs),
             *_where_things_run(measured, costs), *RUNNING.splitlines(), "", *_recommendations(measured)]
    out.write_text("\n".join(lines) + "\n")


def main() -> int:
    perf_path = ROOT / "docs" / "performance.json"
    perf = json.loads(perf_path.read_text())
    write_scaling(perf, ROOT / "docs" / "scaling.md")
    print(f"wrote {ROOT / 'docs' / 'scaling.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
