"""``jaket finetune kgqa``, ``jaket evaluate kgqa`` and the arguments of ``jaket predict kgqa``.

Data: ``--metaqa DIR`` (a MetaQA-format folder, :mod:`jaket.tasks.kgqa.data`) or templated
questions over a WordNet subset. ``finetune`` saves the model of its first run to ``OUT/model``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from jaket.kg.sources.registry import build_source
from jaket.overrides import add_config_arguments
from jaket.tasks.cli_common import (add_relation_memory_argument, csv_list, finish, seed_range, settle_precision,
                                    start_run, variants_of)
from jaket.tasks.kgqa.data import load_metaqa_task
from jaket.tasks.kgqa.job import TASK, KGQAConfig

logger = logging.getLogger(__name__)


def add_arguments(qa: argparse.ArgumentParser, evaluate: bool) -> None:
    """The KGQA flags (beside the common ones of :func:`jaket.tasks.cli_common.add_common_arguments`)."""
    d = KGQAConfig()
    qa.add_argument("--metaqa", type=Path, metavar="DIR",
                    help="a MetaQA-format folder: kb.txt and {1,2}-hop/qa_SPLIT.txt (default: templated "
                         "questions over a WordNet subset)")
    qa.add_argument("--train-split", default="dev", metavar="NAME",
                    help="MetaQA split whose questions train and select the model (default dev)")
    qa.add_argument("--eval-split", metavar="NAME",
                    help="MetaQA split that is only evaluated, e.g. test (default: none; --test-fraction of "
                         "the train split is held out as the test part)")
    qa.add_argument("--hops", type=lambda t: tuple(int(x) for x in csv_list(t)), default=(1, 2), metavar="LIST",
                    help="MetaQA hop counts to read (default 1,2)")
    qa.add_argument("--selection-fraction", type=float, default=0.1, metavar="F",
                    help="share of the train split held out for model selection (default 0.1)")
    qa.add_argument("--test-fraction", type=float, default=0.3, metavar="F",
                    help="without --eval-split: share of the train split held out as test (default 0.3)")
    qa.add_argument("--split-seed", type=int, default=0, metavar="N",
                    help="seed of the MetaQA question split, the same for every training seed (default 0)")
    qa.add_argument("--max-entities", type=int, default=2000, metavar="N", help="WordNet subset size (default KG)")
    qa.add_argument("--max-questions", type=int, default=1500, metavar="N", help="WordNet questions (default KG)")
    qa.add_argument("--kg-settings", type=csv_list, default=("full", "50%"), metavar="LIST",
                    help="full (every triple) and/or 50%% (each triple dropped with p = 0.5, seeded)")
    qa.add_argument("--steps", type=int, default=d.steps, help=f"training steps (default {d.steps})")
    qa.add_argument("--batch-size", type=int, default=d.batch_size, help=f"questions per step (default {d.batch_size})")
    qa.add_argument("--lr", type=float, default=d.lr, help=f"LM2 learning rate (default {d.lr:g})")
    qa.add_argument("--head-lr", type=float, default=d.head_lr,
                    help=f"fusion and projections learning rate (default {d.head_lr:g})")
    qa.add_argument("--km-lr", type=float, default=d.km_lr, help=f"knowledge-module learning rate (default {d.km_lr:g})")
    qa.add_argument("--max-candidates", type=int, default=d.max_candidates,
                    help=f"candidates per question, nearest hops first (default {d.max_candidates})")
    qa.add_argument("--km-fanout", type=int, default=d.km_fanout, metavar="N",
                    help="training only: sample at most N in-edges per node and hop of each step's KM subgraph "
                         "(faster next to hubs, not exact); 0 = every edge (default)")
    qa.add_argument("--select-every", type=int, default=d.select_every, metavar="N",
                    help=f"Hits@1 on the selection questions every N steps, best state kept; 0 = off "
                         f"(default {d.select_every})")
    qa.add_argument("--max-selection", type=int, default=d.max_selection, metavar="N",
                    help=f"selection questions read at each check (default {d.max_selection})")
    add_relation_memory_argument(qa)
    add_config_arguments(qa)
    qa.set_defaults(func=run, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict kgqa`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--questions", type=Path, required=True, metavar="FILE",
                        help="one question a line with its topic entity in brackets, 'who directed [Kismet]', "
                             "optionally <TAB>gold|answers (MetaQA format, docs/data.md)")
    parser.add_argument("--kg", type=Path, metavar="DIR",
                        help="the KG to answer over (default: the model folder's kg/, the fine-tuning KG)")
    parser.add_argument("--hops", type=int, metavar="K",
                        help="candidates = entities within K hops of the topic (default: the largest hop "
                             "count the model was fine-tuned on)")
    parser.add_argument("--top-k", type=int, default=5, metavar="K", help="answers listed per question (default 5)")


def predict_from_flags(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict kgqa``: the flags as the library's typed arguments."""
    from jaket.tasks.kgqa.finetuned import predict_rows  # the task, loaded when it runs

    return predict_rows(model, args.questions, args.kg, args.hops, args.top_k)


def run(args) -> int:
    """``jaket finetune|evaluate kgqa``."""
    from jaket.tasks.kgqa import run as kgqa  # the task, loaded when it runs

    device, out = start_run(args, TASK)  # device, trackers and --out checked before any work
    splits = info = None
    if args.metaqa is not None:
        data = load_metaqa_task(args.metaqa, args.train_split, args.eval_split, args.hops,
                                args.selection_fraction, args.test_fraction, args.split_seed)
        for split, skipped in data.info["skipped"].items():
            if skipped:
                logger.warning("%s: %d %s questions skipped (topic or every answer not in kb.txt)",
                               args.metaqa, skipped, split)
        kg, questions, splits, info = data.kg, data.questions, (data.train, data.selection, data.test), data.info
    else:
        kg = build_source("wordnet", max_entities=args.max_entities, seed=0).kg
        questions = kgqa.wordnet_questions(kg, seed=0, max_questions=args.max_questions)
    config = KGQAConfig(variants=variants_of(args, TASK), kg_settings=args.kg_settings,
                             seeds=seed_range(args.seeds, args.first_seed), steps=args.steps, batch_size=args.batch_size,
                             lr=args.lr, head_lr=args.head_lr, km_lr=args.km_lr,
                             max_candidates=args.max_candidates, km_fanout=args.km_fanout,
                             select_every=args.select_every,
                             max_selection=args.max_selection, encoder=args.encoder,
                             pretrained=args.model, km_layers=args.km_layers, km_heads=args.km_heads,
                             relation_memory=args.relation_memory, bf16=settle_precision(args))
    results = kgqa.run_kgqa(kg, questions, config, out, splits=splits, data_info=info,
                            save_dir=None if args.evaluate else out / "model", device=device,
                            log_with=args.log_with)
    return finish(args.json, results, kgqa.results_table(results), out, args.task, "--questions FILE")
