"""Where `link-prediction --train-encoder` goes on WN18RR, read mid-run: filtered MRR and Hits@10 of
a fixed sample of valid triples on the memory just recomputed, after the frozen warm-up (step 0)
and after every Eq. 11 refresh (the only points where every memory row comes from the current
LM1, so the figure is the evaluation's, on a sample).

    OMP_NUM_THREADS=1 python -m results.lp_encoder_probe --data ../shared/data/wn18rr \\
        --set objective=in-batch --set frozen_warmup_steps=300 --budget 1500 --sample 400

``--set KEY=VALUE`` sets any :class:`jaket.tasks.link_prediction.job.LinkPredictionConfig` field on top of
``--train-encoder``'s defaults (``TRAIN_ENCODER_DEFAULTS``); ``--model DIR`` a jaket model
(setting ``jaket``). Prints one JSON line per probe and the final figures of the sample.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from jaket.kg.readers import read_split
from jaket.kg.sources.wn18rr import load_wn18rr
from jaket.tasks import link_prediction as lp
from jaket.tasks import report as rep
from jaket.tasks.config import load_task_config
from jaket.tasks.link_prediction import TRAIN_ENCODER_DEFAULTS, LinkPredictionConfig
from jaket.tasks.variants import full_graph, load_backbone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a WN18RR-format folder")
    parser.add_argument("--model", type=Path, help="a jaket model folder (setting jaket; default lm+g+m)")
    parser.add_argument("--variant", default=None, help="lm, lm+g+m or jaket")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--budget", type=float, default=600.0, help="training CPU seconds (default 600)")
    parser.add_argument("--sample", type=int, default=400, help="valid triples probed (default 400)")
    args = parser.parse_args(argv)
    variant = args.variant or ("jaket" if args.model else "lm+g+m")
    # --train-encoder's defaults, then --set (parsed and checked as every task's --set)
    defaults = [f"{k}={json.dumps(v)}" for k, v in TRAIN_ENCODER_DEFAULTS.items()]
    try:
        config = load_task_config(LinkPredictionConfig, overrides=defaults + args.set, values={
            "variants": (variant,), "pretrained": args.model, "budget_cpu_seconds": args.budget,
            "train_encoder": True, "bf16": True})
    except ValueError as error:
        raise SystemExit(str(error)) from None
    kg, _ = load_wn18rr(args.data)
    train, _ = read_split(args.data / "train.txt", kg)
    valid, _ = read_split(args.data / "valid.txt", kg)
    all_true = np.concatenate([train, valid])
    sample = valid[np.random.default_rng(0).permutation(len(valid))[: args.sample]]
    graph = lp.train_view(kg, train)
    edges = full_graph(graph)
    backbone = load_backbone(config.variant_config(variant), seed=0, need_language=True)
    torch.manual_seed(0)
    model = lp.LinkScorer(backbone, config.scorers[0], kg.num_relations, metric=config.metric,
                          temperature=config.temperature)
    began = time.process_time()

    def probe(step: int, memory) -> dict:
        was = model.training
        model.eval()
        with torch.no_grad():
            tails, heads = lp.filtered_ranks(model, model.entities(memory, *edges), model.relations(memory),
                                             sample, all_true)
        model.train(was)
        metrics = rep.ranking_metrics(np.concatenate([tails, heads]), hits_at=(10,))
        row = {"step": step, "cpu_seconds": round(time.process_time() - began),
               **{k: round(metrics[k], 4) for k in ("mrr", "hits@10")}}
        print(json.dumps(row), flush=True)
        return row

    losses, record, final = lp.train_with_encoder(model, backbone, graph, train, config, 0,
                                                             on_refresh=probe)
    last = probe(len(losses), final)
    print(json.dumps({"final": last, "steps": len(losses), "config": dataclasses.asdict(config)}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
