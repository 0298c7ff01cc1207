"""``jaket finetune relation-classification``, ``jaket evaluate relation-classification`` and the
arguments of ``jaket predict relation-classification``.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`RelationClassificationJob`;
``configs/finetune-relation-classification.yaml`` lists them) < ``--set key=value`` < the dedicated
flags. Data: ``--data FILE`` (FewRel JSON, :mod:`jaket.tasks.relation_classification.data`; its
relations are evaluated, ``--train-data`` gives the training relations) or a WordNet-derived set.
``finetune`` saves the model of its first run to ``OUT/model``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import run_task
from jaket.tasks.relation_classification.job import RelationClassificationJob


def add_arguments(rc: argparse.ArgumentParser, evaluate: bool) -> None:
    """The relation-classification flags (beside the common ones of
    :func:`jaket.tasks.cli_common.add_common_arguments`); their defaults are the job's."""
    d = RelationClassificationJob()
    add_config_flags(rc, "YAML config (see configs/finetune-relation-classification.yaml)",
                     "--set train_steps=50 --set data.data=fewrel/val_wiki.json")
    rc.add_argument("--data", type=Path, metavar="FILE",
                    help="FewRel JSON file or folder: the evaluation relations (default: WordNet-derived set)")
    rc.add_argument("--train-data", type=Path, nargs="+", metavar="FILE",
                    help="FewRel JSON file(s) of the training relations; then every relation of --data is "
                         "evaluated and none may also be a training relation (default: split --data's relations)")
    rc.add_argument("--drop-overlap", action="store_true", default=None,
                    help="with --train-data: train without the relations that --data evaluates")
    rc.add_argument("--max-entities", type=int,
                    help=f"WordNet subset size of the default data (default {d.data.max_entities})")
    rc.add_argument("--settings", metavar="LIST",
                    help="N-K list, e.g. 5-1,5-5,10-1 (default "
                         f"{','.join(f'{n}-{k}' for n, k in d.settings)})")
    rc.add_argument("--train-relations", type=int, metavar="N",
                    help="without --train-data: the first N relations of --data train "
                         f"(default {d.num_train_relations})")
    rc.add_argument("--train-steps", type=int, help=f"training episodes (default {d.train_steps})")
    rc.add_argument("--train-way", type=int, help=f"relations per training episode (default {d.train_way})")
    rc.add_argument("--train-shot", type=int, help=f"supports per relation in training (default {d.train_shot})")
    rc.add_argument("--episodes", type=int, help=f"evaluation episodes per setting (default {d.episodes})")
    rc.set_defaults(func=run_task, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict relation-classification`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--support", type=Path, required=True, metavar="FILE",
                        help="support examples in FewRel's JSON format: {relation: [sentences]}, each "
                             "relation a candidate answer (docs/data.md)")
    parser.add_argument("--queries", type=Path, required=True, metavar="FILE",
                        help="sentences to classify: one JSON object {\"tokens\", \"h\", \"t\"} a line")


def predict_from_flags(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict relation-classification``: the flags as the library's typed arguments."""
    from jaket.tasks.relation_classification.finetuned import predict_rows  # the task, loaded when it runs

    return predict_rows(model, args.support, args.queries)


#: flag destination -> job key (flags given on the command line win over the file and --set; the
#: common flags' are :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`)
FLAG_KEYS = {"data": "data.data", "train_data": "data.train_data", "drop_overlap": "data.drop_overlap",
             "max_entities": "data.max_entities", "settings": "settings", "train_relations": "num_train_relations",
             "train_steps": "train_steps", "train_way": "train_way", "train_shot": "train_shot",
             "episodes": "episodes"}
