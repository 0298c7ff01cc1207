"""What a command prints: with ``--json``, stdout holds one strict JSON document and nothing else.

A command that has ``--json`` prints its document with :func:`print_json` and everything meant for
people (tables, ``report:`` lines, hints, progress) on stderr. :func:`jaket.cli.main` runs every
command inside :func:`command_output`; there, once a ``--json`` command has printed its document,
the rest of the command's stdout goes to stderr, so a hint printed after the document (``fine-tuned
model: ...``) cannot corrupt it. The document is strict JSON (:func:`jaket.atomic.strict_json`:
NaN and infinities are ``null``), which any JSON parser reads.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Callable

from jaket.atomic import json_text

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
