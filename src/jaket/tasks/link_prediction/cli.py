"""``jaket predict link-prediction``'s flags and their reading.

``jaket finetune|evaluate link-prediction`` have no hand-written flags: they are made from
:class:`~jaket.tasks.link_prediction.job.LinkPredictionJob` (:mod:`jaket.tasks.job_flags`); the keys
whose default depends on the mode (``--train-encoder`` or not) are resolved once, in the job; their spec
reads the data (``data.read_inputs``) before the runner imports the model code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import positive_int
from jaket.tasks.link_prediction.job import TASK, LinkPredictionJob
from jaket.tasks.spec import TaskSpec


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict link-prediction`` arguments (beside ``--finetuned`` and ``--out``)."""
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR",
                        help="the KG whose entities are ranked and whose triples the KM reads")
    parser.add_argument("--queries", type=Path, required=True, metavar="FILE",
                        help="one query a line: head<TAB>relation<TAB>? or ?<TAB>relation<TAB>tail (docs/data.md)")
    parser.add_argument("--top-k", type=positive_int, default=10, metavar="K", help="answers per query (default 10)")
    parser.add_argument("--exclude-known", action="store_true",
                        help="leave out answers whose triple is already in the KG")


#: the task's spec (registered by :mod:`jaket.tasks.registry`)
SPEC = TaskSpec(
    TASK, "filtered MRR / Hits@k over descriptions + KM", LinkPredictionJob,
    read_inputs="data:read_inputs",
    default_variants=("lm", "gnn", "lm+g+m", "jaket"), grid_task="run:LinkPredictionRuns",
    model="finetuned:FinetunedLinkPredictor", predict_help="top-k tails / heads for (h, r, ?) / (?, r, t) queries on a KG",
    add_predict_arguments=add_predict_arguments,
    predict_input_flags=("kg", "queries"),
    predict_flags=("kg", "queries", "top_k", "exclude_known"),
    predict_usage="--kg KG --queries FILE", set_example="--set steps=600 --set data.sample_entities=3000")
