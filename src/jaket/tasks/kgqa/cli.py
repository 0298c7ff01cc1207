"""``jaket finetune kgqa``, ``jaket evaluate kgqa`` and the arguments of ``jaket predict kgqa``.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`KGQAJob`;
``configs/finetune-kgqa.yaml`` lists them) < ``--set key=value`` < the dedicated flags. Data:
``--metaqa DIR`` (a MetaQA-format folder, :mod:`jaket.tasks.kgqa.data`) or templated questions over
a WordNet subset. ``finetune`` saves the model of its first run to ``OUT/model``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import positive_int
from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import csv_list, run_task
from jaket.tasks.kgqa.job import KGQAJob


def _hop_list(text: str) -> tuple[int, ...]:
    """``--hops 1,2`` -> ``(1, 2)`` (``argparse``'s error names the flag when one is not a number)."""
    try:
        return tuple(int(x) for x in csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of hop counts, got {text!r}") from None


def add_arguments(qa: argparse.ArgumentParser, evaluate: bool) -> None:
    """The KGQA flags (beside the common ones of :func:`jaket.tasks.cli_common.add_common_arguments`)."""
    d = KGQAJob()
    data = d.data
    add_config_flags(qa, "YAML config (see configs/finetune-kgqa.yaml)", "--set steps=100 --set data.hops=[1]")
    qa.add_argument("--metaqa", type=Path, metavar="DIR",
                    help="a MetaQA-format folder: kb.txt and {1,2}-hop/qa_SPLIT.txt (default: templated "
                         "questions over a WordNet subset)")
    qa.add_argument("--train-split", metavar="NAME",
                    help=f"MetaQA split whose questions train and select the model (default {data.train_split})")
    qa.add_argument("--eval-split", metavar="NAME",
                    help="MetaQA split that is only evaluated, e.g. test (default: none; --test-fraction of "
                         "the train split is held out as the test part)")
    qa.add_argument("--hops", type=_hop_list, metavar="LIST",
                    help=f"MetaQA hop counts to read (default {','.join(map(str, data.hops))})")
    qa.add_argument("--selection-fraction", type=float, metavar="F",
                    help=f"share of the train split held out for model selection (default {data.selection_fraction})")
    qa.add_argument("--test-fraction", type=float, metavar="F",
                    help=f"without --eval-split: share of the train split held out as test "
                         f"(default {data.test_fraction})")
    qa.add_argument("--split-seed", type=int, metavar="N",
                    help="seed of the MetaQA question split, the same for every training seed "
                         f"(default {data.split_seed})")
    qa.add_argument("--max-entities", type=int, metavar="N", help=f"WordNet subset size (default {data.max_entities})")
    qa.add_argument("--max-questions", type=int, metavar="N", help=f"WordNet questions (default {data.max_questions})")
    qa.add_argument("--kg-settings", type=csv_list, metavar="LIST",
                    help="full (every triple) and/or 50%% (each triple dropped with p = 0.5, seeded) "
                         f"(default {','.join(d.kg_settings)})")
    qa.add_argument("--steps", type=int, help=f"training steps (default {d.steps})")
    qa.add_argument("--batch-size", type=int, help=f"questions per step (default {d.batch_size})")
    qa.add_argument("--lr", type=float, help=f"LM2 learning rate (default {d.lr:g})")
    qa.add_argument("--head-lr", type=float, help=f"fusion and projections learning rate (default {d.head_lr:g})")
    qa.add_argument("--km-lr", type=float, help=f"knowledge-module learning rate (default {d.km_lr:g})")
    qa.add_argument("--max-candidates", type=int,
                    help=f"candidates per question, nearest hops first (default {d.max_candidates})")
    qa.add_argument("--km-fanout", type=int, metavar="N",
                    help="training only: sample at most N in-edges per node and hop of each step's KM subgraph "
                         f"(faster next to hubs, not exact); 0 = every edge (default {d.km_fanout})")
    qa.add_argument("--select-every", type=int, metavar="N",
                    help=f"Hits@1 on the selection questions every N steps, best state kept; 0 = off "
                         f"(default {d.select_every})")
    qa.add_argument("--max-selection", type=int, metavar="N",
                    help=f"selection questions read at each check (default {d.max_selection})")
    qa.add_argument("--no-relation-memory", dest="relation_memory", action="store_const", const=False,
                    help="R = 0 in the KM (ablation; default: R from relation descriptions, as the paper)")
    qa.set_defaults(relation_memory=None, func=run_task, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict kgqa`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--questions", type=Path, required=True, metavar="FILE",
                        help="one question a line with its topic entity in brackets, 'who directed [Kismet]', "
                             "optionally <TAB>gold|answers (MetaQA format, docs/data.md)")
    parser.add_argument("--kg", type=Path, metavar="DIR",
                        help="the KG to answer over (default: the model folder's kg/, the fine-tuning KG)")
    parser.add_argument("--hops", type=positive_int, metavar="K",
                        help="candidates = entities within K hops of the topic (default: the largest hop "
                             "count the model was fine-tuned on)")
    parser.add_argument("--top-k", type=positive_int, default=5, metavar="K",
                        help="answers listed per question (default 5)")


def predict_from_flags(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict kgqa``: the flags as the library's typed arguments."""
    from jaket.tasks.kgqa.finetuned import predict_rows  # the task, loaded when it runs

    return predict_rows(model, args.questions, args.kg, args.hops, args.top_k)


#: flag destination -> job key (flags given on the command line win over the file and --set; the
#: common flags' are :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`)
FLAG_KEYS = {"metaqa": "data.metaqa", "train_split": "data.train_split", "eval_split": "data.eval_split",
             "hops": "data.hops", "selection_fraction": "data.selection_fraction",
             "test_fraction": "data.test_fraction", "split_seed": "data.split_seed",
             "max_entities": "data.max_entities", "max_questions": "data.max_questions",
             "kg_settings": "kg_settings", "steps": "steps", "batch_size": "batch_size", "lr": "lr",
             "head_lr": "head_lr", "km_lr": "km_lr", "max_candidates": "max_candidates", "km_fanout": "km_fanout",
             "select_every": "select_every", "max_selection": "max_selection", "relation_memory": "relation_memory"}
