"""``from jaket.pipeline import pipeline``: a whole fine-tuning experiment from Python, as the command
line runs it.

PyKEEN's ``from pykeen.pipeline import pipeline`` is the model: one call runs a task's comparison
(or one fine-tuning) and returns a typed result with ``to_dataframe()``::

    from jaket.pipeline import pipeline

    result = pipeline("word-in-context", model="runs/reference-wic/model", variants=["lm", "jaket"], seeds=3,
                      out="runs/wic", data__train="wic/train.data.txt", data__eval="wic/dev.data.txt")
    result.to_dataframe().groupby("variant")["accuracy"].agg(["mean", "std"])

It goes through the one command-line path (:mod:`jaket.cli`): the same settings, ``--config`` files
and ``--set`` keys as ``jaket evaluate TASK``, the same checks before any work, the same
``metrics.json`` / ``report.md`` in ``out``; but an error is raised (the command's
``ValueError`` naming the file or key), not printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jaket.cli import build_parser
from jaket.overrides import apply_flag_config
from jaket.tasks.results import TaskResult


def pipeline(task: str, *, out: str | Path, evaluate: bool = True, model: str | Path | None = None,
             encoder: str | Path | None = None, variants: list[str] | str | None = None, seeds: int | None = None,
             config: str | Path | None = None, overwrite: bool = False, device: str | None = None,
             **settings: Any) -> TaskResult:
    """Run ``jaket evaluate TASK`` (``evaluate=False``: ``jaket finetune TASK``, one setting, the
    model saved to ``out/model``) and return what it measured.

    ``model``: a jointly pre-trained folder (the ``jaket`` setting); ``encoder``: the base encoder
    (default: the bundled MiniLM); ``variants``: the settings to compare (one for finetune);
    ``seeds``: how many; ``config``: a YAML file of the task's settings; ``settings``: any other
    setting, by the name ``--set NAME=VALUE`` takes (entity classification and word-in-context:
    their config keys, a dotted one with ``__``: ``data__kg="my_kg"`` for ``data.kg``; the other
    tasks: their flags' names, ``steps=300``)."""
    argv = ["evaluate" if evaluate else "finetune", task, "--out", str(out)]
    for flag, value in (("--model", model), ("--encoder", encoder), ("--config", config), ("--device", device)):
        if value is not None:
            argv += [flag, str(value)]
    if variants is not None:
        names = [variants] if isinstance(variants, str) else list(variants)
        argv += ["--variants", ",".join(names)] if evaluate else ["--variant", names[0]]
    if seeds is not None:
        argv += ["--seeds", str(seeds)]
    if overwrite:
        argv.append("--overwrite")
    for key, value in settings.items():
        text = str(value) if isinstance(value, Path) else json.dumps(value)  # JSON is YAML: --set reads it back
        argv += ["--set", f"{key.replace('__', '.')}={text}"]
    parser = build_parser()
    args = apply_flag_config(parser, parser.parse_args(argv), argv)
    status = args.func(args)
    if status:
        raise RuntimeError(f"jaket {' '.join(argv)} ended with status {status}")
    return TaskResult.from_metrics(Path(out) / "metrics.json")
