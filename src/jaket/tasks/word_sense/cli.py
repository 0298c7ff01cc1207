"""``jaket evaluate word-sense-disambiguation`` and ``jaket evaluate sense-linking``: nothing is
fine-tuned, so there is nothing to predict with, and neither command has a hand-written flag: they
are made from :class:`~jaket.tasks.word_sense.job.WordSenseJob` and
:class:`~jaket.tasks.word_sense.job.SenseLinkingJob` (:mod:`jaket.tasks.job_flags`).
"""

from __future__ import annotations

from jaket.tasks.spec import TaskSpec
from jaket.tasks.word_sense.job import SENSE_LINKING, TASK, SenseLinkingJob, WordSenseJob


#: the specs of the two commands (registered by :mod:`jaket.tasks.registry`); nothing to predict with
SENSE_LINKING_SPEC = TaskSpec(
    SENSE_LINKING, "choose a word's WordNet sense in context (WSD) on held-out linked texts of a pre-training run",
    SenseLinkingJob, runner="run:run_sense_linking_job", table="run:sense_linking_table",
    commands=("evaluate",), default_seeds=3, set_example="--set data.max_examples=300")
SPEC = TaskSpec(
    TASK, "all-words WSD in the unified framework (SemEval-2007 ...): every scorer of a word's WordNet senses "
    "on the same targets, F1", WordSenseJob, table="run:scores_table",
    default_variants=("lm", "lm+g+m", "jaket"), commands=("evaluate",), set_example="--set first_sense_prior=[0.5,1]")
