"""What a command prints: with ``--json``, stdout holds one strict JSON document and nothing else.

A command that has ``--json`` prints its document with :func:`print_json` and everything meant for
people (tables, ``report:`` lines, hints, progress) on stderr. :func:`jaket.cli.main` runs every
command inside :func:`command_output`; there, once a ``--json`` command has printed its document,
the rest of the command's stdout goes to stderr, so a hint printed after the document (``fine-tuned
model: ...``) cannot corrupt it. The document is strict JSON (:func:`jaket.atomic.strict_json`:
NaN and infinities are ``null``), which any JSON parser reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Callable

from jaket.atomic import json_text
from jaket.errors import UsageError

#: True while :func:`jaket.cli.main` runs a command given ``--json``
_json_command = False


@contextmanager
def command_output(json_mode: bool) -> Iterator[None]:
    """The scope of one command (:func:`jaket.cli.main`): ``json_mode`` when it was given
    ``--json``. ``sys.stdout`` is restored when the command ends, whatever :func:`print_json` did."""
    global _json_command
    saved_stream, saved_mode = sys.stdout, _json_command
    _json_command = json_mode
    try:
        yield
    finally:
        sys.stdout, _json_command = saved_stream, saved_mode


def human_stream(json_mode: bool) -> IO[str]:
    """Where text for people goes: stderr when the command prints JSON (``--json``), else stdout."""
    return sys.stderr if json_mode else sys.stdout


def print_json(data: Any, indent: int | None = 2, sort_keys: bool = False,
               default: Callable[[Any], Any] | None = None) -> None:
    """Print ``data`` as strict JSON on stdout. Inside a ``--json`` command of
    :func:`command_output`, whatever the command prints on stdout afterwards goes to stderr."""
    stream = sys.stdout
    stream.write(json_text(data, indent=indent, sort_keys=sort_keys, default=default) + "\n")
    stream.flush()
    if _json_command:
        sys.stdout = sys.stderr  # the document is complete: nothing else may follow it on stdout


def check_run_folder(out, overwrite: bool, option: str = "--out") -> None:
    """Before any work: a run's output folder must not hold an earlier run's results
    (``metrics.json``) unless ``overwrite``, must not be a file, and must be writable."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option} {out}: is a file; name the output folder")
    if (out / "metrics.json").exists() and not overwrite:
        raise UsageError(f"{option} {out}: holds an earlier run's results (metrics.json); pass --overwrite "
                         "to replace them, or name a new folder")
    check_writable(out, out, option)


def check_writable(out: Path, folder: Path, option: str = "--out") -> None:
    """``folder`` (the one that will hold ``out``) can be made and written: its nearest existing
    folder, itself or a parent, is a folder this process may write into. Named as the user gave
    ``out``, before any work (not as the temporary file a writer would have failed on)."""
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise UsageError(f"{option} {out}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {out}: {existing} is not writable")


def check_output_folder(out, overwrite: bool, holds: str = "KG", option: str = "--out") -> None:
    """Before any work, for a command that writes a whole folder (``kg build``, ``kg import``,
    ``prepare``): ``out`` must be a new or empty folder, or ``overwrite`` given (the writer then
    replaces it as a whole), may not be a file, and must be writable (:func:`check_writable`).
    ``holds`` names what the folder holds in the messages."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option} {out}: is a file; name the {holds} folder to write")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"{option} {out}: the folder is not empty (an earlier {holds}?); pass --overwrite to "
                         "replace it as a whole, or name a new folder")
    check_writable(out, out, option)


def check_output_file(out, overwrite: bool, inputs=(), companions=(), option: str = "--out",
                      replaceable=()) -> None:
    """The one rule of every command that writes files, checked before any work: ``out`` and the
    ``companions`` written beside it (``OUT.ids.json``) may not be one of the command's ``inputs``
    or a file of an input folder (:func:`refuse_same_file`; ``replaceable``: files of an input folder
    the command may replace, as ``jaket link`` a KG's ``corpus.jsonl``) or a folder, may not exist
    unless ``overwrite`` (``--overwrite``), and their folder must be writable (:func:`check_writable`)."""
    out = Path(out)
    for path in (out, *(Path(c) for c in companions)):
        refuse_same_file(path, inputs, option, replaceable)
        which = "" if path == out else f" {path}"
        if path.is_dir():
            raise UsageError(f"{option} {out}:{which} is a folder; name a file to write")
        if path.exists() and not overwrite:
            raise UsageError(f"{option} {out}:{which} exists; pass --overwrite to replace it, or name "
                             "another file")
    check_writable(out, out.parent, option)


def refuse_same_file(out, inputs, option: str = "--out", replaceable=()) -> None:
    """An output file must not be one of the command's own inputs (it would be overwritten), nor a
    file already in an input folder (a KG's ``entities.jsonl``, a model's ``config.json``), except
    the ``replaceable`` ones; a new file inside an input folder is allowed."""
    if out is None:
        return
    out = Path(out)
    allowed = {Path(p).resolve() for p in replaceable}
    inputs = [Path(source) for source in inputs if source is not None]
    for source in inputs:
        same = out.exists() and source.exists() and os.path.samefile(out, source)
        if same or out.resolve() == source.resolve():
            raise UsageError(f"{option} {out}: is the input {source}; writing it would destroy the input "
                             "(name another output file)")
    for source in inputs:
        if source.is_dir() and out.is_file() and out.resolve() not in allowed \
                and out.resolve().is_relative_to(source.resolve()):
            raise UsageError(f"{option} {out}: is a file of the input folder {source}; writing it would "
                             "destroy the input (name another output file)")


def check_folder_to_replace(directory, marker: str, holds: str) -> None:
    """Before a ``save_pretrained`` that replaces ``directory`` as a whole: it must be new, empty, or
    an earlier folder of the same kind (one that holds ``marker``, e.g. ``jaket.safetensors``). A file,
    or a folder of anything else, is a ``ValueError``: replacing it would delete what it holds (a
    user's folder was emptied without a word). ``holds`` names the kind in the message."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory}: is a file; a {holds} is saved as a folder (name a new folder)")
    if not directory.is_dir() or (directory / marker).exists():
        return
    held = sorted(path.name for path in directory.iterdir())
    if held:
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise ValueError(f"{directory}: is not a {holds} folder (no {marker}; it holds {shown}); saving replaces "
                         "the folder as a whole and would delete them: name a new or empty folder")
