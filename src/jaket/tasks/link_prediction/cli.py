"""``jaket finetune link-prediction``, ``jaket evaluate link-prediction`` and the arguments of
``jaket predict link-prediction``.

Data: ``--data DIR`` (a WN18RR-format folder: ``train.txt``, ``valid.txt``[, ``test.txt``], the
entities described from WordNet), or ``--kg DIR`` (a KG folder whose triples are the training
split; ``--eval FILE`` gives the evaluation triples), or neither (a WordNet subset split 90/10).
``finetune`` saves the model of its first run to ``OUT/model`` for ``jaket predict link-prediction``.
``--train-encoder`` fine-tunes LM1 on the descriptions (:mod:`jaket.tasks.link_prediction.model`); without
it the description memory stays frozen (the quick default).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.overrides import add_config_arguments
from jaket.tasks.cli_common import csv_list, finish, seed_range, settle_precision, start_run, variants_of
from jaket.tasks.link_prediction.data import load_data
from jaket.tasks.link_prediction.job import OBJECTIVES, TASK, TRAIN_ENCODER_DEFAULTS, LinkPredictionConfig


def add_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The link-prediction flags (beside the common ones of :mod:`jaket.tasks.cli`)."""
    d, t = LinkPredictionConfig(), TRAIN_ENCODER_DEFAULTS
    parser.add_argument("--data", type=Path, help="a WN18RR-format folder (train.txt, valid.txt[, test.txt])")
    parser.add_argument("--kg", type=Path, help="a KG folder whose triples are the training split")
    parser.add_argument("--eval", type=Path, action="append", default=[],
                        help="evaluation file(s) in the WN18RR format (repeatable)")
    parser.add_argument("--max-entities", type=int, default=2000, help="WordNet subset size (default KG)")
    parser.add_argument("--max-train", type=int, help="use at most this many training triples (random)")
    parser.add_argument("--sample-entities", type=int, metavar="N",
                        help="with --data: a quick trial on about N entities (those of random training triples) "
                             "and the triples among them; the memory is computed for these only")
    parser.add_argument("--max-eval", type=int, help="evaluate at most this many triples per file")
    parser.add_argument("--scorers", type=csv_list,
                        help=f"comma list of distmult,transe,rotate (default {','.join(d.scorers)}; "
                             f"{','.join(t['scorers'])} with --train-encoder)")
    parser.add_argument("--steps", type=int,
                        help=f"training steps (default {d.steps}; {t['steps']} with --train-encoder)")
    parser.add_argument("--negatives", type=int, default=d.negatives,
                        help=f"shared negative entities per step, frozen mode (default {d.negatives})")
    parser.add_argument("--batch-size", type=int,
                        help=f"training triples per step (default {d.batch_size}; {t['batch_size']} with --train-encoder)")
    parser.add_argument("--fanouts", type=lambda text: tuple(int(x) for x in csv_list(text)),
                        help=f"neighbours sampled per hop in training (default {','.join(map(str, d.fanouts))}; "
                             f"{','.join(map(str, t['fanouts']))} with --train-encoder)")
    parser.add_argument("--holdout-fraction", type=float, default=0.0,
                        help="inductive split: drop training triples touching this share of eval entities")
    parser.add_argument("--description-max-length", type=int,
                        help=f"tokens of each description read by LM1 (default {d.description_max_length}; "
                             f"{t['description_max_length']} with --train-encoder)")
    parser.add_argument("--lr", type=float, default=d.lr, help=f"scorer learning rate (default {d.lr:g})")
    parser.add_argument("--km-lr", type=float, default=d.km_lr,
                        help=f"knowledge-module learning rate (default {d.km_lr:g})")
    parser.add_argument("--train-encoder", action="store_true",
                        help="fine-tune LM1 on the descriptions: contrastive loss over in-batch, self- and "
                             "queued negatives, learnable temperature (default: frozen memory)")
    parser.add_argument("--encoder-lr", type=float,
                        help=f"LM1 learning rate with --train-encoder (default {t['encoder_lr']:g})")
    parser.add_argument("--queue-batches", type=int,
                        help="previous steps whose entity vectors are extra negatives, --train-encoder "
                             f"(default {t['queue_batches']})")
    parser.add_argument("--refresh-initial", type=int,
                        help="steps before the first full memory refresh with --train-encoder (Eq. 11 "
                             f"I_init; 0 = none; default {t['refresh_initial']})")
    parser.add_argument("--objective", choices=OBJECTIVES, default=d.objective,
                        help="with --train-encoder: in-batch = the scorer's own function in a softmax over "
                             "the step's entities; contrastive = cosine InfoNCE over in-batch and queued "
                             f"candidates, learnable temperature (default {d.objective})")
    parser.add_argument("--frozen-warmup-steps", type=int, metavar="N",
                        help="with --train-encoder: N steps of the frozen mode (KM and relation map on the "
                             f"fixed memory) before LM1 joins (default {t['frozen_warmup_steps']})")
    parser.add_argument("--encoder-dropout", action="store_true",
                        help="with --train-encoder: keep LM1's dropout on while it trains (default: off, the "
                             "step's rows computed as the memory's)")
    parser.add_argument("--hard-negatives", type=int, default=d.hard_negatives, metavar="N",
                        help="with --train-encoder: N neighbours of each triple's head or tail (training "
                             f"graph) as extra negatives (default {d.hard_negatives})")
    parser.add_argument("--budget-cpu-seconds", type=float, metavar="S",
                        help="with --train-encoder: stop training after S process CPU seconds (memory fills "
                             f"included; default {t['budget_cpu_seconds']:g}; 0 = run every step)")
    parser.add_argument("--no-relation-memory", dest="relation_memory", action="store_false",
                        help="R = 0 in the KM (ablation; default: R from relation descriptions, as the paper)")
    add_config_arguments(parser)
    parser.set_defaults(func=run, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict link-prediction`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR",
                        help="the KG whose entities are ranked and whose triples the KM reads")
    parser.add_argument("--queries", type=Path, required=True, metavar="FILE",
                        help="one query a line: head<TAB>relation<TAB>? or ?<TAB>relation<TAB>tail (docs/data.md)")
    parser.add_argument("--top-k", type=int, default=10, metavar="K", help="answers per query (default 10)")
    parser.add_argument("--exclude-known", action="store_true",
                        help="leave out answers whose triple is already in the KG")


def predict_from_flags(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict link-prediction``: the flags as the library's typed arguments."""
    # --help: the model code (torch) is imported when it runs
    from jaket.tasks.link_prediction.finetuned import predict_rows as rows

    return rows(model, args.kg, args.queries, args.top_k, args.exclude_known)


def mode_defaults(args: argparse.Namespace) -> None:
    """Fill the flags left unset with the frozen mode's defaults or, with ``--train-encoder``, those
    of :data:`jaket.tasks.link_prediction.job.TRAIN_ENCODER_DEFAULTS` (``--budget-cpu-seconds 0``
    means no budget)."""
    defaults = TRAIN_ENCODER_DEFAULTS if args.train_encoder else vars(LinkPredictionConfig())
    if args.objective != "in-batch" and args.frozen_warmup_steps is None:
        defaults = {**defaults, "frozen_warmup_steps": 0}  # the warm-up trains the in-batch objective's scorer
    for key in TRAIN_ENCODER_DEFAULTS:  # the flags whose default depends on the mode
        if getattr(args, key) is None:
            setattr(args, key, defaults[key])
    if args.budget_cpu_seconds == 0:
        args.budget_cpu_seconds = None


def run(args: argparse.Namespace) -> int:
    """``jaket finetune|evaluate link-prediction``."""
    from jaket.tasks.link_prediction import run as lp  # the task, loaded when it runs

    device, out = start_run(args, TASK)  # device, trackers and --out checked before any work
    kg, train, evaluation = load_data(args.data, args.kg, args.eval, max_entities=args.max_entities,
                                      max_train=args.max_train, sample_count=getattr(args, "sample_entities", None))
    mode_defaults(args)
    config = LinkPredictionConfig(
        variants=variants_of(args, TASK), scorers=args.scorers, seeds=seed_range(args.seeds, args.first_seed),
        steps=args.steps, negatives=args.negatives, batch_size=args.batch_size, fanouts=args.fanouts,
        max_eval_triples=args.max_eval, holdout_fraction=args.holdout_fraction, encoder=args.encoder,
        pretrained=args.model, km_layers=args.km_layers, km_heads=args.km_heads,
        relation_memory=args.relation_memory, description_max_length=args.description_max_length,
        lr=args.lr, km_lr=args.km_lr, train_encoder=args.train_encoder, encoder_lr=args.encoder_lr,
        queue_batches=args.queue_batches, refresh_initial=args.refresh_initial,
        budget_cpu_seconds=args.budget_cpu_seconds, hard_negatives=args.hard_negatives, objective=args.objective,
        frozen_warmup_steps=args.frozen_warmup_steps, encoder_dropout=args.encoder_dropout,
        bf16=settle_precision(args))
    save_dir = None if args.evaluate else out / "model"
    results = lp.run_link_prediction(kg, train, evaluation, config, out, save_dir=save_dir, device=device,
                                     log_with=args.log_with)
    return finish(args.json, results, lp.results_table(results), out, TASK, "--kg KG --queries FILE")
