"""What every ``jaket finetune|evaluate TASK`` command shares: its common flags, its preamble
(device, trackers and ``--out`` checked before any work), the settings it compares and the way
it ends (the table, where the report is, ``--json``'s summary, the fine-tuned model's folder).

The task command modules (:mod:`jaket.tasks.cli`, ``*_cli.py``) import from here; nothing here
imports them, so the command line has no import cycle.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from jaket.flags import add_device_argument, add_precision_argument
from jaket.model.device import choose_precision, resolve_device
from jaket.output import check_folder_to_replace, check_run_folder, human_stream, print_json
from jaket.tasks.config import dump_task_config, flag_values, load_task_config
from jaket.tasks.registry import task_spec
from jaket.tasks.tracking import add_log_with_argument, check_trackers
from jaket.tasks.settings import variant as variant_spec

def csv_list(text: str) -> tuple[str, ...]:
    """A comma list flag: ``"a, b,"`` -> ``("a", "b")``."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def float_list(text: str) -> tuple[float, ...]:
    """A comma list of numbers (``argparse``'s error names the flag when one is not a number)."""
    try:
        return tuple(float(x) for x in csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of numbers, got {text!r}") from None


def add_common_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The flags of every ``finetune`` / ``evaluate`` task command."""
    parser.add_argument("--model", type=Path, help="jointly pre-trained model folder (enables 'jaket')")
    parser.add_argument("--encoder", type=Path, help="base Hugging Face encoder (default: bundled MiniLM)")
    if evaluate:
        parser.add_argument("--variants", type=csv_list,
                            help="comma list of lm,gnn,lm+g,lm+g+m,jaket (default: all that apply)")
    else:
        parser.add_argument("--variant", help="one of lm,gnn,lm+g,lm+g+m,jaket")
    parser.add_argument("--seeds", type=int,
                        help=f"number of seeds (--first-seed .. --first-seed + N - 1; default {5 if evaluate else 1}, "
                             "or the job's seeds from --config / --set)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="first seed (default 0): a table can be built seed by seed in separate runs")
    parser.add_argument("--out", type=Path, help="output folder (default runs/<task>)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of an earlier run in --out (refused otherwise)")
    parser.add_argument("--json", action="store_true", help="print metrics.json's summary as JSON")
    parser.add_argument("--km-layers", type=int,
                        help="layers of the fresh KM of gnn / lm+g / lm+g+m (default: --model's, else 2)")
    parser.add_argument("--km-heads", type=int,
                        help="heads of the fresh KM of gnn / lm+g / lm+g+m (default: --model's, else 8)")
    add_device_argument(parser)
    add_precision_argument(parser, default_help="fp32, unless --config or --set says otherwise")
    add_log_with_argument(parser)


def precision_of(args: argparse.Namespace) -> bool | None:
    """``--precision`` / ``--bf16`` resolved once, on ``--device``, into the value of a task
    config's one precision field, ``bf16`` (:func:`jaket.model.device.choose_precision`: ``auto`` is
    bf16 exactly where the device computes it natively); None when neither flag is given (the
    config's own ``bf16`` stays: fp32 unless its file or ``--set`` says otherwise)."""
    precision = getattr(args, "precision", None)
    if precision is None:
        return None
    return choose_precision(precision, resolve_device(args.device)) == "bf16"


def add_sense_kg_argument(parser: argparse.ArgumentParser) -> None:
    """``--kg DIR``: the KG whose entities are word senses (word in context, sense linking)."""
    parser.add_argument("--kg", type=Path, metavar="DIR", help="the sense KG (default: WordNet 3.0)")


def chosen_variants(task: str, evaluate: bool, pretrained: Path | None, variants: tuple[str, ...] | None = None,
                    variant: str | None = None) -> tuple[str, ...]:
    """The settings a run compares: ``evaluate``'s ``variants`` (default: the task spec's
    ``default_variants`` that apply: ``jaket`` only with a pre-trained model), ``finetune``'s one
    ``variant`` (default: ``jaket`` with a pre-trained model, else the spec's ``finetune_variant``)."""
    if evaluate:
        chosen = variants or task_spec(task).default_variants
        if pretrained is None:
            if variants and "jaket" in variants:
                raise SystemExit("error: variant 'jaket' needs --model DIR (a pre-trained model folder)")
            chosen = tuple(v for v in chosen if v != "jaket")
        return tuple(chosen)
    variant = variant or ("jaket" if pretrained is not None else task_spec(task).finetune_variant)
    if variant_spec(variant).pretrained and pretrained is None:
        raise SystemExit("error: variant 'jaket' needs --model DIR (a pre-trained model folder)")
    return (variant,)


def resolve_job(job, task: str, evaluate: bool):
    """A typed job (entity classification, word in context: ``variants``, ``seeds``, ``pretrained``)
    with what it left empty filled as the other tasks' flags are: the settings of
    :func:`chosen_variants`, seeds 0-4 to evaluate and 0 to fine-tune. ``ValueError`` (the CLI names
    it): ``jaket`` without a pre-trained model, or several settings to fine-tune. A job class with a
    ``resolved()`` method is returned as that method makes it (the defaults it left None set). A job
    that compares no settings (no ``variants``: sense linking's) is complete as it is."""
    if not hasattr(job, "variants"):
        return job
    if "jaket" in job.variants and job.pretrained is None:
        raise ValueError("variant 'jaket' needs --model DIR (a pre-trained model folder)")
    if not evaluate and len(job.variants) > 1:
        raise ValueError(f"finetune runs one setting, got variants {list(job.variants)}; use jaket evaluate "
                         "to compare several")
    variants = chosen_variants(task, evaluate, job.pretrained, tuple(job.variants) or None,
                               job.variants[0] if job.variants and not evaluate else None)
    seeds = job.seeds or ((0, 1, 2, 3, 4) if evaluate else (0,))
    job = dataclasses.replace(job, variants=tuple(variants), seeds=tuple(seeds))
    resolved = getattr(job, "resolved", None)  # defaults that depend on other keys (link prediction's mode)
    return resolved() if callable(resolved) else job


def task_job(job_type: type, task: str, evaluate: bool, config: Path | str | None = None,
             overrides: list[str] | None = None, values: dict | None = None):
    """A task's typed job from its defaults < the YAML file ``config`` < ``overrides``
    (``"a.b=value"``) < ``values`` (``{"a.b": value}``, used as given), checked and completed
    (:func:`resolve_job`); the command line's and :func:`jaket.pipeline.pipeline`'s."""
    return resolve_job(load_task_config(job_type, config, overrides, values, what=task), task, evaluate)


def start_run(args: argparse.Namespace, task: str):
    """The preamble of every run, before any work: ``(device, out)`` once the device exists here,
    the trackers are installed and ``--out`` (default ``runs/<task>``) is not an earlier run's
    folder (:func:`jaket.output.check_run_folder`; ``--overwrite`` replaces it)."""
    device = resolve_device(args.device)
    check_trackers(getattr(args, "log_with", None) or ())
    out = args.out or Path("runs") / task
    check_run_folder(out, getattr(args, "overwrite", False))
    if not getattr(args, "evaluate", True):  # finetune saves OUT/model: refused now, not after the first run
        check_folder_to_replace(out / "model", "task.json", "fine-tuned model")  # finetuned.TASK_FILE
    return device, out


def start_job(args: argparse.Namespace, job_type: type, flag_keys: dict[str, str], task: str,
              values: dict | None = None):
    """The preamble of a command with a typed job (entity classification, word in context):
    ``(job, device, out)``, the job being what the flags describe (file < ``--set`` < the flags of
    ``flag_keys``, destination -> config key, and ``values``; :func:`resolve_job`) and ``(device,
    out)`` :func:`start_run`'s; None once ``--print-config`` has printed the job (a device this
    machine lacks is refused first, even then). A bad value is a ``ValueError`` naming the key."""
    values = {**flag_values(args, flag_keys), **(values or {})}
    bf16 = precision_of(args)
    if bf16 is not None:  # --precision / --bf16 win over the file's and --set's bf16
        values["bf16"] = bf16
    job = task_job(job_type, task, args.evaluate, args.config, list(args.overrides), values)
    resolve_device(args.device)
    if args.print_config:
        print(dump_task_config(job), end="")
        return None
    return (job, *start_run(args, task))


#: the flags of :func:`add_common_arguments` that are a job's keys (destination -> key); the others
#: (``--variant(s)``, ``--seeds``/``--first-seed`` -> ``variants``/``seeds``, ``--precision`` ->
#: ``bf16``) are mapped by :func:`jaket.tasks.config.flag_values` and :func:`start_job`
COMMON_FLAG_KEYS = {"model": "pretrained", "encoder": "encoder", "km_layers": "km_layers", "km_heads": "km_heads"}
#: the flags of every command that say how and where to run, not what: they are no job key
RUN_FLAGS = frozenset({"help", "debug", "variant", "variants", "seeds", "first_seed", "precision", "device", "out",
                       "overwrite", "json", "log_with", "config", "overrides", "print_config"})


def run_task(args: argparse.Namespace) -> int:
    """``jaket finetune|evaluate TASK`` of every task with a typed job: the job the flags describe
    (:func:`start_job`: the defaults < ``--config`` < ``--set`` < the task's flags, its ``cli``
    module's ``FLAG_KEYS``, or the dict the spec's ``flag_keys`` names), then the spec's runner (what
    :func:`jaket.pipeline.pipeline` calls), then :func:`finish` with the run module's table (the
    spec's ``table``)."""
    spec = task_spec(args.task)
    started = start_job(args, spec.job, {**COMMON_FLAG_KEYS, **spec.command(spec.flag_keys)}, spec.name)
    if started is None:  # --print-config
        return 0
    job, device, out = started
    result = spec.run_function()(job, out, save_dir=None if args.evaluate else out / "model", device=device,
                                 log_with=args.log_with)
    for warning in result.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    summary = None if spec.json_keys is None else {key: result.get(key) for key in spec.json_keys}
    return finish(args.json, result, getattr(spec.module("run"), spec.table)(result), out, spec.name,
                  spec.predict_usage, json_summary=summary)


def finish(json_output: bool, results: Mapping, table: str, out: Path, task: str | None = None,
           usage: str | None = None, json_summary: dict | None = None) -> int:
    """Print the results table and where the report is (and, when the run saved one, where the
    fine-tuned model is and how to use it: ``jaket predict TASK --model DIR USAGE``); with
    ``--json`` those go to stderr and stdout holds only metrics.json's summary (or the task's
    ``json_summary``) as strict JSON (:func:`jaket.output.print_json`)."""
    human = human_stream(json_output)
    print(table, file=human)
    print(f"report: {out / 'report.md'}  metrics: {out / 'metrics.json'}", file=human)
    if json_output:
        print_json(json_summary if json_summary is not None else results.get("summary", {}))
    if task is not None and "saved_model" in results:
        inputs = f" {usage}" if usage else ""
        print(f"fine-tuned model: {results['saved_model']}  (jaket predict {task} --model "
              f"{results['saved_model']}{inputs})", file=human_stream(json_output))
    return 0
