"""``jaket predict TASK --finetuned DIR ...``: use a model that ``jaket finetune TASK`` saved.

``DIR`` is a fine-tuned folder (``OUT/model`` of ``jaket finetune``; format in
:mod:`jaket.tasks.finetuned`). One JSON object a line, one line per query, goes to ``--out FILE``
(written atomically) or to stdout. The tasks are the registered ones that save a model (:func:`jaket.tasks.registry.predictable`).
``--device`` places the loaded model (and with it the memory and every batch) on a device.

Before the model is loaded: an existing ``--out`` is refused unless ``--overwrite``, as is one that is
a folder, one of the inputs or in a folder that cannot be written (:func:`jaket.output.check_output_file`),
an input file that is empty or white space only (:func:`jaket.kg.readers.refuse_empty`), a folder that
is not a fine-tuned model of the task (its ``task.json``), and then every input file is read and
checked (the task's ``read_prediction_inputs``): a malformed line costs the seconds its parse takes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaket.atomic import json_text
from jaket.flags import add_device_argument, deprecated_alias
from jaket.kg.readers import refuse_empty
from jaket.model.device import resolve_device
from jaket.output import check_output_file
from jaket.overrides import add_config_arguments
from jaket.tasks.registry import predictable, task_spec
from jaket.tasks.report import write_text_atomic
from jaket.tasks.task_file import read_task_config


def _write_rows(rows, out: Path | None) -> int:
    lines = [json_text(row, indent=None, ensure_ascii=False) for row in rows]  # strict JSON: NaN is null
    if out is None:
        for line in lines:
            print(line)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out, "".join(line + "\n" for line in lines))
    return len(lines)


def _run(args: argparse.Namespace) -> int:
    spec = task_spec(args.task)
    device = resolve_device(args.device)  # a device this machine lacks is refused before any work
    paths = {key: value for key, value in vars(args).items() if key != "out" and isinstance(value, Path)}
    if args.out is not None:
        check_output_file(args.out, args.overwrite, inputs=paths.values())
    for key, path in paths.items():  # the task's input files (--queries, --entities, ...; not folders)
        if key not in ("finetuned", "config") and path.is_file():
            refuse_empty(path, f"--{key.replace('_', '-')}", "predict")
    # a wrong folder, then a bad input file, each refused before the model is loaded; the command
    # line's one error boundary names it
    settings = read_task_config(args.finetuned, args.task)
    inputs = spec.read_prediction_inputs(args, settings)
    model = spec.model_class().from_pretrained(args.finetuned, device=device)
    count = _write_rows(spec.predict(model, args, inputs), args.out)
    where = f" -> {args.out}" if args.out is not None else ""
    print(f"{count} prediction(s){where}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("predict", help="predict with a fine-tuned model (JSONL, one row per query)",
                                   description=__doc__.split("\n\n")[0])
    tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
    for name, spec in predictable().items():
        task = tasks.add_parser(name, help=spec.predict_help)
        folder = task.add_mutually_exclusive_group(required=True)  # required, and its old name counts
        folder.add_argument("--finetuned", type=Path, metavar="DIR",
                            help=f"a fine-tuned {name} folder (jaket finetune {name} ... --out OUT writes OUT/model)")
        deprecated_alias(folder, "--model", "--finetuned")
        task.add_argument("--out", type=Path, metavar="FILE", help="JSONL output file (default: stdout)")
        task.add_argument("--overwrite", action="store_true", help="replace an existing --out (refused otherwise)")
        add_device_argument(task)
        spec.add_predict_arguments(task)
        add_config_arguments(task)
        task.set_defaults(func=_run)
