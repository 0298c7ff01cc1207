"""Pre-training speed: the entity context memory against on-the-fly description encoding.

Two figures of the paper's Implementation Details: (1) steps per second when the knowledge
module reads E^context from the memory versus encoding the description of every entity of each
step's subgraph with LM1 on the fly (paper: the memory is about 15x faster; our on-the-fly mode
encodes without gradients, so the measured ratio is a lower bound), and (2) the share of the
total compute spent refreshing the memory under the refresh schedule (paper: about 1/5).
Runs the real pre-training loop (:class:`jaket.train.pretrain.Pretrainer`) on the bundled MiniLM
and a WordNet subset (``--source wordnet``) or a synthetic KG with generated descriptions.
"""

from __future__ import annotations

import argparse
import time

import torch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", choices=["wordnet", "toy"], default="wordnet")
    parser.add_argument("--entities", type=int, default=2000, help="WordNet subset size")
    parser.add_argument("--steps", type=int, default=12, help="timed steps per mode")
    parser.add_argument("--schedule-steps", type=int, default=300,
                        help="length of the run whose refresh schedule gives the refresh share")
    parser.add_argument("--encoder", default=None, help="model directory (default: bundled MiniLM)")


def run(args: argparse.Namespace) -> dict:
    from jaket.train.config import load_config
    from jaket.train.pretrain import (Pretrainer, build_model, load_kg_and_corpus, prepare_data,
                                      refresh_steps)
    import tempfile

    overrides = [f"data.source={args.source}", f"data.max_entities={args.entities}",
                 f"steps={args.steps + 1}", "checkpoint_every=0", "tensorboard=false",
                 f"memory.initial={10**9}"]
    if args.encoder:
        overrides.append(f"model.encoder={args.encoder}")
    config = load_config(overrides=overrides)
    torch.manual_seed(0)
    kg, corpus = load_kg_and_corpus(config)
    model = build_model(config, kg)
    data = prepare_data(kg, corpus, model.language.tokenizer, config)
    figures: dict = {"entities": kg.num_entities, "timed_steps": args.steps}
    with tempfile.TemporaryDirectory() as out:
        trainer = Pretrainer(config, model, data, out)
        began = time.perf_counter()
        trainer.refresh_memory()  # one full refresh: its cost
        full_refresh = time.perf_counter() - began
        trainer.train_step()  # warm-up
        for mode in ("memory", "on_the_fly"):
            trainer.on_the_fly_descriptions = mode == "on_the_fly"
            began = time.perf_counter()
            for _ in range(args.steps):
                trainer.train_step()
            figures[f"steps_per_second_{mode}"] = args.steps / (time.perf_counter() - began)
    figures["memory_speedup"] = figures["steps_per_second_memory"] / figures["steps_per_second_on_the_fly"]
    m = config.memory
    refreshes = 1 + len(refresh_steps(args.schedule_steps, 10, 2, 3, 500))
    step_seconds = 1 / figures["steps_per_second_memory"]
    refresh_total = refreshes * full_refresh
    figures["full_refresh_seconds"] = full_refresh
    figures["schedule_steps"] = args.schedule_steps
    figures["schedule_refreshes"] = refreshes
    figures["refresh_share"] = refresh_total / (refresh_total + args.schedule_steps * step_seconds)
    figures["refresh_share_note"] = (f"{refreshes} full refreshes (initial 10, x2 every 3, cap 500; "
                                     f"paper schedule) over {args.schedule_steps} steps of {kg.num_entities} entities")
    return figures
