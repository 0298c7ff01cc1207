"""``jaket finetune word-in-context``, ``jaket evaluate word-in-context`` and its predict flags.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`WordInContextJob`) <
``--set key=value`` < the dedicated flags; ``--print-config`` prints the result. ``--train`` and
``--eval`` read WiC's ``*.data.txt`` (labels from the ``*.gold.txt`` beside it) or our JSONL
(:mod:`jaket.tasks.word_in_context.data`); without them the pairs are built from WordNet's own usage examples
(:func:`jaket.tasks.word_in_context.data.wordnet_pairs`: a demonstration, *not* leak-free against a model
pre-trained on those examples). The sense KG is ``--kg DIR`` or the whole of WordNet 3.0.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import add_sense_kg_argument, run_task
from jaket.tasks.word_in_context.job import WordInContextJob


def add_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The word-in-context flags (beside the common ones of :mod:`jaket.tasks.cli`)."""
    defaults = WordInContextJob()
    add_config_flags(parser, "YAML config (keys of WordInContextJob)", "--set epochs=4 --set sense_fusion=first")
    parser.add_argument("--train", type=Path, metavar="FILE",
                        help="training pairs: WiC *.data.txt (labels from the *.gold.txt beside it) or JSONL")
    parser.add_argument("--eval", type=Path, metavar="FILE", help="evaluation pairs, same formats (e.g. WiC dev)")
    add_sense_kg_argument(parser)
    parser.add_argument("--epochs", type=int, metavar="N", help=f"epochs (default {defaults.epochs})")
    parser.add_argument("--lr", type=float, metavar="LR", help=f"language-module learning rate (default {defaults.lr:g})")
    parser.add_argument("--batch-size", type=int, metavar="N", help=f"pairs per step (default {defaults.batch_size})")
    parser.add_argument("--sense-fusion", choices=("attention", "first", "none"),
                        help=f"how the KM settings fuse the target's senses (default {defaults.sense_fusion})")
    parser.set_defaults(func=run_task, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict word-in-context`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--pairs", type=Path, required=True, metavar="FILE",
                        help="pairs to judge: WiC *.data.txt or JSONL ({lemma, pos, text1, start1, end1, text2, "
                             "start2, end2}); labels, when present, are echoed")
    parser.add_argument("--gold", type=Path, metavar="FILE", help="WiC labels for --pairs (default: none)")
    add_sense_kg_argument(parser)


def predict_from_flags(finetuned, args: argparse.Namespace):
    """The rows of ``jaket predict word-in-context``."""
    # --help: the task (torch, the model) is imported when it runs
    from jaket.tasks.word_in_context.finetuned import predict_rows as rows

    return rows(finetuned, args.pairs, args.gold, args.kg)


#: flag destination -> job key (flags win over the file and --set; the common flags' are
#: :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`)
FLAG_KEYS = {"train": "data.train", "eval": "data.eval", "kg": "data.kg", "epochs": "epochs", "lr": "lr",
             "batch_size": "batch_size", "sense_fusion": "sense_fusion"}
