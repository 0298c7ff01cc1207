"""``jaket finetune TASK`` and ``jaket evaluate TASK``.

``finetune`` runs one setting (``--variant``, default ``jaket`` when ``--model`` is given, else
``lm+g+m``); ``evaluate`` runs the paper's comparison (``--variants``, all that apply by default)
over ``--seeds`` seeds (5 by default). Both fine-tune and test, and write ``metrics.json``,
``report.md`` and PNG plots into ``--out``. Without data arguments every task runs on the
embedded default (WordNet 3.0 + the bundled MiniLM).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np

from jaket.model.device import add_device_argument

logger = logging.getLogger(__name__)

TASKS = ("entity-classification", "link-prediction", "kgqa", "relation-classification")
_DEFAULT_VARIANTS = {
    "entity-classification": ("lm", "gnn", "lm+g+m", "jaket"),
    "link-prediction": ("lm", "gnn", "lm+g+m", "jaket"),
    "kgqa": ("lm", "lm+g", "lm+g+m", "jaket"),
    "relation-classification": ("lm", "jaket"),
}


def _csv(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in _csv(text))


def _add_common(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    parser.add_argument("--model", type=Path, help="jointly pre-trained model folder (enables 'jaket')")
    parser.add_argument("--encoder", type=Path, help="base Hugging Face encoder (default: bundled MiniLM)")
    if evaluate:
        parser.add_argument("--variants", type=_csv,
                            help="comma list of lm,gnn,lm+g,lm+g+m,jaket (default: all that apply)")
    else:
        parser.add_argument("--variant", help="one of lm,gnn,lm+g,lm+g+m,jaket")
    parser.add_argument("--seeds", type=int, default=5 if evaluate else 1, help="number of seeds (0..N-1)")
    parser.add_argument("--out", type=Path, help="output folder (default runs/<task>)")
    parser.add_argument("--json", action="store_true", help="print metrics.json's summary as JSON")
    parser.add_argument("--km-layers", type=int,
                        help="layers of the fresh KM of gnn / lm+g / lm+g+m (default: --model's, else 2)")
    parser.add_argument("--km-heads", type=int,
                        help="heads of the fresh KM of gnn / lm+g / lm+g+m (default: --model's, else 8)")
    add_device_argument(parser)


def _add_relation_memory(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-relation-memory", dest="relation_memory", action="store_false",
                        help="R = 0 in the KM (ablation; default: R from relation descriptions, as the paper)")


def register(subparsers: argparse._SubParsersAction) -> None:
    for command, evaluate in (("finetune", False), ("evaluate", True)):
        help_text = ("fine-tune one setting on a downstream task" if not evaluate
                     else "run the paper's comparison of settings on a downstream task")
        parser = subparsers.add_parser(command, help=help_text, description=__doc__)
        tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
        ec = tasks.add_parser("entity-classification", help="categories of an unseen KG's entities (Table 3)")
        _add_common(ec, evaluate)
        from jaket.tasks.entity_classification_cli import add_arguments as add_entity_classification

        add_entity_classification(ec, evaluate)  # its flags, --config/--set, user splits; func

        lp = tasks.add_parser("link-prediction", help="filtered MRR / Hits@k over descriptions + KM")
        _add_common(lp, evaluate)
        from jaket.tasks.link_prediction_cli import add_arguments as add_link_prediction

        add_link_prediction(lp, evaluate)  # its flags (--train-encoder, ...); func

        qa = tasks.add_parser("kgqa", help="question answering over the KG, Hits@1 (Table 2)")
        _add_common(qa, evaluate)
        qa.add_argument("--metaqa", type=Path, help="a MetaQA folder (kb.txt, 1-hop/, 2-hop/)")
        qa.add_argument("--max-entities", type=int, default=2000, help="WordNet subset size (default KG)")
        qa.add_argument("--max-questions", type=int, default=1500)
        qa.add_argument("--kg-settings", type=_csv, default=("full", "50%"))
        qa.add_argument("--steps", type=int, default=300)
        _add_relation_memory(qa)
        qa.set_defaults(func=_run_kgqa, evaluate=evaluate)

        rc = tasks.add_parser("relation-classification", help="few-shot relation classification, PAIR (Table 1)")
        _add_common(rc, evaluate)
        rc.add_argument("--data", type=Path, help="FewRel JSON file or folder (default: WordNet-derived set)")
        rc.add_argument("--max-entities", type=int, default=3000, help="WordNet subset size (default data)")
        rc.add_argument("--settings", type=_csv, default=("5-1", "5-5"), help="N-K list, e.g. 5-1,5-5,10-1")
        rc.add_argument("--train-relations", type=int, default=3)
        rc.add_argument("--train-steps", type=int, default=150)
        rc.add_argument("--episodes", type=int, default=1000)
        rc.set_defaults(func=_run_relation_classification, evaluate=evaluate)


def _variants(args, task: str) -> tuple[str, ...]:
    if args.evaluate:
        chosen = args.variants or _DEFAULT_VARIANTS[task]
        if args.model is None:
            if args.variants and "jaket" in args.variants:
                raise SystemExit("error: variant 'jaket' needs --model DIR (a pre-trained model folder)")
            chosen = tuple(v for v in chosen if v != "jaket")
        return chosen
    variant = args.variant or ("jaket" if args.model is not None else "lm+g+m")
    if variant == "jaket" and args.model is None:
        raise SystemExit("error: variant 'jaket' needs --model DIR (a pre-trained model folder)")
    return (variant,)


def _finish(args, results: dict, table: str, out: Path) -> int:
    print(table)
    print(f"report: {out / 'report.md'}  metrics: {out / 'metrics.json'}")
    if args.json:
        print(json.dumps(results.get("summary", {}), indent=2))
    return 0


def _out(args, task: str) -> Path:
    return args.out or Path("runs") / task


def _cpu_only(args, task: str) -> None:
    """The tasks not yet moved to a device run on the CPU: ``--device`` must say cpu."""
    from jaket.errors import UsageError
    from jaket.model.device import resolve_device

    device = resolve_device(args.device)
    if device.type != "cpu":
        raise UsageError(f"--device {args.device}: {task} runs on the CPU only so far "
                         f"(entity-classification, pretrain and embed take a GPU); use --device cpu")


def _run_kgqa(args) -> int:
    from jaket.tasks import kgqa

    _cpu_only(args, "kgqa")
    if args.metaqa is not None:
        kg, questions = _metaqa_kg(args.metaqa)
    else:
        from jaket.kg.sources.wordnet import build_wordnet

        kg, _, _ = build_wordnet(max_entities=args.max_entities, roots=None, seed=0)
        questions = kgqa.wordnet_questions(kg, seed=0, max_questions=args.max_questions)
    config = kgqa.KGQAConfig(variants=_variants(args, "kgqa"), kg_settings=args.kg_settings,
                             seeds=tuple(range(args.seeds)), steps=args.steps, encoder=args.encoder,
                             pretrained=args.model, km_layers=args.km_layers, km_heads=args.km_heads,
                             relation_memory=args.relation_memory)
    out = _out(args, "kgqa")
    results = kgqa.run_kgqa(kg, questions, config, out)
    return _finish(args, results, kgqa.results_table(results), out)


def _metaqa_kg(folder: Path):
    """MetaQA as a KnowledgeGraph: descriptions = one sampled question per entity (the paper)."""
    from jaket.kg.graph import KnowledgeGraph
    from jaket.kg.sources import metaqa

    kb, questions, skipped = metaqa.load_metaqa(folder)
    if skipped:
        logger.warning("%s: %d questions skipped (topic or answers not in kb.txt)", folder, skipped)
    descriptions = metaqa.entity_descriptions_from_questions(len(kb.entity_names), kb.entity_names, questions)
    kg = KnowledgeGraph(
        entity_ids=list(kb.entity_names), entity_names=list(kb.entity_names), entity_descriptions=descriptions,
        entity_aliases=[[] for _ in kb.entity_names], entity_category=np.full(len(kb.entity_names), -1),
        category_names=[], relation_ids=list(kb.relation_names),
        relation_names=[r.replace("_", " ") for r in kb.relation_names],
        relation_descriptions=[metaqa.RELATION_DESCRIPTIONS.get(r, r.replace("_", " ")) for r in kb.relation_names],
        triples=kb.triples)
    return kg, questions


def _run_relation_classification(args) -> int:
    from jaket.tasks import relation_classification as rc

    _cpu_only(args, "relation-classification")
    if args.data is not None:
        from jaket.kg.sources.fewrel import load_fewrel

        data = load_fewrel(args.data)
    else:
        from jaket.kg.sources.wordnet import build_wordnet

        kg, _, _ = build_wordnet(max_entities=args.max_entities, roots=None, seed=0)
        data = rc.kg_relation_instances(kg)
    settings = []
    for item in args.settings:
        way, _, shot = item.partition("-")
        settings.append((int(way), int(shot)))
    config = rc.RelationClassificationConfig(
        variants=_variants(args, "relation-classification"), settings=tuple(settings),
        seeds=tuple(range(args.seeds)), num_train_relations=args.train_relations,
        train_steps=args.train_steps, episodes=args.episodes, encoder=args.encoder, pretrained=args.model)
    out = _out(args, "relation-classification")
    try:
        results = rc.run_relation_classification(data, config, out)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    return _finish(args, results, rc.results_table(results), out)
