"""``task.json``, the file that makes a folder a fine-tuned model (layout in
:mod:`jaket.tasks.finetuned`), read without the model code: ``jaket predict`` checks the folder and
reads its settings before it reads the inputs, and the inputs before it loads the model.
"""

from __future__ import annotations

import os
from pathlib import Path

from jaket.jsonio import JSONInputError, quote, read_json
from jaket.tasks.spec import FinetunedFormatError

FORMAT = "jaket-finetuned"
FORMAT_VERSION = 1
TASK_FILE = "task.json"


def finetuned_path(directory, caller: str) -> Path:
    """``directory`` as a :class:`~pathlib.Path`; anything but a path (a ``str`` or ``os.PathLike``:
    ``5``, ``None``, a model object) is a ``TypeError`` saying what ``caller`` was given and what it
    expects, before pathlib's own message about ``os.PathLike``."""
    if isinstance(directory, (str, os.PathLike)):
        return Path(directory)
    raise TypeError(f"{caller}: got {quote(directory)} (type {type(directory).__name__}); expected the path "
                    "(a str or pathlib.Path) of a folder written by `jaket finetune` (its OUT/model)")


def read_task_config(directory, task: str | None = None) -> dict:
    """``task.json`` of a fine-tuned folder, checked to be of ``task`` (when given); a ``directory``
    that is not a path is a ``TypeError`` (:func:`finetuned_path`)."""
    directory = finetuned_path(directory, "read_task_config")
    path = directory / TASK_FILE
    if not path.is_file():
        if (directory / "config.json").is_file():
            raise FinetunedFormatError(
                f"{directory}: a pre-trained model or encoder folder, not a fine-tuned one (no {TASK_FILE}); "
                f"fine-tune it first: jaket finetune {task or 'TASK'} --model {directory} --out OUT "
                "(the fine-tuned model is OUT/model)")
        raise FinetunedFormatError(f"{directory}: not a fine-tuned model folder (no {TASK_FILE}); "
                                   "jaket finetune TASK --out OUT writes one to OUT/model")
    try:
        data = read_json(path)
    except JSONInputError as error:
        raise FinetunedFormatError(f"{path}:{error.line or 1}: {error.reason}") from None
    except OSError as error:
        raise FinetunedFormatError(f"{path}: cannot read ({error.strerror or error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FinetunedFormatError(f"{path}: 'format' is not {FORMAT!r}")
    if int(data.get("format_version", 0)) > FORMAT_VERSION:
        raise FinetunedFormatError(f"{path}: format_version {data['format_version']} is newer than this "
                                   f"jaket reads ({FORMAT_VERSION}); update jaket")
    if task is not None and data.get("task") != task:
        raise FinetunedFormatError(f"{directory}: a fine-tuned {data.get('task')} model, not {task}: use "
                                   f"jaket predict {data.get('task')} --finetuned {directory}")
    return data


__all__ = ["FORMAT", "FORMAT_VERSION", "TASK_FILE", "finetuned_path", "read_task_config"]
