"""The error classes the command line maps to exit statuses (:mod:`jaket.cli`; the rule is written in
docs/cli.md, "Exit status").

* **2, usage and configuration**: the command line or a config file is wrong (an unknown or
  mistyped flag, a missing required flag, flags that contradict each other, a config file that
  cannot be read, an unknown setting, a value out of range): :class:`UsageError` and argparse's own
  errors. Nothing was read but the command line and its config.
* **1, data and run**: an input the command reads is missing or malformed (a KG folder, a data
  file, a model folder of the wrong kind, a checkpoint), or the run cannot go on (a locked run
  folder): a ``ValueError`` (the project's own subclasses name the file and line) or an ``OSError``.
* 130 (or 128 + the signal) when a signal stopped a run; a traceback only for a bug.
"""

from __future__ import annotations


class UsageError(ValueError):
    """The command was invoked wrongly (a flag, an argument or a config value): exit status 2."""


class InputError(ValueError):
    """An input path the command reads is missing or is not what it should be: exit status 1."""


class EmptyInputError(ValueError):
    """An input file holds nothing to work on (it is empty or white space only): exit status 1,
    before any work (:func:`jaket.kg.readers.refuse_empty`)."""
