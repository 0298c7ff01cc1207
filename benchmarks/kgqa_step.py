"""One KGQA training step on MetaQA: the KM over the batch's computation subgraph vs over the whole KG.

    python -m benchmarks.kgqa_step --metaqa ../shared/data/metaqa [--steps 5] [--variant lm+g+m]

Reads MetaQA under the task's protocol (``jaket.tasks.kgqa.data.load_metaqa_task``), builds the
setting's model on the bundled MiniLM with a random entity memory (a step costs the same whatever
the memory holds, so the ~3-minute LM1 pass over the 43k descriptions is skipped), and times
``--steps`` full training steps (forward, backward, AdamW) of ``--batch-size`` training questions
for 1-hop batches, 2-hop batches and mixed batches, each path on the same batches, one thread
(median wall and CPU seconds per step; the ratio of CPU times is the reliable one on a shared machine).
Also reports the largest difference between the two paths' candidate scores on the first batch.
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metaqa", type=Path, required=True)
    parser.add_argument("--variant", default="lm+g+m", help="lm, lm+g or lm+g+m")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--encoder", type=Path)
    parser.add_argument("--km-fanout", type=int, default=0,
                        help="also time the sampled subgraph (at most N in-edges per node and hop)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from jaket.tasks import kgqa
    from jaket.tasks.kgqa import QAGraph
    from jaket.tasks.kgqa import load_metaqa_task
    from jaket.model.memory import FrozenMemory
    from jaket.tasks.variants import load_backbone

    data = load_metaqa_task(args.metaqa)
    kg = data.kg
    config = kgqa.KGQAConfig(variants=(args.variant,), encoder=args.encoder, batch_size=args.batch_size)
    backbone = load_backbone(config.variant_config(args.variant), seed=0)
    generator = torch.Generator().manual_seed(0)
    memory = FrozenMemory(torch.randn(kg.num_entities, backbone.hidden_size, generator=generator),
                          torch.randn(kg.num_relations, backbone.hidden_size, generator=generator))
    graph = QAGraph(kg)
    rng = np.random.default_rng(0)
    train = [int(i) for i in data.train]
    by_hops = {"1-hop": [i for i in train if data.questions[i].hops == 1],
               "2-hop": [i for i in train if data.questions[i].hops == 2], "mixed": train}
    out: dict = {"entities": kg.num_entities, "triples": kg.num_triples, "variant": args.variant,
                 "batch_size": args.batch_size, "steps": args.steps, "threads": torch.get_num_threads(),
                 "max_candidates": config.max_candidates}
    for name, pool in by_hops.items():
        if not pool:
            continue
        batches = [[pool[j] for j in rng.integers(len(pool), size=args.batch_size)] for _ in range(args.steps)]
        row: dict = {}
        for whole, fanout in ((True, 0), (False, 0)) + (((False, args.km_fanout),) if args.km_fanout else ()):
            model = kgqa.QuestionAnswerer(backbone)
            optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
            times, cpu, seeds = [], [], []
            for batch in batches:
                chunk = [data.questions[i] for i in batch]
                cands = [graph.candidates(q.topic, q.hops, config.max_candidates) for q in chunk]
                seeds.append(len(np.unique(np.concatenate([c for c in cands] + [[q.topic for q in chunk]]))))
                started, started_cpu = time.perf_counter(), time.process_time()
                model.train()
                config.km_fanout = fanout
                logits = kgqa.batch_logits(model, memory, graph, chunk, cands, config, whole_graph=whole,
                                           generator=np.random.default_rng(1))
                loss = sum(torch.logsumexp(x, -1) - x[0] for x in logits if len(x)) / len(chunk)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
            key = "whole_graph" if whole else (f"fanout_{fanout}" if fanout else "subgraph")
            row[f"{key}_s"] = statistics.median(times)
            row[f"{key}_cpu_s"] = statistics.median(cpu)
            row["seeds_median"] = statistics.median(seeds)
        row["speedup"] = row["whole_graph_s"] / row["subgraph_s"]
        row["speedup_cpu"] = row["whole_graph_cpu_s"] / row["subgraph_cpu_s"]
        if args.km_fanout:
            row["speedup_cpu_fanout"] = row["whole_graph_cpu_s"] / row[f"fanout_{args.km_fanout}_cpu_s"]
        config.km_fanout = 0
        first = [data.questions[i] for i in batches[0]]
        cands = [graph.candidates(q.topic, q.hops, config.max_candidates) for q in first]
        model = kgqa.QuestionAnswerer(backbone).eval()
        with torch.no_grad():
            a = kgqa.batch_logits(model, memory, graph, first, cands, config, whole_graph=True)
            b = kgqa.batch_logits(model, memory, graph, first, cands, config, whole_graph=False)
        row["max_abs_difference"] = max(float((x - y).abs().max()) for x, y in zip(a, b) if len(x))
        out[name] = row
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
