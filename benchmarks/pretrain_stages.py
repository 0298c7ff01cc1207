"""Where a pre-training run's time goes, before any lever is pulled (issue 68, "measure first").

    python -m benchmarks.pretrain_stages --config configs/pretrain-wordnet-senses.yaml \\
        --encoder models/all-mpnet-base-v2 [--precision bf16] [--steps 12] [--rows 64,32,16] [--compile-ab] \\
        [--out stages.json]

Three figures of a run's configuration (four with ``--rows``, five with ``--compile-ab``), from one process on this machine:

1. **The rows each refresh interval reads.** A step's batch is a pure function of ``(seed, position)``
   (:meth:`jaket.train.batching.BatchBuilder.sample_batch`), so the ``E^context`` rows that the steps
   between two refreshes read (the knowledge module's sampled nodes and the masked-entity candidates)
   are counted exactly, without training: a refresh of only those rows can save no more than the
   rows outside them.
2. **The split of a step** (``torch.profiler``, ``--steps`` steps after two warm-up steps): the
   forward of Eq. 7 with gradients (``tasks.description_rows``, :meth:`JaketModel.describe`), of LM1
   and LM2 over the texts, of the knowledge module, and the whole step (forward, backward, optimiser).
3. **Padding groups on and off** (:func:`jaket.model.memory.padding_groups`): the same steps' wall,
   the two alternating in blocks of two steps so that the machine's drift falls on both.
4. **Fewer description rows a step** (``--rows 64,32,16``, a change of the recipe): the step's wall
   with each ``tasks.description_rows``, interleaved the same way (each block in another order). The
   batches are otherwise the same (the rows are the first ``R`` of one permutation of the step's
   seeds); what fewer rows do to quality is measured by runs, not here.
5. **The encoder's layers compiled** (``--compile-ab``, :meth:`SplitLanguageModel.compile_layers`
   with ``dynamic=True``): the compile and warm-up seconds, then the step's wall eager and compiled,
   interleaved in blocks of three steps (compiled dropout draws its own masks: another draw of the
   run, the same work).

The allocator is set as the ``jaket`` command sets it (:func:`jaket.paths.allocator_environment`; a
set ``GLIBC_TUNABLES=`` keeps glibc's defaults), the OpenMP wait policy is the environment's
(``OMP_WAIT_POLICY``; ``jaket`` sets ``PASSIVE``). The memory's first fill goes through the
description-row cache (``$JAKET_CACHE``), so a second call does not pay it. Prints JSON
(docs/performance.md, "The 110M sense run on a native-bf16 CPU").
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile, record_function

import jaket.model.jaket as jaket_model
from jaket.atomic import write_json
from jaket.model.device import machine_description
from jaket.model.memory import refresh_steps
from jaket.paths import allocator_environment
from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
from jaket.train.config import load_config
from jaket.train.pretrain import Pretrainer


def rows_read(trainer: Pretrainer) -> list[dict]:
    """The ``E^context`` rows read between consecutive refreshes (first fill, Eq. 11's schedule)."""
    config, kg = trainer.config, trainer.data.kg
    m = config.memory
    edges = [0, *refresh_steps(config.steps, m.initial, m.growth, m.every, m.maximum), config.steps]
    intervals = []
    for begin, end in zip(edges, edges[1:]):
        read = np.zeros(kg.num_entities, dtype=bool)
        knowledge = np.zeros(kg.num_entities, dtype=bool)
        for position in range(begin * config.optim.accumulation_steps, end * config.optim.accumulation_steps):
            batch = trainer.sample_batch(position)
            nodes = batch.subgraph.node_ids.numpy()
            knowledge[nodes] = True
            read[nodes] = True
            read[batch.entity_candidates.numpy()[batch.entity_valid.numpy()]] = True
        intervals.append({"steps": [begin, end], "rows_read": int(read.sum()),
                          "share_read": round(float(read.mean()), 5), "knowledge_module_rows": int(knowledge.sum())})
    return intervals


def _labelled(owner, name: str, label: str) -> None:
    method = getattr(owner, name)

    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        with record_function(label):
            return method(*args, **kwargs)

    setattr(owner, name, wrapped)


def step_split(trainer: Pretrainer, steps: int) -> dict:
    """Seconds a step of the profiled steps spends in each labelled stage (forward only but for the
    step, which is everything)."""
    model = trainer.model
    _labelled(model, "describe", "describe (Eq. 7 with gradients, forward)")
    _labelled(model, "knowledge_forward", "knowledge module (Eq. 1-5, forward)")
    _labelled(model.language, "lm2", "LM2 over the texts (forward)")
    _labelled(trainer.optimizer, "step", "optimiser")
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(steps):
            with record_function("step"):
                trainer.train_step()
    figures = {event.key: round(event.cpu_time_total / 1e6 / steps, 3) for event in profiler.key_averages()
               if event.key in {"step", "describe (Eq. 7 with gradients, forward)", "optimiser",
                                "knowledge module (Eq. 1-5, forward)", "LM2 over the texts (forward)",
                                "aten::bernoulli_"}}
    figures["dropout masks (aten::bernoulli_)"] = figures.pop("aten::bernoulli_", 0.0)
    return figures


def step_walls(walls: list[float]) -> dict:
    """The median and mean wall seconds of one A/B side's steps."""
    return {"median_s": round(float(np.median(walls)), 3), "mean_s": round(float(np.mean(walls)), 3),
            "steps": len(walls)}


def grouping_ab(trainer: Pretrainer, steps: int) -> dict:
    """Wall seconds a step with the description rows in padding groups and in one padded batch."""
    grouped = jaket_model.padding_groups

    def one(lengths, **_):
        return [np.arange(len(lengths))]

    walls: dict[str, list[float]] = {"padding groups": [], "one padded batch": []}
    try:
        for block in range(max(1, steps // 2)):
            pairs = [("one padded batch", one), ("padding groups", grouped)]
            for name, rule in (pairs if block % 2 == 0 else pairs[::-1]):
                jaket_model.padding_groups = rule
                for _ in range(2):
                    began = time.perf_counter()
                    trainer.train_step()
                    walls[name].append(time.perf_counter() - began)
    finally:
        jaket_model.padding_groups = grouped
    return {name: step_walls(v) for name, v in walls.items()}


def rows_ab(trainer: Pretrainer, rows: list[int], steps: int) -> dict:
    """Wall seconds a step with each number of description rows (``tasks.description_rows``), the
    settings interleaved in blocks of two steps, each block in a rotated order."""
    config = trainer.builder.config
    if config.tasks.description_rows == 0 and any(rows):
        raise ValueError("the configuration has tasks.description_rows: 0, so no description was tokenised")
    variants = {r: config.model_copy(update={"tasks": config.tasks.model_copy(update={"description_rows": r})})
                for r in rows}
    walls: dict[int, list[float]] = {r: [] for r in rows}
    described: dict[int, list[int]] = {r: [] for r in rows}
    try:
        for block in range(max(1, steps // 2)):
            turn = block % len(rows)
            for r in rows[turn:] + rows[:turn]:
                trainer.builder.config = variants[r]
                for _ in range(2):
                    position = trainer.step * config.optim.accumulation_steps
                    described[r].append(len(trainer.sample_batch(position).description_local))
                    began = time.perf_counter()
                    trainer.train_step()
                    walls[r].append(time.perf_counter() - began)
    finally:
        trainer.builder.config = config
    return {str(r): {**step_walls(v), "rows_a_step": round(float(np.mean(described[r])), 1)} for r, v in walls.items()}


def compile_ab(trainer: Pretrainer, steps: int, **options) -> dict:
    """Wall seconds a step with the encoder's layers eager and compiled (``torch.compile`` through
    :meth:`SplitLanguageModel.compile_layers`; ``options`` to it, ``dynamic=True`` by default), the
    two alternating in blocks of three steps; and the seconds compiling and four warm-up steps took.
    The layers are compiled in place and switched back to eager after."""
    layers = list(trainer.model.language._layers[0])
    began = time.perf_counter()
    trainer.model.language.compile_layers(**({"dynamic": True} | options))
    compiled = [layer._compiled_call_impl for layer in layers]  # what nn.Module.compile set
    for _ in range(4):
        trainer.train_step()
    warm = time.perf_counter() - began
    walls: dict[str, list[float]] = {"eager": [], "compiled": []}
    try:
        for block in range(max(1, steps // 3)):
            for name in (("compiled", "eager") if block % 2 == 0 else ("eager", "compiled")):
                for layer, call in zip(layers, compiled):
                    layer._compiled_call_impl = call if name == "compiled" else None
                for _ in range(3):
                    began = time.perf_counter()
                    trainer.train_step()
                    walls[name].append(time.perf_counter() - began)
    finally:
        for layer in layers:
            layer._compiled_call_impl = None
    return {"compile_and_warm_up_seconds": round(warm, 1), **{name: step_walls(v) for name, v in walls.items()}}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--encoder", help="model.encoder of the run (a local Hugging Face folder)")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--steps", type=int, default=12, help="profiled steps, and steps of each A/B side")
    parser.add_argument("--rows", type=lambda text: [int(r) for r in text.split(",")],
                        help="also the step's wall with each tasks.description_rows, e.g. 64,32,16")
    parser.add_argument("--no-groups-ab", action="store_true", help="skip the padding-groups A/B")
    parser.add_argument("--compile-ab", action="store_true",
                        help="also the step's wall with the encoder's layers compiled (torch.compile) and eager")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration override, as jaket pretrain's --set (repeatable)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    kept = allocator_environment()  # as the jaket command does; GLIBC_TUNABLES= (set) keeps glibc's defaults
    overrides = [*args.set, "mixed_precision=bf16" if args.precision == "bf16" else 'mixed_precision="no"']
    if args.encoder:
        overrides.append(f"model.encoder={args.encoder}")
    config = load_config(args.config, overrides)
    if args.rows and (min(args.rows) < 0 or (any(args.rows) and config.tasks.description_rows == 0)):
        parser.error("--rows: numbers of 0 or more, and a configuration with tasks.description_rows > 0 "
                     "(its descriptions are tokenised for the rows)")
    kg, corpus, report = load_kg_and_corpus(config)
    model = build_model(config, kg)
    data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
    out = Path(args.out).with_suffix(".run") if args.out else Path("runs/bench-pretrain-stages")
    trainer = Pretrainer(config, model, data, out)
    began = time.perf_counter()
    result = {"machine": machine_description(), "threads": torch.get_num_threads(), "precision": args.precision,
              "freed_memory_kept": kept, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
              "config": args.config, "encoder": args.encoder, "rows_read_per_interval": rows_read(trainer),
              "entities": kg.num_entities}
    result["seconds_counting_rows"] = round(time.perf_counter() - began, 1)
    began = time.perf_counter()
    trainer.refresh_memory()
    result["first_fill_seconds"] = round(time.perf_counter() - began, 1)
    for _ in range(2):
        trainer.train_step()
    result["step_split_seconds"] = step_split(trainer, args.steps)
    if not args.no_groups_ab:
        result["padding_groups_ab"] = grouping_ab(trainer, args.steps)
    if args.rows:
        result["description_rows_ab"] = rows_ab(trainer, args.rows, args.steps)
    if args.compile_ab:
        result["compile_ab"] = compile_ab(trainer, args.steps)
    if args.out:
        write_json(args.out, result)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
