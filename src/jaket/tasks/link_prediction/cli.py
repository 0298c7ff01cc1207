"""``jaket finetune link-prediction``, ``jaket evaluate link-prediction`` and the arguments of
``jaket predict link-prediction``.

Settings come from the defaults < ``--config FILE`` (YAML, keys of
:class:`~jaket.tasks.link_prediction.job.LinkPredictionJob`; ``configs/finetune-link-prediction.yaml``
lists them) < ``--set key=value`` < the dedicated flags; the keys whose default depends on the mode
(``--train-encoder`` or not) are resolved once, in the job (``--print-config`` shows them resolved).
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

from jaket.flags import positive_int
from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import csv_list, run_task
from jaket.tasks.link_prediction.job import OBJECTIVES, TRAIN_ENCODER_DEFAULTS, LinkPredictionJob


def add_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The link-prediction flags (beside the common ones of :mod:`jaket.tasks.cli`)."""
    add_config_flags(parser, "YAML config (see configs/finetune-link-prediction.yaml)",
                     "--set steps=600 --set data.sample_entities=3000")
    _add_data_arguments(parser)
    _add_training_arguments(parser)
    parser.set_defaults(func=run_task, evaluate=evaluate)


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    data = LinkPredictionJob().data
    parser.add_argument("--data", type=Path, help="a WN18RR-format folder (train.txt, valid.txt[, test.txt])")
    parser.add_argument("--kg", type=Path, help="a KG folder whose triples are the training split")
    parser.add_argument("--eval", type=Path, action="append",
                        help="evaluation file(s) in the WN18RR format (repeatable)")
    parser.add_argument("--max-entities", type=int,
                        help=f"WordNet subset size (default KG; default {data.max_entities})")
    parser.add_argument("--max-train", type=int, help="use at most this many training triples (random)")
    parser.add_argument("--sample-entities", type=int, metavar="N",
                        help="with --data: a quick trial on about N entities (those of random training triples) "
                             "and the triples among them; the memory is computed for these only")
    parser.add_argument("--max-eval", type=int, help="evaluate at most this many triples per file")


def _add_training_arguments(parser: argparse.ArgumentParser) -> None:
    d, t = LinkPredictionJob().resolved(), TRAIN_ENCODER_DEFAULTS

    def mode(key: str, text: str) -> str:  # a default that depends on --train-encoder
        shown = lambda v: ",".join(map(str, v)) if isinstance(v, tuple) else f"{v:g}"  # noqa: E731
        return f"{text} (default {shown(getattr(d, key))}; {shown(t[key])} with --train-encoder)"

    parser.add_argument("--scorers", type=csv_list, help=mode("scorers", "comma list of distmult,transe,rotate"))
    parser.add_argument("--steps", type=int, help=mode("steps", "training steps"))
    parser.add_argument("--negatives", type=int,
                        help=f"shared negative entities per step, frozen mode (default {d.negatives})")
    parser.add_argument("--batch-size", type=int, help=mode("batch_size", "training triples per step"))
    parser.add_argument("--fanouts", type=lambda text: tuple(int(x) for x in csv_list(text)),
                        help=mode("fanouts", "neighbours sampled per hop in training"))
    parser.add_argument("--holdout-fraction", type=float,
                        help="inductive split: drop training triples touching this share of eval entities")
    parser.add_argument("--description-max-length", type=int,
                        help=mode("description_max_length", "tokens of each description read by LM1"))
    parser.add_argument("--lr", type=float, help=f"scorer learning rate (default {d.lr:g})")
    parser.add_argument("--km-lr", type=float, help=f"knowledge-module learning rate (default {d.km_lr:g})")
    parser.add_argument("--train-encoder", action="store_const", const=True,
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
    parser.add_argument("--objective", choices=OBJECTIVES,
                        help="with --train-encoder: in-batch = the scorer's own function in a softmax over "
                             "the step's entities; contrastive = cosine InfoNCE over in-batch and queued "
                             f"candidates, learnable temperature (default {d.objective})")
    parser.add_argument("--frozen-warmup-steps", type=int, metavar="N",
                        help="with --train-encoder: N steps of the frozen mode (KM and relation map on the "
                             f"fixed memory) before LM1 joins (default {t['frozen_warmup_steps']}; 0 with "
                             "the contrastive objective)")
    parser.add_argument("--encoder-dropout", action="store_const", const=True,
                        help="with --train-encoder: keep LM1's dropout on while it trains (default: off, the "
                             "step's rows computed as the memory's)")
    parser.add_argument("--hard-negatives", type=int, metavar="N",
                        help="with --train-encoder: N neighbours of each triple's head or tail (training "
                             f"graph) as extra negatives (default {d.hard_negatives})")
    parser.add_argument("--budget-cpu-seconds", type=float, metavar="S",
                        help="with --train-encoder: stop training after S process CPU seconds (memory fills "
                             f"included; default {t['budget_cpu_seconds']:g}; 0 = run every step)")
    parser.add_argument("--no-relation-memory", dest="relation_memory", action="store_const", const=False,
                        help="R = 0 in the KM (ablation; default: R from relation descriptions, as the paper)")


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict link-prediction`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR",
                        help="the KG whose entities are ranked and whose triples the KM reads")
    parser.add_argument("--queries", type=Path, required=True, metavar="FILE",
                        help="one query a line: head<TAB>relation<TAB>? or ?<TAB>relation<TAB>tail (docs/data.md)")
    parser.add_argument("--top-k", type=positive_int, default=10, metavar="K", help="answers per query (default 10)")
    parser.add_argument("--exclude-known", action="store_true",
                        help="leave out answers whose triple is already in the KG")


def predict_from_flags(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict link-prediction``: the flags as the library's typed arguments."""
    # --help: the model code (torch) is imported when it runs
    from jaket.tasks.link_prediction.finetuned import predict_rows as rows

    return rows(model, args.kg, args.queries, args.top_k, args.exclude_known)


#: flag destination -> job key (flags given on the command line win over the file and --set; the
#: common flags' are :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`)
FLAG_KEYS = {"data": "data.data", "kg": "data.kg", "eval": "data.eval", "max_entities": "data.max_entities",
             "max_train": "data.max_train", "sample_entities": "data.sample_entities",
             "max_eval": "max_eval_triples", **{key: key for key in (
                 "scorers", "steps", "negatives", "batch_size", "fanouts", "holdout_fraction",
                 "description_max_length", "lr", "km_lr", "train_encoder", "encoder_lr", "queue_batches",
                 "refresh_initial", "objective", "frozen_warmup_steps", "encoder_dropout", "hard_negatives",
                 "budget_cpu_seconds", "relation_memory")}}
