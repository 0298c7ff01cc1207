"""``jaket finetune TASK`` and ``jaket evaluate TASK``: a thin layer over :func:`jaket.pipelines.pipeline`.

Each task's flags are made from its typed job (:mod:`jaket.tasks.job_flags`); a command reads the job
its flags describe (the job's defaults < ``--config`` < ``--set`` < the flags given), prints it with
``--print-config``, or hands it to :func:`jaket.pipelines.pipeline`, which checks the device, the
trackers and ``--out`` and runs the task, and prints the table.
"""

from __future__ import annotations

import argparse
import sys

from jaket.tasks.cli_common import finish
from jaket.tasks.config import dump_task_config, flag_values
from jaket.tasks.job_flags import add_job_arguments, option_of
from jaket.tasks.registry import TASKS, TaskSpec, task_spec

#: what each command does, in one plain sentence (its --help)
DESCRIPTIONS = {
    "finetune": "Fine-tune one variant on a task's training data and save the model for `jaket predict`.",
    "evaluate": "Compare variants on a task over several seeds and report paired differences; saves no model.",
}

#: the same, as a line of ``jaket --help``'s command list (lower case, no full stop, like the other commands)
SUMMARIES = {
    "finetune": "fine-tune one variant on a task and save it for `jaket predict`",
    "evaluate": "compare variants on a task over seeds (paired differences); saves no model",
}

#: the flags' help beside the one sentence: how settings layer and what runs without data
EPILOG = ("Settings: the job's defaults < --config FILE < --set KEY=VALUE < the flags given; --print-config "
          "prints the result. Without data flags a task runs on the built-in WordNet 3.0 and the bundled "
          "MiniLM encoder. Both commands write metrics.json, report.md and plots into --out.")


def add_task_arguments(parser: argparse.ArgumentParser, spec: TaskSpec, evaluate: bool) -> dict[str, str]:
    """The flags of ``finetune|evaluate TASK``, made from the task's job; ``{dest: job key}``."""
    name = spec.job.__name__
    keys = add_job_arguments(parser, spec.job, evaluate, config_help=f"YAML file of the job (keys of {name}; "
                             "--print-config writes one)", set_example=spec.set_example,
                             default_seeds=spec.default_seeds)
    parser.set_defaults(func=run_task, evaluate=evaluate, _job_keys=keys, _seed_count=spec.default_seeds,
                        _job_options=option_of(keys, parser))
    return keys


def register(subparsers: argparse._SubParsersAction) -> None:
    """One subcommand per registered task (:data:`jaket.tasks.registry.TASKS`) under ``finetune``
    and ``evaluate``."""
    for command, evaluate in (("finetune", False), ("evaluate", True)):
        parser = subparsers.add_parser(command, help=SUMMARIES[command], description=DESCRIPTIONS[command],
                                       epilog=EPILOG)
        tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
        for spec in TASKS.values():
            if command not in spec.commands:
                continue
            task = tasks.add_parser(spec.name, help=spec.help, description=f"{DESCRIPTIONS[command]} Task: "
                                    f"{spec.help}.", epilog=EPILOG)
            add_task_arguments(task, spec, evaluate)


def job_from_flags(args: argparse.Namespace, spec: TaskSpec):
    """The job the flags describe, as given (what it leaves empty is filled by
    :func:`jaket.tasks.cli_common.resolve_job`, once, before :func:`jaket.pipelines.pipeline` runs it): the defaults <
    ``--config`` < ``--set`` < the flags given (a bad value is a ``ValueError`` naming the flag as
    written); ``--precision`` resolved on ``--device``."""
    from jaket.model.device import choose_precision, resolve_device
    from jaket.tasks.config import load_task_config, shown_value

    keys = args._job_keys
    values = flag_values(args, keys)
    precision = getattr(args, "precision", None)
    if precision is not None:  # --precision wins over the file's and --set's bf16
        values["bf16"] = choose_precision(precision, resolve_device(args.device)) == "bf16"
    flags = dict(args._job_options)  # job key -> its flag, as the command line spells it
    flags.update({"bf16": "--precision", "variants": "--variants" if args.evaluate else "--variant",
                  "seeds": "--seeds"})

    def origin(key: str, value) -> str:
        if key == "bf16":
            return f"--precision {precision}"
        return f"{flags.get(key, key)} {shown_value(value)}"

    return load_task_config(spec.job, args.config, list(args.overrides), values, what=spec.name, origin=origin)


def run_task(args: argparse.Namespace) -> int:
    """``jaket finetune|evaluate TASK``: the job of the flags (:func:`job_from_flags`), printed with
    ``--print-config`` (a device this machine lacks refused first, even then), else handed, built and
    checked once, to :func:`jaket.pipelines.pipeline` (``job=``: which checks the device, the trackers and
    ``--out`` before any work), then :func:`finish` with the task's table."""
    from pathlib import Path

    from jaket.model.device import resolve_device
    from jaket.pipelines import pipeline
    from jaket.tasks.cli_common import resolve_job

    spec = task_spec(args.task)
    job = job_from_flags(args, spec)
    resolved = resolve_job(job, args.evaluate, default_variants=spec.default_variants,
                           finetune_variant=spec.finetune_variant)
    if args.print_config:
        resolve_device(args.device)
        print(dump_task_config(resolved), end="")
        return 0
    out = args.out or Path("runs") / spec.name
    result = pipeline(spec.name, job=resolved, out=out, evaluate=args.evaluate, overwrite=args.overwrite,
                      device=args.device, log_with=args.log_with)
    for warning in result.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    summary = None if spec.json_keys is None else {key: result.get(key) for key in spec.json_keys}
    return finish(args.json, result, spec.table_function()(result), out, spec.name, spec.predict_usage, json_summary=summary)
