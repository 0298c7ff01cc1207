"""``jaket pretrain``: YAML config + ``--set key=value`` overrides; no arguments = embedded default."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaket.train.config import dump_config, load_config


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pretrain", help="pre-train JAKET (four self-supervised tasks)",
        description="Pre-train JAKET. Without arguments: the embedded default (WordNet subset of "
                    "about 10,000 entities, bundled MiniLM, <= 10 minutes on 2 CPU cores). "
                    "Under torchrun every rank trains; rank 0 writes.")
    parser.add_argument("--config", type=Path, help="YAML config (see configs/pretrain-default.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set steps=100 --set optim.lm_lr=1e-5")
    parser.add_argument("--out", type=Path, default=Path("runs/pretrain"), help="output directory")
    parser.add_argument("--steps", type=int, help="shortcut for --set steps=N")
    parser.add_argument("--seed", type=int, help="shortcut for --set seed=N")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast")
    parser.add_argument("--relation-memory", action="store_true",
                        help="use the relation memory during pre-training (paper: off)")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoints/latest")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.steps is not None:
        overrides.append(f"steps={args.steps}")
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    if args.bf16:
        overrides.append("bf16=true")
    if args.relation_memory:
        overrides.append("tasks.use_relation_memory=true")
    config = load_config(args.config, overrides)
    if args.print_config:
        print(dump_config(config), end="")
        return 0
    from jaket.train.pretrain import pretrain

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.yaml").write_text(dump_config(config), encoding="utf-8")
    summary = pretrain(config, args.out, resume=args.resume, progress=not args.no_progress)
    print(json.dumps(summary, indent=2))
    return 0
