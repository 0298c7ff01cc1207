"""``jaket finetune relation-classification``, ``jaket evaluate relation-classification`` and the
arguments of ``jaket predict relation-classification``.

Data: ``--data FILE`` (FewRel JSON, :mod:`jaket.tasks.relation_classification.data`; its relations are
evaluated, ``--train-data`` gives the training relations) or a WordNet-derived set.
``finetune`` saves the model of its first run to ``OUT/model``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.kg.sources.registry import build_source
from jaket.overrides import add_config_arguments
from jaket.tasks.cli_common import csv_list, finish, seed_range, settle_precision, start_run, variants_of
from jaket.tasks.relation_classification.data import load_fewrel, merge_fewrel
from jaket.tasks.relation_classification.job import TASK, RelationClassificationConfig


def add_arguments(rc: argparse.ArgumentParser, evaluate: bool) -> None:
    """The relation-classification flags (beside the common ones of
    :func:`jaket.tasks.cli_common.add_common_arguments`); the defaults are the config's."""
    d = RelationClassificationConfig()
    rc.add_argument("--data", type=Path, metavar="FILE",
                    help="FewRel JSON file or folder: the evaluation relations (default: WordNet-derived set)")
    rc.add_argument("--train-data", type=Path, nargs="+", metavar="FILE",
                    help="FewRel JSON file(s) of the training relations; then every relation of --data is "
                         "evaluated and none may also be a training relation (default: split --data's relations)")
    rc.add_argument("--drop-overlap", action="store_true",
                    help="with --train-data: train without the relations that --data evaluates")
    rc.add_argument("--max-entities", type=int, default=3000, help="WordNet subset size (default data)")
    rc.add_argument("--settings", type=csv_list, default=tuple(f"{n}-{k}" for n, k in d.settings), help="N-K list, e.g. 5-1,5-5,10-1")
    rc.add_argument("--train-relations", type=int, default=d.num_train_relations,
                    help=f"without --train-data: the first N relations of --data train (default {d.num_train_relations})")
    rc.add_argument("--train-steps", type=int, default=d.train_steps, help=f"training episodes (default {d.train_steps})")
    rc.add_argument("--train-way", type=int, default=d.train_way,
                    help=f"relations per training episode (default {d.train_way})")
    rc.add_argument("--train-shot", type=int, default=d.train_shot,
                    help=f"supports per relation in training (default {d.train_shot})")
    rc.add_argument("--episodes", type=int, default=d.episodes,
                    help=f"evaluation episodes per setting (default {d.episodes})")
    add_config_arguments(rc)
    rc.set_defaults(func=run, evaluate=evaluate)


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


def run(args) -> int:
    """``jaket finetune|evaluate relation-classification``."""
    from jaket.tasks.relation_classification import run as rc  # the task, loaded when it runs

    device, out = start_run(args, TASK)  # device, trackers, --out checked first
    if args.train_data and args.data is None:
        raise ValueError("--train-data needs --data FILE: the evaluation relations")
    if args.drop_overlap and not args.train_data:
        raise ValueError("--drop-overlap needs --train-data FILE ...")
    if args.data is not None:
        data = load_fewrel(args.data)
    else:
        kg = build_source("wordnet", max_entities=args.max_entities, seed=0).kg
        data = rc.kg_relation_instances(kg)
    train_data = merge_fewrel([load_fewrel(p) for p in args.train_data]) if args.train_data else None
    settings = []
    for item in args.settings:
        way, _, shot = item.partition("-")
        if not (way.isdigit() and shot.isdigit() and int(way) >= 2 and int(shot) >= 1):
            raise ValueError(f"--settings: {item!r} is not N-K with N >= 2 ways and K >= 1 shots, e.g. 5-1")
        settings.append((int(way), int(shot)))
    config = RelationClassificationConfig(
        variants=variants_of(args, TASK), settings=tuple(settings),
        seeds=seed_range(args.seeds, args.first_seed), num_train_relations=args.train_relations,
        drop_overlap=args.drop_overlap, train_steps=args.train_steps, train_way=args.train_way,
        train_shot=args.train_shot, episodes=args.episodes, encoder=args.encoder, pretrained=args.model,
        bf16=settle_precision(args))
    results = rc.run_relation_classification(data, config, out, train_data=train_data,
                                             save_dir=None if args.evaluate else out / "model", device=device,
                                             log_with=args.log_with)
    return finish(args.json, results, rc.results_table(results), out, args.task, "--support FILE --queries FILE")
