"""``jaket predict kgqa``'s flags and their reading.

``jaket finetune|evaluate kgqa`` have no hand-written flags: they are made from
:class:`~jaket.tasks.kgqa.job.KGQAJob` (:mod:`jaket.tasks.job_flags`); their spec reads the data
(``data.read_inputs``) before the runner imports the model code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaket.flags import positive_int
from jaket.tasks.kgqa.job import TASK, KGQAJob
from jaket.tasks.spec import TaskSpec


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict kgqa`` arguments (beside ``--finetuned`` and ``--out``)."""
    parser.add_argument("--questions", type=Path, required=True, metavar="FILE",
                        help="one question a line with its topic entity in brackets, 'who directed [Kismet]', "
                             "optionally <TAB>gold|answers (MetaQA format, docs/data.md)")
    parser.add_argument("--kg", type=Path, metavar="DIR",
                        help="the KG to answer over (default: the model folder's kg/, the fine-tuning KG)")
    parser.add_argument("--hops", type=positive_int, metavar="K",
                        help="candidates = entities within K hops of the topic (default: the largest hop "
                             "count the model was fine-tuned on)")
    parser.add_argument("--top-k", type=positive_int, default=5, metavar="K",
                        help="answers listed per question (default 5)")


#: the task's spec (registered by :mod:`jaket.tasks.registry`)
SPEC = TaskSpec(
    TASK, "question answering over the KG, Hits@1 (Table 2)", KGQAJob,
    read_inputs="data:read_inputs",
    default_variants=("lm", "lm+g", "lm+g+m", "jaket"), grid_task="run:QuestionAnsweringRuns",
    model="finetuned:FinetunedQuestionAnswerer", predict_help="ranked answers for questions over a KG",
    add_predict_arguments=add_predict_arguments,
    predict_input_flags=("finetuned", "questions", "kg", "hops", "top_k", "settings"),
    predict_flags=("questions", "kg", "hops", "top_k"),
    predict_usage="--questions FILE", set_example="--set steps=100 --set data.hops=[1]")
