"""``jaket predict entity-classification``'s flags and their reading.

``jaket finetune|evaluate entity-classification`` have no hand-written flags: they are made from
:class:`~jaket.tasks.entity_classification.job.EntityClassificationJob` (:mod:`jaket.tasks.job_flags`);
their spec reads the data (``data.read_inputs``) before the runner imports the model code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import positive_int
from jaket.tasks.entity_classification.job import TASK, EntityClassificationJob
from jaket.tasks.spec import TaskSpec


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict entity-classification`` arguments (beside ``--finetuned`` and ``--out``)."""
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR",
                        help="the KG whose entities are labelled (the fine-tuning KG or another one)")
    parser.add_argument("--entities", type=Path, metavar="FILE",
                        help="entity ids to label, one a line (split-file format; default: every entity "
                             "that had no label in fine-tuning)")
    parser.add_argument("--all", action="store_true", help="label every entity of the KG")
    parser.add_argument("--top-k", type=positive_int, default=1, metavar="K",
                        help="also list the K most probable labels per entity (default 1: only the best)")


#: the task's spec (registered by :mod:`jaket.tasks.registry`)
SPEC = TaskSpec(
    TASK, "categories of an unseen KG's entities (Table 3)", EntityClassificationJob,
    read_inputs="data:read_inputs", table="run:scores_and_paired_table",
    default_variants=("lm", "gnn", "lm+g+m", "jaket"), grid_task="run:EntityClassificationRuns",
    model="finetuned:FinetunedEntityClassifier", predict_help="a label and its probability for entities of a KG",
    add_predict_arguments=add_predict_arguments,
    predict_input_flags=("kg", "entities", "all"),
    predict_flags=("kg", "entities", "all", "top_k"), predict_usage="--kg KG",
    set_example="--set epochs=50 --set data.kg=my_kg/")
