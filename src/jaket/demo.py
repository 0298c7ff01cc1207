"""``jaket demo``: the whole story on the embedded default in one command (``make demo``).

1. Build a WordNet 3.0 subset of 10,000 synsets and split it
   (:func:`jaket.tasks.heldout.wordnet_protocol`): breadth-first regions holding half
   of the synsets become the unseen KG' (the held-out entities and the triples among them); the
   rest, with the corpus texts that mention no held-out synset, is the pre-training KG.
   Pre-training therefore never sees a KG' entity.
2. Pre-train JAKET briefly on the pre-training part with the bundled MiniLM (the embedded default
   configuration, 120 steps, with the masked-entity task off: what the reference ablations
   showed transfers best to an unseen KG, docs/results.md).
3. Entity classification on KG' (categories = WordNet lexicographer files) with 5% of the training
   part (50 labelled synsets), LM+G+M (the same encoder and a knowledge module, no joint
   pre-training) against JAKET, 5 seeds paired by split: the memory of KG' is recomputed from
   its descriptions by each setting's LM1 and frozen; JAKET's classifier starts from the category
   head pre-training trained (``head_init="category"``), LM+G+M's from scratch (it has none).
4. Print the table and the paired difference JAKET − LM+G+M with its 95% interval; write
   ``runs/demo/report.md`` (tables, pre-training loss curves, accuracy plot) and
   ``runs/demo/metrics.json``.

``--quick`` shrinks every size (a smoke run for the tests, about a minute with a tiny encoder).
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from jaket.kg.io import save_kg
from jaket.flags import add_device_argument, deprecated_alias, positive_int
from jaket.model.device import machine_description, resolve_device
from jaket.tasks import report as rep
from jaket.tasks.heldout import label_leakage, wordnet_protocol
from jaket.tasks.registry import ENTITY_CLASSIFICATION
from jaket.train.config import load_config
from jaket.train.metrics import read_metrics

logger = logging.getLogger(__name__)


@dataclass
class DemoConfig:
    out: Path = Path("runs/demo")
    encoder: Path | None = None
    max_entities: int = 10_000
    heldout_fraction: float = 0.5  # KG' of 5,000 synsets: 5% of its training part is 50 labels
    data_seed: int = 0
    pretrain_steps: int | None = None  # None = the embedded default's number of steps
    #: pre-training settings beside the embedded default's (``--set`` syntax)
    pretrain_overrides: tuple[str, ...] = ("tasks.weight_entity=0",)
    seeds: int = 5
    epochs: int = 150
    train_fractions: tuple[float, ...] = (0.05,)
    variants: tuple[str, ...] = ("lm+g+m", "jaket")
    head_init: str = "category"  # JAKET's classifier from the pre-trained category head
    model: Path | None = None  # skip pre-training and use this pre-trained model folder
    device: str = "cpu"  # where pre-training and fine-tuning run (`--device`)

    @classmethod
    def small(cls, **overrides) -> "DemoConfig":
        """The demo until 2026-11-26 (``--protocol small``; the protocol of docs/results.md's demo-ec
        runs): 3,000 synsets, 30% held out, the embedded pre-training unchanged, LM only / LM+G+M /
        JAKET with every classifier from scratch, 100% and 5% of the labels."""
        return cls._with(dict(max_entities=3000, heldout_fraction=0.3, pretrain_overrides=(),
                              train_fractions=(1.0, 0.05), variants=("lm", "lm+g+m", "jaket"),
                              head_init="fresh"), overrides)

    @classmethod
    def quick(cls, **overrides) -> "DemoConfig":
        return cls._with(dict(max_entities=300, heldout_fraction=0.3, pretrain_steps=4, seeds=2, epochs=15,
                              train_fractions=(1.0, 0.05), variants=("lm", "lm+g+m", "jaket")), overrides)

    @classmethod
    def _with(cls, base: dict, overrides: dict) -> "DemoConfig":
        """A preset ``base`` with the options the command line gave (None: not given)."""
        return cls(**{**base, **{k: v for k, v in overrides.items() if v is not None}})


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="WordNet subset -> brief pre-training -> entity "
                                                "classification on an unseen part (make demo)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), metavar="DIR",
                        help="output folder (default runs/demo)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--protocol", choices=["default", "small"], default="default",
                        help="small: the demo until 2026-11-26 (3,000 synsets, 30%% held out, every classifier "
                             "from scratch; the demo-ec runs of docs/results.md)")
    parser.add_argument("--encoder", type=Path, metavar="DIR", help="base encoder folder (default: bundled MiniLM)")
    parser.add_argument("--model", type=Path, metavar="DIR",
                        help="a pre-trained jaket model folder: skip pre-training and use it")
    parser.add_argument("--max-entities", type=positive_int, metavar="N",
                        help="synsets of the WordNet subset (default 10,000; --protocol small 3,000; --quick 300)")
    parser.add_argument("--steps", dest="pretrain_steps", type=positive_int, metavar="N",
                        help="pre-training's optimizer steps (default: the embedded default's, 120; --quick 4)")
    deprecated_alias(parser, "--pretrain-steps", "--steps")
    parser.add_argument("--seeds", type=positive_int, metavar="N",
                        help="fine-tuning seeds, paired by split (default 5; --quick 2)")
    parser.add_argument("--epochs", type=positive_int, metavar="N", help="fine-tuning epochs (default 150; --quick 15)")
    parser.add_argument("--head-init", choices=["category", "fresh"],
                        help="JAKET's classifier from the pre-trained category head (default) or from scratch "
                             "(the paper's protocol)")
    add_device_argument(parser)
    parser.set_defaults(func=_main)


def _main(args) -> int:
    overrides = dict(out=args.out, encoder=args.encoder, model=args.model, max_entities=args.max_entities,
                     pretrain_steps=args.pretrain_steps, seeds=args.seeds, epochs=args.epochs,
                     head_init=args.head_init,
                     device=str(resolve_device(args.device)))
    if args.quick:
        config = DemoConfig.quick(**overrides)
    elif args.protocol == "small":
        config = DemoConfig.small(**overrides)
    else:
        config = DemoConfig(**{k: v for k, v in overrides.items() if v is not None})
    try:
        run_demo(config)
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("jaket"):
            raise
        print(f"error: the demo needs the part {error.name}, which is not installed")
        return 1
    return 0


def _stage(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run_demo(config: DemoConfig) -> dict:
    """The three stages (data, pre-training, entity classification), then the table, the plots,
    ``metrics.json`` and ``report.md`` in ``config.out``; returns the metrics."""
    from jaket.tasks import entity_classification as ec  # the task (torch_geometric), loaded when it runs

    started = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    _stage(f"1/3 WordNet subset of {config.max_entities} synsets, {config.heldout_fraction:.0%} held out as KG'")
    t0 = time.perf_counter()
    kg_prime, info, leakage = _split_wordnet(config, out)
    timings["data"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if config.model is None:
        _stage("2/3 pre-training JAKET on the pre-training part (embedded default configuration)")
        model_dir, curves = _pretrain(out / "kg-pretrain", out / "pretrain", config)
    else:
        _stage(f"2/3 using the pre-trained model {config.model}")
        model_dir, curves = Path(config.model), {}
    timings["pretrain"] = time.perf_counter() - t0

    _stage("3/3 entity classification on the unseen KG'")
    t0 = time.perf_counter()
    ec_config = ec.EntityClassificationConfig(variants=config.variants, train_fractions=config.train_fractions,
                                              seeds=tuple(range(config.seeds)), epochs=config.epochs,
                                              encoder=config.encoder, pretrained=model_dir,
                                              head_init=config.head_init)
    results = ec.run_entity_classification(kg_prime, ec_config, out / ENTITY_CLASSIFICATION.name,
                                           device=config.device)
    timings["entity_classification"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started

    table = ec.results_table(results)
    paired = ec.paired_table(results)
    _plots(config, results, curves, out)
    metrics = {"config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(config).items()},
               "protocol": info, "leakage": leakage, "model": str(model_dir),
               "entity_classification": {"summary": results["summary"], "paired": results.get("paired"),
                                          "zero_shot": results.get("zero_shot"),
                                          "majority_baseline": results.get("majority_baseline"),
                                          "kg": results["kg"]},
               "pretrain_final_losses": {k: v[-1] for k, v in curves.items() if v},
               "seconds": timings, "machine": machine_description()}
    rep.write_run_report(out, metrics, _report_lines(config, info, leakage, table, paired, timings["total"],
                                                     bool(curves), out))
    print()
    print(table)
    if paired:
        print()
        print(paired)
    print(f"report: {out / 'report.md'}   metrics: {out / 'metrics.json'}   "
          f"({timings['total'] / 60:.1f} min)")
    return metrics


def _split_wordnet(config: DemoConfig, out: Path):
    """Stage 1: the WordNet subset split into the pre-training KG (with its corpus, written to
    ``out/kg-pretrain``) and the unseen KG' (``out/kg-unseen``); returns KG', the protocol's counts
    and the label-leakage check of KG'."""
    kg_pre, corpus_pre, kg_prime, info = wordnet_protocol(config.max_entities, config.heldout_fraction,
                                                          config.data_seed)
    save_kg(kg_pre, out / "kg-pretrain", corpus=corpus_pre)
    save_kg(kg_prime, out / "kg-unseen")
    leakage = label_leakage(kg_prime)
    print(f"pre-training KG: {info['pretrain_entities']} entities, {info['pretrain_triples']} triples, "
          f"{info['texts_kept']} texts; unseen KG': {info['heldout_entities']} entities, "
          f"{info['heldout_triples']} triples; leakage: {leakage['descriptions_with_full_category_name']} "
          "descriptions spell a category")
    return kg_prime, info, leakage


def _plots(config: DemoConfig, results: dict, curves: dict[str, list[float]], out: Path) -> None:
    """``pretrain_loss.png`` (when pre-training ran here) and ``accuracy.png`` (test accuracy per
    setting and training fraction, mean ± std over the seeds)."""
    from jaket.tasks.settings import VARIANT_LABELS  # the task, loaded when it runs

    if curves:
        rep.plot_curves(curves, out / "pretrain_loss.png", title="pre-training losses", ylabel="loss")
    fractions = [str(f) for f in config.train_fractions]
    series = {VARIANT_LABELS.get(v, v): ([100 * s[f]["test_accuracy"]["mean"] for f in fractions],
                                         [100 * s[f]["test_accuracy"]["std"] for f in fractions])
              for v, s in results["summary"].items()}
    rep.plot_grouped_bars([f"{float(f) * 100:g}% train" for f in fractions], series, out / "accuracy.png",
                          title="entity classification on unseen WordNet KG'")


def _report_lines(config: DemoConfig, info: dict, leakage: dict, table: str, paired: str,
                  total_seconds: float, has_curves: bool, out: Path) -> list[str]:
    """``report.md``: the command, the protocol, the tables and the plots."""
    lines = ["# jaket demo", "",
             f"Command: `jaket demo{' --quick' if config.max_entities < 1000 else ''}` "
             f"({total_seconds / 60:.1f} min on this machine).", "",
             "## Protocol", "",
             f"- WordNet 3.0 subset of {config.max_entities} synsets (seed {config.data_seed}); "
             f"{info['heldout_entities']} synsets in breadth-first regions are held out as the unseen KG' "
             f"({info['heldout_triples']} triples among them). Pre-training uses the other "
             f"{info['pretrain_entities']} synsets, {info['pretrain_triples']} triples and the "
             f"{info['texts_kept']} corpus texts that mention no held-out synset "
             f"({info['texts_dropped_mentioning_heldout']} dropped, {info['triples_crossing_dropped']} "
             "triples crossing the two parts dropped).",
             "- Labels: the WordNet lexicographer file (e.g. `noun.animal`). Descriptions are lemmas + gloss; "
             f"{leakage['descriptions_with_full_category_name']} of {leakage['descriptions_checked']} descriptions "
             "contain a category name.",
             f"- Split 20/20/60 of the labelled KG' entities per seed; training on "
             f"{', '.join(f'{f:.0%}' for f in config.train_fractions)} of the training part; {config.seeds} "
             f"seeds, paired (the same split and seed for every setting); {config.epochs} full-batch epochs, "
             "test accuracy at the best dev epoch.",
             f"- Pre-training: the embedded default configuration"
             f"{' with ' + ', '.join(config.pretrain_overrides) if config.pretrain_overrides else ''}; "
             f"JAKET's classifier starts from {'the pre-trained category head' if config.head_init == 'category' else 'scratch'}"
             ", the other settings' from scratch.",
             "", "## Test accuracy (%)", "", table, "", paired, "",
             "What this shows: a few minutes of joint pre-training on 5,000 synsets already give the "
             "knowledge module and its category head something that transfers to 5,000 synsets they never "
             "saw. The full-WordNet reference model (an hour of pre-training) and the paper's own protocol "
             "(every classifier from scratch) are measured in "
             f"[docs/results.md]({_docs_link(out)}).", "",
             "![accuracy](accuracy.png)", ""]
    if has_curves:
        lines += ["## Pre-training", "", "![pre-training losses](pretrain_loss.png)", ""]
    lines += ["Per-setting learning curves and a confusion matrix: "
              "[entity-classification/report.md](entity-classification/report.md).", ""]
    return lines


def _docs_link(out: Path) -> str:
    """``docs/results.md`` relative to the report's folder when the report sits inside the
    repository (``runs/demo``), else the path inside the repository."""
    import os

    repository = Path(__file__).resolve().parents[2]
    results = repository / "docs" / "results.md"
    if results.is_file():
        return os.path.relpath(results, Path(out).resolve())
    return "docs/results.md"


def _pretrain(kg_dir: Path, out_dir: Path, config: DemoConfig) -> tuple[Path, dict[str, list[float]]]:
    """Pre-train on the demo's pre-training KG with the embedded default configuration
    (:class:`jaket.train.config.PretrainConfig`), shortened to ``config.pretrain_steps``; returns the
    model folder and the loss curves it logged."""
    from jaket.train.pretrain import pretrain  # the model (torch_geometric), loaded when it runs

    overrides = ["data.source=dir", f"data.path={kg_dir}", f"seed={config.data_seed}", "tensorboard=false",
                 *config.pretrain_overrides]
    if config.pretrain_steps is not None:
        overrides.append(f"steps={config.pretrain_steps}")
    if config.encoder is not None:
        overrides.append(f"model.encoder={config.encoder}")
    if config.max_entities < 1000:  # --quick: keep every step and refresh tiny
        overrides += ["text_batch_size=4", "tasks.root_entities=8", "tasks.relation_pairs=8",
                      "memory.initial=2", "eval_texts=16", "checkpoint_every=0"]
    pretrain(load_config(None, overrides), out_dir, overwrite=True,  # the demo's own folder
             device=config.device)
    return Path(out_dir) / "model", _loss_curves(Path(out_dir))


def _loss_curves(run_dir: Path) -> dict[str, list[float]]:
    """Per-step losses from the run's ``metrics.jsonl`` (the four ``loss_*`` series)."""
    curves: dict[str, list[float]] = {}
    for row in read_metrics(run_dir / "metrics.jsonl"):
        for key, value in row.items():
            if key.startswith("loss_") and isinstance(value, (int, float)):
                curves.setdefault(key, []).append(float(value))
    return curves
