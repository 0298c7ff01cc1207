"""``jaket pretrain``: YAML config + ``--set key=value`` overrides; no arguments = embedded default.

A thin layer over :func:`jaket.pretrain`: the command turns its flags into that function's arguments
(:func:`_job`), which builds and checks the typed :class:`jaket.train.config.PretrainConfig`
(:func:`jaket.train.job.pretraining_config`); nothing below it sees the argparse namespace.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from jaket.flags import add_device_argument, add_precision_argument, deprecated_alias, positive_int
from jaket.output import print_json
from jaket.overrides import add_config_flags
from jaket.train.config import dump_config
from jaket.train.job import pretraining_config

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pretrain", help="pre-train JAKET (four self-supervised tasks)",
        description="Pre-train JAKET. Without arguments: the embedded default (WordNet subset of "
                    "10,000 entities and their usage examples, bundled MiniLM, 120 steps: 2-3 minutes "
                    "on 2 idle CPU cores). Under torchrun every rank trains on its share; rank 0 writes.")
    add_config_flags(parser, "YAML config (see configs/pretrain-default.yaml)",
                     "--set steps=100 --set optim.lm_lr=1e-5")
    parser.add_argument("--kg", type=Path, metavar="DIR",
                        help="a KG directory (jaket.kg.io format; without corpus.jsonl the KG tasks only): "
                             "data.source=dir")
    parser.add_argument("--corpus", type=Path, metavar="FILE",
                        help="a mention corpus (JSONL) used instead of the KG's own texts: data.corpus")
    parser.add_argument("--exclude-texts", nargs="+", metavar="FILE",
                        help="drop every corpus text matching a sentence of these files (a benchmark's "
                             "train/dev/test: WiC *.data.txt, a WSD framework *.data.xml, JSONL or one sentence a "
                             "line): data.exclude_texts")
    parser.add_argument("--encoder", metavar="PATH",
                        help="any local Hugging Face masked-LM folder as the language module: "
                             "model.encoder (default: the bundled MiniLM)")
    parser.add_argument("--init", metavar="MODEL",
                        help="continue pre-training from a jaket model folder (its encoder, KM, fusion "
                             "and heads; heads that do not fit the KG start fresh): init")
    deprecated_alias(parser, "--model", "--encoder")  # --model is a jaket folder elsewhere (docs/cli.md)
    parser.add_argument("--out", type=Path, default=Path("runs/pretrain"), metavar="DIR",
                        help="output directory: the model goes to DIR/model (default: runs/pretrain)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout, alone (everything else goes to stderr)")
    parser.add_argument("--steps", type=int, metavar="N", help="optimizer steps: shortcut for --set steps=N")
    parser.add_argument("--description-max-length", type=positive_int, metavar="N",
                        help="tokens of an entity description LM1 reads for the memory (Eq. 7), as in "
                             "finetune: shortcut for --set model.description_max_length=N")
    parser.add_argument("--seed", type=int, metavar="N", help="the run's seed: shortcut for --set seed=N")
    add_precision_argument(parser, default_help="the config's mixed_precision")
    parser.add_argument("--no-cache", action="store_true",
                        help="compute the memory's first fill even when the description-row cache holds it "
                             "(memory.cache=false; the cache is keyed by LM1's weights, the KG, the window and "
                             "the precision: $JAKET_CACHE/memory, default ~/.cache/jaket)")
    parser.add_argument("--relation-memory", action="store_true",
                        help="use the relation context memory during pre-training "
                             "(model.use_relation_memory=true; paper: off)")
    parser.add_argument("--resume", nargs="?", const="require", type=_resume, metavar="auto",
                        help="continue from the newest intact checkpoint in OUT/checkpoints (an "
                             "error when there is none), with the run's own settings (OUT/config.yaml) "
                             "unless --config is given; --resume=auto starts afresh when there is "
                             "none (for a job that a scheduler may restart)")
    parser.add_argument("--overwrite", action="store_true",
                        help="start afresh even though OUT holds an earlier run (its metrics and "
                             "checkpoints are removed); without it such a start is refused")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_device_argument(parser)
    parser.set_defaults(func=_run)


def _resume(text: str) -> str:
    if text not in ("auto", "require"):  # argparse passes the const ("require") through here too
        raise argparse.ArgumentTypeError(f"--resume takes no value or 'auto' (--resume=auto), not {text!r}")
    return text


def _settings(args: argparse.Namespace) -> dict:
    """The settings the dedicated flags give (``--steps N`` is ``steps: N``, ...)."""
    values: dict = {}
    if args.exclude_texts:
        values["data.exclude_texts"] = [str(f) for f in args.exclude_texts]
    if args.steps is not None:
        values["steps"] = args.steps
    if args.seed is not None:
        values["seed"] = args.seed
    if args.relation_memory:
        values["model.use_relation_memory"] = True
    if args.no_cache:
        values["memory.cache"] = False
    if args.description_max_length is not None:
        values["model.description_max_length"] = args.description_max_length
    return values


def _job(args: argparse.Namespace) -> dict:
    """The arguments of :func:`jaket.pretrain` the flags give, but for its settings (:func:`_settings`):
    the command adds nothing to the job."""
    return {"config": args.config, "overrides": list(args.overrides), "kg": args.kg, "corpus": args.corpus,
            "encoder": args.encoder, "init": args.init, "resume": args.resume or False, "overwrite": args.overwrite,
            "precision": args.precision, "device": args.device}


def config_from_args(args: argparse.Namespace):
    """The typed config the flags describe (:func:`jaket.train.job.pretraining_config`, the one that
    :func:`jaket.pretrain` builds), the KG and corpus paths unchecked (``--print-config``)."""
    return pretraining_config(args.out, **_job(args), settings=_settings(args), check_inputs=False)


def _run(args: argparse.Namespace) -> int:
    if args.print_config:
        print(dump_config(config_from_args(args)), end="")
        return 0
    from jaket.api import pretrain  # the model (torch_geometric), loaded when the command runs

    summary = pretrain(args.out, progress=not args.no_progress, **_job(args), **_settings(args))
    if int(os.environ.get("RANK", "0")) == 0:
        print_json(summary)
        print(f"pre-trained model: {args.out / 'model'}  (jaket finetune TASK --model {args.out / 'model'})",
              file=sys.stderr)
    return 0
