"""``jaket predict relation-classification``'s flags and their reading.

``jaket finetune|evaluate relation-classification`` have no hand-written flags: they are made from
:class:`~jaket.tasks.relation_classification.job.RelationClassificationJob`
(:mod:`jaket.tasks.job_flags`); their spec reads the data (``data.read_inputs``) before the runner
imports the model code.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from jaket.tasks.relation_classification.job import TASK, RelationClassificationJob
from jaket.tasks.spec import TaskSpec


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict relation-classification`` arguments (beside ``--finetuned`` and ``--out``)."""
    parser.add_argument("--support", type=Path, required=True, metavar="FILE",
                        help="support examples in FewRel's JSON format: {relation: [sentences]}, each "
                             "relation a candidate answer (docs/data.md)")
    parser.add_argument("--queries", type=Path, required=True, metavar="FILE",
                        help="sentences to classify: one JSON object {\"tokens\", \"h\", \"t\"} a line")


#: the task's spec (registered by :mod:`jaket.tasks.registry`); no KM variant
SPEC = TaskSpec(
    TASK, "few-shot relation classification, PAIR (Table 1)", RelationClassificationJob,
    read_inputs="data:read_inputs",
    default_variants=("lm", "jaket"), finetune_variant="lm", grid_task="run:RelationClassificationRuns",
    model="finetuned:FinetunedPairClassifier", predict_help="the relation of each query sentence, given support examples (PAIR)",
    add_predict_arguments=add_predict_arguments,
    predict_input_flags=("support", "queries"),
    predict_flags=("support", "queries"),
    predict_usage="--support FILE --queries FILE", set_example="--set train_steps=50 --set data.data=fewrel/val_wiki.json")
