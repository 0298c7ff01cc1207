"""``jaket finetune TASK`` and ``jaket evaluate TASK``.

``finetune`` runs one setting (``--variant``, default ``jaket`` when ``--model`` is given, else
``lm+g+m``, ``lm`` for relation classification) and saves its model to ``OUT/model`` for
``jaket predict``; ``evaluate`` runs the paper's comparison (``--variants``, all that apply by default)
over ``--seeds`` seeds (5 by default). Both fine-tune and test, and write ``metrics.json``,
``report.md`` and PNG plots into ``--out``. Without data arguments every task runs on the
embedded default (WordNet 3.0 + the bundled MiniLM).
"""

from __future__ import annotations

import argparse

from jaket.tasks.cli_common import add_common_arguments
from jaket.tasks.entity_classification.cli import add_arguments as add_entity_classification
from jaket.tasks.kgqa.cli import add_arguments as add_kgqa
from jaket.tasks.link_prediction.cli import add_arguments as add_link_prediction
from jaket.tasks.relation_classification.cli import add_arguments as add_relation_classification
from jaket.tasks.word_in_context.cli import add_arguments as add_word_in_context
from jaket.tasks.word_sense.cli import add_arguments as add_word_sense
from jaket.tasks.word_sense.cli import add_sense_linking_arguments

TASKS = ("entity-classification", "link-prediction", "kgqa", "relation-classification", "word-in-context")


def register(subparsers: argparse._SubParsersAction) -> None:
    for command, evaluate in (("finetune", False), ("evaluate", True)):
        help_text = ("fine-tune one setting on a downstream task" if not evaluate
                     else "run the paper's comparison of settings on a downstream task")
        parser = subparsers.add_parser(command, help=help_text, description=__doc__)
        tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
        ec = tasks.add_parser("entity-classification", help="categories of an unseen KG's entities (Table 3)")
        add_common_arguments(ec, evaluate)
        add_entity_classification(ec, evaluate)  # its flags, --config/--set, user splits; func

        lp = tasks.add_parser("link-prediction", help="filtered MRR / Hits@k over descriptions + KM")
        add_common_arguments(lp, evaluate)
        add_link_prediction(lp, evaluate)  # its flags (--train-encoder, ...); func

        qa = tasks.add_parser("kgqa", help="question answering over the KG, Hits@1 (Table 2)")
        add_common_arguments(qa, evaluate)
        add_kgqa(qa, evaluate)  # its flags, --config/--set; func

        rc = tasks.add_parser("relation-classification", help="few-shot relation classification, PAIR (Table 1)")
        add_common_arguments(rc, evaluate)
        add_relation_classification(rc, evaluate)  # its flags, --config/--set; func

        wic = tasks.add_parser("word-in-context",
                               help="does a target word mean the same in two texts? (WiC; senses from the KG)")
        add_common_arguments(wic, evaluate)
        add_word_in_context(wic, evaluate)  # its flags, --config/--set; func
        if evaluate:
            sl = tasks.add_parser("sense-linking", help="choose a word's WordNet sense in context (WSD) on "
                                                        "held-out linked texts of a pre-training run")
            add_sense_linking_arguments(sl)
            wsd = tasks.add_parser("word-sense-disambiguation",
                                   help="all-words WSD in the unified framework (SemEval-2007 ...): every scorer "
                                        "of a word's WordNet senses on the same targets, F1")
            add_common_arguments(wsd, evaluate)
            add_word_sense(wsd)  # its flags, --config/--set; func
