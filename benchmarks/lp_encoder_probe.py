"""Where `link-prediction --train-encoder` goes on WN18RR, read mid-run: filtered MRR and Hits@10 of
a fixed sample of valid triples on the memory just recomputed, after the frozen warm-up (step 0)
and after every Eq. 11 refresh (the only points where every memory row comes from the current
LM1, so the figure is the evaluation's, on a sample).

    OMP_NUM_THREADS=1 python -m benchmarks.lp_encoder_probe --data ../shared/data/wn18rr \\
        --set objective=in-batch --set frozen_warmup_steps=300 --budget 1500 --sample 400

``--set KEY=VALUE`` sets any :class:`jaket.tasks.settings.LinkPredictionConfig` field on top of
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
from jaket.tasks import link_training
from jaket.tasks.settings import TRAIN_ENCODER_DEFAULTS, LinkPredictionConfig
from jaket.tasks.variants import full_graph, load_backbone


def _value(field: dataclasses.Field, text: str):
    default = LinkPredictionConfig.__dataclass_fields__[field.name].default
    if isinstance(default, bool):
        return text.lower() in ("1", "true", "yes")
    if isinstance(default, tuple):
        return tuple(int(x) for x in text.split(","))
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return type(default)(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a WN18RR-format folder")
    parser.add_argument("--model", type=Path, help="a jaket model folder (setting jaket; default lm+g+m)")
    parser.add_argument("--variant", default=None, help="lm, lm+g+m or jaket")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--budget", type=float, default=600.0, help="training CPU seconds (default 600)")
    parser.add_argument("--sample", type=int, default=400, help="valid triples probed (default 400)")
    args = parser.parse_args(argv)
    fields = {f.name: f for f in dataclasses.fields(LinkPredictionConfig)}
    settings = dict(TRAIN_ENCODER_DEFAULTS, budget_cpu_seconds=args.budget, train_encoder=True, bf16=True)
    for item in args.set:
        key, _, text = item.partition("=")
        if key not in fields:
            raise SystemExit(f"--set {item}: no such setting")
        settings[key] = _value(fields[key], text)
    variant = args.variant or ("jaket" if args.model else "lm+g+m")
    config = LinkPredictionConfig(variants=(variant,), pretrained=args.model, **settings)
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
        ranks = np.concatenate([tails, heads])
        row = {"step": step, "cpu_seconds": round(time.process_time() - began), "mrr": round(float(np.mean(1 / ranks)), 4),
               "hits@10": round(float(np.mean(ranks <= 10)), 4)}
        print(json.dumps(row), flush=True)
        return row

    losses, record, final = link_training.train_with_encoder(model, backbone, graph, train, config, 0,
                                                             on_refresh=probe)
    last = probe(len(losses), final)
    print(json.dumps({"final": last, "steps": len(losses), "config": {k: settings[k] for k in sorted(settings)},
                      "variant": variant}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
