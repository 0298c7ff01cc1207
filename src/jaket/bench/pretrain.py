"""Pre-training speed: the entity context memory against on-the-fly description encoding.

Two figures of the paper's "Entity Context Embedding Memory" and "Computation Analysis", and
the data pipeline's (:func:`pipeline_figures`: batch-build vs model-step time per step, and how
long the loop waits for its batch with and without worker processes):

1. steps per second of the real pre-training loop (:class:`jaket.train.pretrain.Pretrainer`, the
   bundled MiniLM, a WordNet subset) when the knowledge module reads E^context from the memory,
   against encoding the description of every entity of each step's sampled subgraph with LM1 on
   the fly (paper: the memory is about 15x faster). Our on-the-fly mode encodes without
   gradients, so the measured speed-up is a lower bound of what the paper compares.
2. the cost of refreshing the memory relative to training under the paper's refresh schedule
   (Eq. 11 with I_init = 10, a = 2, r = 3, I_max = 500; paper: about 1/5 additional compute).

Our KG and batches are far smaller than the paper's (Wikidata's 3.66M entities, 1,024 texts of
512 tokens per step, 16,384 KG entities), so both ratios are also *derived at paper scale* from
per-item costs measured here in the same process: LM1 forward per 64-token description and
LM1+LM2 forward+backward per text (scaled from 128 to 512 tokens by the flop count), see
``paper_scale_*`` figures and docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from jaket.bench.model import encoder_flops_per_sequence
from jaket.flags import positive_int
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import refresh_steps
from jaket.train.batching import batch_loader
from jaket.train.config import load_config

#: the paper's pre-training scale (Basic Settings, Implementation Details, Computation Analysis)
PAPER = {"entities": 3_657_658, "texts_per_step": 1024, "text_tokens": 512, "kg_batch": 16_384,
         "description_tokens": 64, "fanout": 10, "km_layers": 2, "max_interval": 500,
         "mentions_per_text": 512 / 5}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--source", choices=["wordnet", "toy"], default="wordnet")
    parser.add_argument("--entities", type=int, default=None,
                        help="WordNet subset size (default 3,000; quick: 600)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per mode (default 8)")
    parser.add_argument("--text-batch", type=int, default=None, help="texts per step (default 16)")
    parser.add_argument("--fanout", type=int, default=10, help="neighbours per hop (paper: 10)")
    parser.add_argument("--schedule-steps", type=int, default=None,
                        help="length of the run whose refresh schedule gives the refresh share "
                             "(default: until the paper's interval reaches its maximum, 500)")
    parser.add_argument("--description-length", type=int, default=64,
                        help="description tokens of the memory and the on-the-fly mode (paper: 64)")
    parser.add_argument("--encoder", default=None, help="model directory (default: bundled MiniLM)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads")
    parser.add_argument("--workers", default="0,2",
                        help="data.workers settings of the data-pipeline figures (default 0,2)")


def paper_refresh_steps(total: int) -> int:
    """Refreshes (initial fill included) in ``total`` steps of the paper's schedule (Eq. 11)."""
    return 1 + len(refresh_steps(total, 10, 2, 3, 500))


def pipeline_figures(trainer, steps: int, workers: list[int]) -> dict:
    """The data pipeline (:mod:`jaket.train.batching`): seconds per step to build the step's
    batch on the main thread, seconds per model step with the batch ready, and, for each
    ``data.workers`` setting, seconds per loop step and how long of it the loop waited for its
    batch (``batch_wait``; with workers the batches are built ahead while the model steps)."""
    accum = trainer.config.optim.accumulation_steps
    figures: dict = {}
    positions = range(trainer.step * accum, (trainer.step + steps) * accum)
    began = time.perf_counter()
    ready = [trainer.sample_batch(p) for p in positions]
    figures["batch_build_seconds_per_step"] = (time.perf_counter() - began) / steps
    trainer._batches = iter(ready)
    began = time.perf_counter()
    for _ in range(steps):
        trainer.train_step()
    figures["model_step_seconds_per_step"] = (time.perf_counter() - began) / steps
    for count in workers:
        trainer._batches = batch_loader(trainer.builder, trainer.step * accum, count,
                                        trainer.config.data.prefetch)
        trainer.train_step()  # untimed: the workers start
        waited, began = trainer.batch_seconds, time.perf_counter()
        for _ in range(steps):
            trainer.train_step()
        figures[f"loop_step_seconds_workers_{count}"] = (time.perf_counter() - began) / steps
        figures[f"batch_wait_seconds_per_step_workers_{count}"] = (trainer.batch_seconds - waited) / steps
        trainer._batches = None
    return figures


def _per_item_costs(language: SplitLanguageModel, batch: int = 16) -> dict:
    """Seconds per 64-token description (LM1 forward, no_grad), per 128-token text forward
    (LM1 + LM2, no_grad) and per 128-token text forward + backward, measured interleaved,
    median of 3 after a warm-up."""
    ids_d = torch.randint(1000, language.tokenizer.vocab_size, (64, 64))
    ids_t = torch.randint(1000, language.tokenizer.vocab_size, (batch, 128))
    mask_t = torch.ones_like(ids_t)
    desc, forward, train = [], [], []
    was = language.training
    for i in range(4):
        language.eval()
        began = time.perf_counter()
        with torch.no_grad():
            language.lm1(ids_d, torch.ones_like(ids_d))
            d = (time.perf_counter() - began) / len(ids_d)
            began = time.perf_counter()
            language.lm2(language.lm1(ids_t, mask_t), mask_t)
            f = (time.perf_counter() - began) / len(ids_t)
        language.train()
        began = time.perf_counter()
        language.lm2(language.lm1(ids_t, mask_t), mask_t).sum().backward()
        t = (time.perf_counter() - began) / len(ids_t)
        language.zero_grad(set_to_none=True)
        if i:
            desc.append(d)
            forward.append(f)
            train.append(t)
    language.train(was)
    return {"description_seconds_64": statistics.median(desc),
            "text_forward_seconds_128": statistics.median(forward),
            "text_seconds_128": statistics.median(train)}


class OnTheFlyDescriptions:
    """The on-the-fly mode, a :attr:`Pretrainer.before_forward <jaket.train.pretrain.Pretrainer>`
    hook: before each micro-step's forward, LM1 encodes the description of every entity of the
    batch's sampled subgraph (Eq. 7 for those rows, no gradients) into the memory the step then
    reads, which is what the memory (Eq. 11-12) saves. ``seconds`` totals the encoding,
    ``descriptions`` the descriptions encoded."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.seconds = 0.0
        self.descriptions = 0

    def __call__(self, batch) -> None:
        trainer = self.trainer
        began = time.perf_counter()
        with trainer.accelerator.autocast():
            trainer.memory.refresh(trainer.model.language, trainer.data.kg,
                                   batch_size=trainer.config.memory.batch_size,
                                   max_length=trainer.model.config.description_max_length, momentum=0.0,
                                   entity_subset=batch.subgraph.node_ids.numpy())
        self.seconds += time.perf_counter() - began
        self.descriptions += int(batch.subgraph.num_nodes)


def _trainer(args: argparse.Namespace, entities: int, text_batch: int, out: str):
    """The pre-training loop of the benchmark: ``--source`` with ``entities`` entities, the
    encoder, fan-out and description length of the flags, no scheduled refresh, no checkpoint."""
    # --help: `jaket bench` registers this module; the model (torch_geometric, seconds) loads when it runs
    from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
    from jaket.train.pretrain import Pretrainer  # --help: as above

    overrides = [f"data.source={args.source}", f"data.max_entities={entities}",
                 f"steps={10**6}", "checkpoint_every=0", "tensorboard=false",
                 f"text_batch_size={text_batch}", f"model.fanouts=[{args.fanout},{args.fanout}]",
                 f"model.description_max_length={args.description_length}", f"memory.initial={10**6}"]
    if args.encoder:
        overrides.append(f"model.encoder={args.encoder}")
    config = load_config(overrides=overrides)
    torch.manual_seed(0)
    loaded = load_kg_and_corpus(config)  # (kg, corpus) or (kg, corpus, report)
    kg, corpus = loaded[0], loaded[1]
    model = build_model(config, kg)
    return Pretrainer(config, model, prepare_data(kg, corpus, model.language.tokenizer, config), out)


def memory_figures(trainer, steps: int) -> dict:
    """Steps reading E^context from the memory against steps encoding their subgraph's
    descriptions on the fly (:class:`OnTheFlyDescriptions`), alternated so that both see the same
    machine state: steps per second, CPU seconds per step, the speed-up (median of the per-pair
    ratios), the encoding's share and the subgraph's size."""
    on_the_fly = OnTheFlyDescriptions(trainer)
    for hook in (None, on_the_fly, None):  # warm-up: the first steps build lazy caches
        trainer.before_forward = hook
        trainer.train_step()
    nodes = []
    seconds: dict[str, list[float]] = {"memory": [], "on_the_fly": []}
    cpu: dict[str, list[float]] = {"memory": [], "on_the_fly": []}
    description_seconds = []
    for _ in range(steps):
        for mode in ("memory", "on_the_fly"):
            trainer.before_forward = on_the_fly if mode == "on_the_fly" else None
            try:  # the step's subgraph size (sampling is deterministic per position)
                nodes.append(trainer.sample_batch(trainer.step).subgraph.num_nodes)
            except (AttributeError, TypeError):
                pass
            before = on_the_fly.seconds
            began, began_cpu = time.perf_counter(), time.process_time()
            trainer.train_step()
            seconds[mode].append(time.perf_counter() - began)
            cpu[mode].append(time.process_time() - began_cpu)
            if mode == "on_the_fly":
                description_seconds.append(on_the_fly.seconds - before)
    trainer.before_forward = None
    figures = {"steps_per_second_memory": 1 / statistics.median(seconds["memory"]),
               "steps_per_second_on_the_fly": 1 / statistics.median(seconds["on_the_fly"]),
               "memory_speedup": statistics.median(f / m for f, m in zip(seconds["on_the_fly"], seconds["memory"])),
               "memory_speedup_cpu": statistics.median(f / m for f, m in zip(cpu["on_the_fly"], cpu["memory"])),
               "step_cpu_seconds_memory": statistics.median(cpu["memory"]),
               "step_cpu_seconds_on_the_fly": statistics.median(cpu["on_the_fly"]),
               "on_the_fly_description_seconds_per_step": statistics.median(description_seconds)}
    if nodes:
        figures["subgraph_nodes_per_step"] = statistics.median(nodes)
    return figures


def refresh_figures(total: int, full_refresh: float, step_seconds: float) -> dict:
    """The refresh's cost against training over ``total`` steps of the paper's schedule (Eq. 11),
    for a run of our size: one refresh takes ``full_refresh`` s, a step ``step_seconds``."""
    refreshes = paper_refresh_steps(total)
    refresh_total = refreshes * full_refresh
    return {"schedule_steps": total, "schedule_refreshes": refreshes,
            "refresh_over_training": refresh_total / (total * step_seconds),
            "refresh_share": refresh_total / (refresh_total + total * step_seconds)}


def paper_scale_figures(language: SplitLanguageModel) -> dict:
    """The per-item costs measured here (:func:`_per_item_costs`) and, from them, the refresh's
    share and the memory's speed-up at the paper's scale (:data:`PAPER`)."""
    costs = _per_item_costs(language)
    cfg = language.config
    scale_512 = (encoder_flops_per_sequence(cfg.num_hidden_layers, cfg.hidden_size,
                                            cfg.intermediate_size, 512)
                 / encoder_flops_per_sequence(cfg.num_hidden_layers, cfg.hidden_size,
                                              cfg.intermediate_size, 128))
    per_desc = costs["description_seconds_64"]
    per_text_512 = costs["text_seconds_128"] * scale_512
    descriptions_per_step = PAPER["entities"] / PAPER["max_interval"]
    step_paper = PAPER["texts_per_step"] * per_text_512
    # on the fly: every unique entity of the step's subgraph needs its description encoded, with
    # gradients in the paper's comparison (forward + backward of LM1, ~3x the forward; ours is
    # forward only). The seeds are the KG batch plus the texts' mentions; how many distinct
    # entities their 10 x 10 neighbourhoods hold depends on the KG's hubs, so we report the
    # speed-up as a function of it, its upper bound, and the count at which the paper's 15x holds
    seeds = PAPER["kg_batch"] + PAPER["texts_per_step"] * PAPER["mentions_per_text"]
    sampled = min(PAPER["entities"], seeds * (1 + PAPER["fanout"] + PAPER["fanout"] ** 2))
    return {"description_ms_64_tokens": per_desc * 1000,
            "text_train_ms_128_tokens": costs["text_seconds_128"] * 1000,
            "text_forward_ms_128_tokens": costs["text_forward_seconds_128"] * 1000,
            "training_over_forward": costs["text_seconds_128"] / costs["text_forward_seconds_128"],
            "text_train_ms_512_tokens_scaled": per_text_512 * 1000,
            "paper_scale_descriptions_per_step": descriptions_per_step,
            "paper_scale_refresh_over_training": descriptions_per_step * per_desc / step_paper,
            "paper_scale_seed_entities": seeds,
            "paper_scale_subgraph_entities_upper_bound": sampled,
            "paper_scale_step_seconds": step_paper,
            "paper_scale_memory_speedup_upper_bound_with_grad": 1 + 3 * sampled * per_desc / step_paper,
            "paper_scale_unique_entities_for_15x_no_grad": 14 * step_paper / per_desc,
            "paper_scale_unique_entities_for_15x_with_grad": 14 * step_paper / (3 * per_desc)}


def run(args: argparse.Namespace) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    entities = args.entities or (600 if args.quick else 3000)
    steps = args.steps or (3 if args.quick else 8)
    text_batch = args.text_batch or (8 if args.quick else 16)
    with tempfile.TemporaryDirectory() as out:
        trainer = _trainer(args, entities, text_batch, out)
        kg = trainer.data.kg
        figures: dict = {"source": args.source, "entities": kg.num_entities, "triples": kg.num_triples,
                         "timed_steps": steps, "text_batch": text_batch, "fanout": args.fanout,
                         "description_max_length": trainer.model.config.description_max_length,
                         "threads": torch.get_num_threads()}
        trainer.refresh_memory()  # the first fill (also tokenises every description once)
        began = time.perf_counter()
        trainer.refresh_memory()  # a momentum refresh: the cost of one scheduled refresh
        full_refresh = time.perf_counter() - began
        figures.update(memory_figures(trainer, steps))
        workers = [int(w) for w in str(args.workers).split(",") if w.strip()]
        figures.update(pipeline_figures(trainer, steps, workers))
    figures["full_refresh_seconds"] = full_refresh
    figures["full_refresh_descriptions_per_second"] = (kg.num_entities + kg.num_relations) / full_refresh
    # refresh cost under the paper's schedule (by default until its interval reaches 500)
    total = args.schedule_steps or 10 * (1 + 2 + 4 + 8 + 16 + 32) * 3 + 500 * 4
    figures.update(refresh_figures(total, full_refresh, 1 / figures["steps_per_second_memory"]))
    figures.update(paper_scale_figures(trainer.model.language))
    return figures
