"""``jaket evaluate word-sense-disambiguation``: all-words WSD in the unified framework.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`WordSenseJob`) <
``--set key=value`` < the dedicated flags; ``--print-config`` prints the result. ``--data`` reads
the framework's ``*.data.xml`` (gold senses from ``--gold`` or the ``*.gold.key.txt`` beside it)
or our JSONL (:mod:`jaket.tasks.wsd_data`); the sense KG is ``--kg DIR`` or all of WordNet 3.0.
Nothing is fine-tuned: the scorers of :mod:`jaket.tasks.sense_scoring` run side by side
(:mod:`jaket.tasks.wsd`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ConfigDict

from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import add_sense_kg_argument, float_list, finish, start_job
from jaket.tasks.settings import WordSenseConfig

TASK = "word-sense-disambiguation"


@dataclass(kw_only=True)
class WordSenseData:
    """Where the targets and the senses come from."""

    #: the targets: the framework's ``*.data.xml`` or our JSONL (required)
    path: Path | None = None
    #: the framework's key file; None = the ``*.gold.key.txt`` beside an XML file, when it exists
    gold: Path | None = None
    #: the sense KG folder; None = WordNet 3.0 (all 117,659 synsets)
    kg: Path | None = None

    __pydantic_config__ = ConfigDict(extra="forbid")


@dataclass(kw_only=True)
class WordSenseJob(WordSenseConfig):
    """A run: the task config plus its data; empty ``variants`` / ``seeds``: every encoder scorer
    that applies (``jaket`` with ``--model``) and seeds 0-4."""

    data: WordSenseData = field(default_factory=WordSenseData)
    variants: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()

    __pydantic_config__ = ConfigDict(extra="forbid")

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        if self.data.path is None:
            problems.append(("data.path", "--data FILE is required (a framework *.data.xml or JSONL)"))
        return problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    from jaket.tasks import wsd
    from jaket.tasks.word_in_context_predict import load_sense_kg
    from jaket.tasks.wsd_data import key_path_of, load_wsd  # --help: reads WordNet's sense keys

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
