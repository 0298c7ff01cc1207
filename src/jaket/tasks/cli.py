"""``jaket finetune TASK`` and ``jaket evaluate TASK``.

``finetune`` runs one setting (``--variant``, default ``jaket`` when ``--model`` is given, else
``lm+g+m``, ``lm`` for relation classification) and saves its model to ``OUT/model`` for
``jaket predict``; ``evaluate`` runs the paper's comparison (``--variants``, all that apply by default)
over ``--seeds`` seeds (5 by default). Both fine-tune and test, and write ``metrics.json``,
``report.md`` and PNG plots into ``--out``. Without data arguments every task runs on the
embedded default (WordNet 3.0 + the bundled MiniLM).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from jaket.kg.sources.registry import build_source
from jaket.flags import add_device_argument, add_precision_argument
from jaket.model.device import choose_precision
from jaket.overrides import add_config_arguments
from jaket.tasks.cli_common import (add_common_arguments, add_relation_memory_argument, add_sense_kg_argument,
                                    csv_list, finish, seed_range,
                                    start_run, variants_of)
from jaket.tasks.entity_classification_cli import add_arguments as add_entity_classification
from jaket.tasks.fewrel import load_fewrel, merge_fewrel
from jaket.tasks.link_prediction_cli import add_arguments as add_link_prediction
from jaket.tasks.metaqa import load_metaqa_task
from jaket.tasks.settings import KGQAConfig, RelationClassificationConfig
from jaket.tasks.word_in_context_cli import add_arguments as add_word_in_context
from jaket.tasks.wsd_cli import add_arguments as add_word_sense

logger = logging.getLogger(__name__)

TASKS = ("entity-classification", "link-prediction", "kgqa", "relation-classification", "word-in-context")


def register(subparsers: argparse._SubParsersAction) -> None:
    for command, evaluate in (("finetune", False), ("evaluate", True)):
        help_text = ("fine-tune one setting on a downstream task" if not evaluate
                     else "run the paper's comparison of settings on a downstream task")
        parser = subparsers.add_parser(command, help=help_text, description=__doc__)
        tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
        ec = tasks.add_parser("entity-classification", help="categories of an unseen KG's entities (Table 3)")
        add_common_arguments(ec, evaluate)
        add_entity_classification(ec, evaluate)  # its flags, --config/--set, user splits; func

        lp = tasks.add_parser("link-prediction", help="filtered MRR / Hits@k over descriptions + KM")
        add_common_arguments(lp, evaluate)
        add_link_prediction(lp, evaluate)  # its flags (--train-encoder, ...); func

        qa = tasks.add_parser("kgqa", help="question answering over the KG, Hits@1 (Table 2)")
        add_common_arguments(qa, evaluate)
        _add_kgqa_arguments(qa)
        qa.set_defaults(func=_run_kgqa, evaluate=evaluate)

        rc = tasks.add_parser("relation-classification", help="few-shot relation classification, PAIR (Table 1)")
        add_common_arguments(rc, evaluate)
        _add_relation_classification_arguments(rc)
        rc.set_defaults(func=_run_relation_classification, evaluate=evaluate)

        wic = tasks.add_parser("word-in-context",
                               help="does a target word mean the same in two texts? (WiC; senses from the KG)")
        add_common_arguments(wic, evaluate)
        add_word_in_context(wic, evaluate)  # its flags, --config/--set; func
        if evaluate:
            sl = tasks.add_parser("sense-linking", help="choose a word's WordNet sense in context (WSD) on "
                                                        "held-out linked texts of a pre-training run")
            _add_sense_linking_arguments(sl)
            wsd = tasks.add_parser("word-sense-disambiguation",
                                   help="all-words WSD in the unified framework (SemEval-2007 ...): every scorer "
                                        "of a word's WordNet senses on the same targets, F1")
            add_common_arguments(wsd, evaluate)
            add_word_sense(wsd)  # its flags, --config/--set; func


def _add_kgqa_arguments(qa: argparse.ArgumentParser) -> None:
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


def _add_relation_classification_arguments(rc: argparse.ArgumentParser) -> None:
    rc.add_argument("--data", type=Path, metavar="FILE",
                    help="FewRel JSON file or folder: the evaluation relations (default: WordNet-derived set)")
    rc.add_argument("--train-data", type=Path, nargs="+", metavar="FILE",
                    help="FewRel JSON file(s) of the training relations; then every relation of --data is "
                         "evaluated and none may also be a training relation (default: split --data's relations)")
    rc.add_argument("--drop-overlap", action="store_true",
                    help="with --train-data: train without the relations that --data evaluates")
    rc.add_argument("--max-entities", type=int, default=3000, help="WordNet subset size (default data)")
    rc.add_argument("--settings", type=csv_list, default=("5-1", "5-5"), help="N-K list, e.g. 5-1,5-5,10-1")
    rc.add_argument("--train-relations", type=int, default=3,
                    help="without --train-data: the first N relations of --data train (default 3)")
    rc.add_argument("--train-steps", type=int, default=150, help="training episodes (default 150)")
    rc.add_argument("--train-way", type=int, default=3, help="relations per training episode (default 3)")
    rc.add_argument("--train-shot", type=int, default=1, help="supports per relation in training (default 1)")
    rc.add_argument("--episodes", type=int, default=1000, help="evaluation episodes per setting (default 1000)")
    add_precision_argument(rc)
    add_config_arguments(rc)


def _add_sense_linking_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, help="jointly pre-trained model folder (the 'jaket' scorers)")
    parser.add_argument("--encoder", type=Path, help="base Hugging Face encoder (default: bundled MiniLM)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--heldout-of", type=Path, metavar="RUN",
                        help="a pre-training run folder: its held-out linked texts (rebuilt from RUN/config.yaml) "
                             "are the examples")
    source.add_argument("--unseen-of", type=Path, metavar="DATA",
                        help="a 'jaket prepare wordnet-reference' folder: the texts of its unseen KG' (DATA/kg-unseen), "
                             "which pre-training never saw, are the examples")
    parser.add_argument("--unseen-candidates-only", action="store_true",
                        help="with --unseen-of: a word's candidates are its KG' senses only (a KG never seen at all)")
    add_sense_kg_argument(parser)
    parser.add_argument("--max-examples", type=int, metavar="N", help="use the first N examples only")
    parser.add_argument("--seeds", type=int, default=3, help="fresh KMs of the lm+g+m scorer (default 3)")
    parser.add_argument("--no-baselines", dest="baselines", action="store_false",
                        help="only the first-sense, random and --model scorers (to compare pre-trained models)")
    parser.add_argument("--out", type=Path, help="output folder (default runs/sense-linking)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of an earlier run in --out (refused otherwise)")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON on stdout (alone)")
    add_device_argument(parser)
    add_config_arguments(parser)
    parser.set_defaults(func=_run_sense_linking)


def _run_sense_linking(args) -> int:
    from jaket.tasks import sense_linking as sl  # the task, loaded when it runs
    from jaket.tasks.wic_data import SenseInventory
    from jaket.tasks.word_in_context_predict import load_sense_kg

    device, out = start_run(args, "sense-linking")
    kg = load_sense_kg(args.kg)
    if args.heldout_of is None and args.unseen_of is None:
        raise ValueError("give the examples: --heldout-of RUN (a pre-training run's held-out texts) or --unseen-of DATA")
    inventory = SenseInventory.for_wordnet(kg)
    if args.unseen_of is not None:
        examples, info = sl.unseen_examples(args.unseen_of, kg, inventory, args.max_examples,
                                            args.unseen_candidates_only)
    else:
        examples, info = sl.heldout_examples(args.heldout_of, kg, inventory, args.max_examples)
    if not examples:
        raise ValueError(f"{args.heldout_of or args.unseen_of}: no mention could be linked to a sense of "
                         f"{args.kg or 'WordNet'}")
    results = sl.evaluate_sense_linking(examples, kg, pretrained=args.model, encoder=args.encoder,
                                        seeds=tuple(range(args.seeds)), device=device, baselines=args.baselines)
    results["data"] = {**info, "examples_used": len(examples)}
    sl.write_report(results, out)
    return finish(args.json, results, sl.results_table(results), out, json_summary=results["scorers"])


def add_kgqa_predict_arguments(parser: argparse.ArgumentParser) -> None:
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


def kgqa_predict_rows(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict kgqa``: the flags as the library's typed arguments."""
    from jaket.tasks.kgqa_predict import predict_rows  # the task, loaded when it runs

    return predict_rows(model, args.questions, args.kg, args.hops, args.top_k)


def relation_classification_predict_rows(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict relation-classification``: the flags as the library's typed arguments."""
    from jaket.tasks.relation_classification_predict import predict_rows  # the task, loaded when it runs

    return predict_rows(model, args.support, args.queries)


def add_relation_classification_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict relation-classification`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--support", type=Path, required=True, metavar="FILE",
                        help="support examples in FewRel's JSON format: {relation: [sentences]}, each "
                             "relation a candidate answer (docs/data.md)")
    parser.add_argument("--queries", type=Path, required=True, metavar="FILE",
                        help="sentences to classify: one JSON object {\"tokens\", \"h\", \"t\"} a line")


def _run_kgqa(args) -> int:
    from jaket.tasks import kgqa  # the task, loaded when it runs

    device, out = start_run(args, "kgqa")  # device, trackers and --out checked before any work
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
    config = KGQAConfig(variants=variants_of(args, "kgqa"), kg_settings=args.kg_settings,
                             seeds=seed_range(args.seeds, args.first_seed), steps=args.steps, batch_size=args.batch_size,
                             lr=args.lr, head_lr=args.head_lr, km_lr=args.km_lr,
                             max_candidates=args.max_candidates, km_fanout=args.km_fanout,
                             select_every=args.select_every,
                             max_selection=args.max_selection, encoder=args.encoder,
                             pretrained=args.model, km_layers=args.km_layers, km_heads=args.km_heads,
                             relation_memory=args.relation_memory)
    results = kgqa.run_kgqa(kg, questions, config, out, splits=splits, data_info=info,
                            save_dir=None if args.evaluate else out / "model", device=device,
                            log_with=args.log_with)
    return finish(args.json, results, kgqa.results_table(results), out, args.task, "--questions FILE")


def _run_relation_classification(args) -> int:
    from jaket.tasks import relation_classification as rc  # the task, loaded when it runs

    device, out = start_run(args, "relation-classification")  # device, trackers, --out checked first
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
        variants=variants_of(args, "relation-classification"), settings=tuple(settings),
        seeds=seed_range(args.seeds, args.first_seed), num_train_relations=args.train_relations,
        drop_overlap=args.drop_overlap, train_steps=args.train_steps, train_way=args.train_way,
        train_shot=args.train_shot, episodes=args.episodes, encoder=args.encoder, pretrained=args.model,
        bf16=choose_precision(args.precision, device) == "bf16")
    results = rc.run_relation_classification(data, config, out, train_data=train_data,
                                             save_dir=None if args.evaluate else out / "model", device=device,
                                             log_with=args.log_with)
    return finish(args.json, results, rc.results_table(results), out, args.task, "--support FILE --queries FILE")
