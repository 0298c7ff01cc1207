"""``jaket evaluate word-sense-disambiguation``: all-words WSD in the unified framework.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`WordSenseJob`) <
``--set key=value`` < the dedicated flags; ``--print-config`` prints the result. ``--data`` reads
the framework's ``*.data.xml`` (gold senses from ``--gold`` or the ``*.gold.key.txt`` beside it)
or our JSONL (:mod:`jaket.tasks.word_sense.data`); the sense KG is ``--kg DIR`` or all of WordNet 3.0.
Nothing is fine-tuned: the scorers of :mod:`jaket.tasks.word_sense.finetuned` run side by side
(:mod:`jaket.tasks.word_sense.run`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import add_device_argument, add_precision_argument
from jaket.overrides import add_config_arguments, add_config_flags
from jaket.tasks.cli_common import add_sense_kg_argument, finish, float_list, settle_precision, start_job, start_run
from jaket.tasks.word_sense.job import SENSE_LINKING, TASK, WordSenseJob



def add_arguments(parser: argparse.ArgumentParser, evaluate: bool = True) -> None:
    """The task's flags (beside the common ones of :func:`jaket.tasks.cli_common.add_common_arguments`)."""
    add_config_flags(parser, "YAML config (keys of WordSenseJob)", "--set first_sense_prior=[0.5,1]")
    parser.add_argument("--data", type=Path, metavar="FILE",
                        help="the targets: the WSD framework's *.data.xml or JSONL (docs/data.md)")
    parser.add_argument("--gold", type=Path, metavar="FILE",
                        help="the framework's key file (default: the *.gold.key.txt beside --data, if any)")
    add_sense_kg_argument(parser)
    parser.add_argument("--first-sense-prior", type=float_list, metavar="W,...",
                        help="also report each scorer with WordNet's sense order as a prior of these weights "
                             "(default: none; choose the weight on the development set only)")
    parser.set_defaults(seeds=None, func=run, evaluate=True)


#: flag destination -> config key (flags win over the file and --set)
_FLAG_KEYS = {"data": "data.path", "gold": "data.gold", "kg": "data.kg", "first_sense_prior": "first_sense_prior",
              "model": "pretrained", "encoder": "encoder", "km_layers": "km_layers", "km_heads": "km_heads"}


def run(args: argparse.Namespace) -> int:
    """``jaket evaluate word-sense-disambiguation``."""
    started = start_job(args, WordSenseJob, _FLAG_KEYS, TASK)
    if started is None:  # --print-config
        return 0
    job, device, out = started
    # --help: the task (torch, the model) is imported when it runs
    from jaket.tasks.word_sense import run as wsd
    from jaket.tasks.word_in_context.finetuned import load_sense_kg
    from jaket.tasks.word_sense.data import key_path_of, load_wsd  # --help: reads WordNet's sense keys

    instances = load_wsd(job.data.path, job.data.gold)
    kg = load_sense_kg(job.data.kg)
    beside = key_path_of(job.data.path)
    gold = job.data.gold or (beside if job.data.path.suffix != ".jsonl" and beside.is_file() else None)
    info = {"data": str(job.data.path), "gold": str(gold) if gold else None,
            "sense_kg": str(job.data.kg) if job.data.kg else "WordNet 3.0 (all synsets)"}
    results = wsd.run_wsd(instances, kg, job, out, device=device, data_info=info)
    return finish(args.json, results, wsd.results_table(results) if results["scorers"] else "(no gold: no score)",
                  out, json_summary={"scorers": {k: v["f1"] for k, v in results["scorers"].items()},
                                     "paired": results["paired"], "data": results["data"]})


def add_sense_linking_arguments(parser: argparse.ArgumentParser, evaluate: bool = True) -> None:
    """``jaket evaluate sense-linking``: its flags (no common ones: nothing is fine-tuned)."""
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
    add_precision_argument(parser)
    add_config_arguments(parser)
    parser.set_defaults(func=run_sense_linking, _settle=settle_precision)


def run_sense_linking(args) -> int:
    """``jaket evaluate sense-linking``."""
    from jaket.tasks.word_sense import run as sl  # the task, loaded when it runs
    from jaket.tasks.word_in_context.data import SenseInventory
    from jaket.tasks.word_in_context.finetuned import load_sense_kg

    device, out = start_run(args, SENSE_LINKING)
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
                                        seeds=tuple(range(args.seeds)), device=device, baselines=args.baselines,
                                        bf16=settle_precision(args))
    results["data"] = {**info, "examples_used": len(examples)}
    sl.write_sense_linking_report(results, out)
    return finish(args.json, results, sl.sense_linking_table(results), out, json_summary=results["scorers"])
