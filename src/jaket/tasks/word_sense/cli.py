"""``jaket evaluate word-sense-disambiguation`` (all-words WSD in the unified framework) and ``jaket
evaluate sense-linking``.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`WordSenseJob`) <
``--set key=value`` < the dedicated flags; ``--print-config`` prints the result. ``--data`` reads
the framework's ``*.data.xml`` (gold senses from ``--gold`` or the ``*.gold.key.txt`` beside it)
or our JSONL (:mod:`jaket.tasks.word_sense.data`); the sense KG is ``--kg DIR`` or all of WordNet 3.0.
Nothing is fine-tuned: the scorers of :mod:`jaket.tasks.word_sense.finetuned` run side by side
(:func:`jaket.tasks.word_sense.run.run_job`, through :func:`jaket.tasks.cli_common.run_task`).

Sense linking's settings layer the same way (keys of :class:`SenseLinkingJob`): its examples are the
held-out linked texts of a pre-training run (``--heldout-of RUN``) or the texts of an unseen KG'
(``--unseen-of DATA``), its runner :func:`jaket.tasks.word_sense.run.run_sense_linking_job`; its
flags are :func:`add_sense_linking_arguments`' and :data:`SENSE_LINKING_FLAG_KEYS` (the spec's
``add_arguments`` and ``flag_keys``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import add_device_argument, add_precision_argument
from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import add_sense_kg_argument, float_list, run_task
from jaket.tasks.word_sense.job import SenseLinkingJob


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
    parser.set_defaults(func=run_task, evaluate=True)


#: flag destination -> job key (flags given on the command line win over the file and --set; the
#: common flags' are :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`)
FLAG_KEYS = {"data": "data.path", "gold": "data.gold", "kg": "data.kg", "first_sense_prior": "first_sense_prior"}


def add_sense_linking_arguments(parser: argparse.ArgumentParser, evaluate: bool = True) -> None:
    """``jaket evaluate sense-linking``: its flags (no common ones: nothing is fine-tuned), each a key
    of :class:`SenseLinkingJob` (:data:`SENSE_LINKING_FLAG_KEYS`) or how and where to run."""
    defaults = SenseLinkingJob()
    add_config_flags(parser, "YAML config (keys of SenseLinkingJob)", "--set data.max_examples=300")
    parser.add_argument("--model", type=Path, help="jointly pre-trained model folder (the 'jaket' scorers)")
    parser.add_argument("--encoder", type=Path, help="base Hugging Face encoder (default: bundled MiniLM)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--heldout-of", type=Path, metavar="RUN",
                        help="a pre-training run folder: its held-out linked texts (rebuilt from RUN/config.yaml) "
                             "are the examples")
    source.add_argument("--unseen-of", type=Path, metavar="DATA",
                        help="a 'jaket prepare wordnet-reference' folder: the texts of its unseen KG' (DATA/kg-unseen), "
                             "which pre-training never saw, are the examples")
    parser.add_argument("--unseen-candidates-only", action="store_const", const=True,
                        help="with --unseen-of: a word's candidates are its KG' senses only (a KG never seen at all)")
    add_sense_kg_argument(parser)
    parser.add_argument("--max-examples", type=int, metavar="N", help="use the first N examples only")
    parser.add_argument("--seeds", type=int,
                        help=f"fresh KMs of the lm+g+m scorer (default {len(defaults.seeds)}: seeds 0 .. N-1)")
    parser.add_argument("--no-baselines", dest="baselines", action="store_const", const=False,
                        help="only the first-sense, random and --model scorers (to compare pre-trained models)")
    parser.add_argument("--out", type=Path, help="output folder (default runs/sense-linking)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of an earlier run in --out (refused otherwise)")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON on stdout (alone)")
    add_device_argument(parser)
    add_precision_argument(parser, default_help="fp32, unless --config or --set says otherwise")
    parser.set_defaults(seeds=None, baselines=None, log_with=(), func=run_task, evaluate=True)


#: sense linking's flag destination -> job key (the spec's ``flag_keys``; flags given on the command
#: line win over the file and --set; ``--model`` / ``--encoder`` are
#: :data:`jaket.tasks.cli_common.COMMON_FLAG_KEYS`', ``--seeds N`` is ``seeds`` 0 .. N-1,
#: ``--precision`` is ``bf16``)
SENSE_LINKING_FLAG_KEYS = {"heldout_of": "data.heldout_of", "unseen_of": "data.unseen_of",
                           "unseen_candidates_only": "data.unseen_candidates_only", "kg": "data.kg",
                           "max_examples": "data.max_examples", "baselines": "baselines"}
