"""``jaket finetune entity-classification`` and ``jaket evaluate entity-classification``.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`EntityClassificationJob`;
``configs/finetune-entity-classification.yaml`` lists them) < ``--set key=value`` < the dedicated
flags. ``--train``/``--dev``/``--test`` give the user's split files (:mod:`jaket.tasks.splits`);
without them the labelled entities are split 20/20/60 at random per seed. ``finetune`` saves the
model of its first run to ``OUT/model`` for ``jaket predict entity-classification``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import positive_int
from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import float_list, run_task
from jaket.tasks.entity_classification.job import EntityClassificationJob

# ----------------------------------------------------------------------------- arguments


def add_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The entity-classification flags (beside the common ones of :mod:`jaket.tasks.cli`)."""
    defaults = EntityClassificationJob()
    data = defaults.data
    add_config_flags(parser, "YAML config (see configs/finetune-entity-classification.yaml)",
                     "--set epochs=50 --set data.kg=my_kg/")
    parser.add_argument("--kg", type=Path, metavar="DIR",
                        help="KG' folder (default: the held-out part of the WordNet subset)")
    parser.add_argument("--train", type=Path, metavar="FILE",
                        help="training entities, one id a line, or 'id<TAB>label' lines (docs/data.md); "
                             "with --dev (default: a random 20/20/60 split of the labelled entities per seed)")
    parser.add_argument("--dev", type=Path, metavar="FILE",
                        help="dev entities (select the best epoch, early stopping); same format as --train")
    parser.add_argument("--test", type=Path, metavar="FILE", help="test entities (optional); same format")
    parser.add_argument("--max-entities", type=int, metavar="N",
                        help=f"WordNet subset size of the embedded default (default {data.max_entities})")
    parser.add_argument("--heldout-fraction", type=float, metavar="F",
                        help=f"share of the WordNet subset held out as KG' (default {data.heldout_fraction})")
    parser.add_argument("--data-seed", type=int, metavar="N",
                        help=f"seed of the WordNet subset and its held-out part (default {data.data_seed})")
    parser.add_argument("--train-fractions", type=float_list, metavar="LIST",
                        help="comma list of shares of the training split to train on (default "
                             f"{','.join(f'{f:g}' for f in defaults.train_fractions)})")
    parser.add_argument("--epochs", type=int, metavar="N", help=f"training epochs (default {defaults.epochs})")
    parser.add_argument("--patience", type=int, metavar="N",
                        help="stop after N epochs without a better dev accuracy (default: no early stopping)")
    parser.add_argument("--head-lr", type=float, metavar="LR", help=f"head learning rate (default {defaults.head_lr:g})")
    parser.add_argument("--km-lr", type=float, metavar="LR",
                        help=f"knowledge-module learning rate (default {defaults.km_lr:g})")
    parser.add_argument("--dropout", type=float, metavar="P", help=f"head dropout (default {defaults.dropout:g})")
    parser.add_argument("--description-max-length", type=int, metavar="N",
                        help=f"tokens of each description read by LM1 (default {defaults.description_max_length})")
    parser.add_argument("--no-relation-memory", dest="relation_memory", action="store_const", const=False,
                        help="R = 0 in the KM (ablation; default: R from relation descriptions, as the paper)")
    parser.add_argument("--head-init", choices=("fresh", "category"),
                        help="the jaket setting's classifier: 'fresh' (the paper) or 'category' = start from the "
                             f"pre-trained category head for the categories it knows (default {defaults.head_init})")
    parser.set_defaults(relation_memory=None, func=run_task, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict entity-classification`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR",
                        help="the KG whose entities are labelled (the fine-tuning KG or another one)")
    parser.add_argument("--entities", type=Path, metavar="FILE",
                        help="entity ids to label, one a line (split-file format; default: every entity "
                             "that had no label in fine-tuning)")
    parser.add_argument("--all", action="store_true", help="label every entity of the KG")
    parser.add_argument("--top-k", type=positive_int, default=1, metavar="K",
                        help="also list the K most probable labels per entity (default 1: only the best)")


def predict_from_flags(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict entity-classification``: the flags as the library's typed arguments."""
    # --help: the model code (torch) is imported when it runs
    from jaket.tasks.entity_classification.finetuned import predict_rows as rows

    return rows(model, args.kg, args.entities, args.all, args.top_k)


#: flag destination -> job key (flags given on the command line win over the file and --set; the
#: common flags' are :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`)
FLAG_KEYS = {"kg": "data.kg", "train": "data.train", "dev": "data.dev", "test": "data.test",
             "max_entities": "data.max_entities", "heldout_fraction": "data.heldout_fraction",
             "data_seed": "data.data_seed", "train_fractions": "train_fractions", "epochs": "epochs",
             "patience": "patience", "head_lr": "head_lr", "km_lr": "km_lr", "dropout": "dropout",
             "relation_memory": "relation_memory", "description_max_length": "description_max_length",
             "head_init": "head_init"}
