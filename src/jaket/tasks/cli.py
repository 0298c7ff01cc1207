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
from jaket.tasks.registry import TASKS


def register(subparsers: argparse._SubParsersAction) -> None:
    """One subcommand per registered task (:data:`jaket.tasks.registry.TASKS`) under ``finetune``
    and ``evaluate``: the common flags, then the task's own (its ``cli`` module's function, which
    also sets the handler)."""
    for command, evaluate in (("finetune", False), ("evaluate", True)):
        help_text = ("fine-tune one setting on a downstream task" if not evaluate
                     else "run the paper's comparison of settings on a downstream task")
        parser = subparsers.add_parser(command, help=help_text, description=__doc__)
        tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
        for spec in TASKS.values():
            if command not in spec.commands:
                continue
            task = tasks.add_parser(spec.name, help=spec.help)
            if spec.common_flags:
                add_common_arguments(task, evaluate)
            spec.command(spec.add_arguments)(task, evaluate)
