"""``jaket predict word-in-context``'s flags and their reading.

``jaket finetune|evaluate word-in-context`` have no hand-written flags: they are made from
:class:`~jaket.tasks.word_in_context.job.WordInContextJob` (:mod:`jaket.tasks.job_flags`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.tasks.cli_common import add_sense_kg_argument
from jaket.tasks.spec import TaskSpec
from jaket.tasks.word_in_context.job import TASK, WordInContextJob


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict word-in-context`` arguments (beside ``--finetuned`` and ``--out``)."""
    parser.add_argument("--pairs", type=Path, required=True, metavar="FILE",
                        help="pairs to judge: WiC *.data.txt or JSONL ({lemma, pos, text1, start1, end1, text2, "
                             "start2, end2}); labels, when present, are echoed")
    parser.add_argument("--gold", type=Path, metavar="FILE", help="WiC labels for --pairs (default: none)")
    add_sense_kg_argument(parser)


#: the task's spec (registered by :mod:`jaket.tasks.registry`)
SPEC = TaskSpec(
    TASK, "does a target word mean the same in two texts? (WiC; senses from the KG)", WordInContextJob,
    default_variants=("lm", "lm+g+m", "jaket"), finetune_variant="lm", grid_task="run:WordInContextRuns",
    model="finetuned:FinetunedWordInContext", predict_help="whether a target word means the same in two texts (WiC), with its senses",
    add_predict_arguments=add_predict_arguments,
    predict_input_flags=("pairs", "gold", "kg"),
    predict_flags=("pairs", "gold", "kg"), predict_usage="--pairs FILE",
    json_keys=("summary", "paired", "majority_class", "frozen_features"),
    set_example="--set epochs=4 --set sense_fusion=first")
