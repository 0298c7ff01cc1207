"""The error classes the command line maps to exit statuses (:mod:`jaket.cli`).

A user error is a ``ValueError`` (the project's own subclasses name the file and line) or an
``OSError``: exit status 1. :class:`UsageError` marks a wrong invocation (a flag, an argument or a
config value): exit status 2, as argparse's own errors.
"""

from __future__ import annotations


class UsageError(ValueError):
    """The command was invoked wrongly (a flag, an argument or a config value): exit status 2."""


class EmptyInputError(ValueError):
    """An input file holds nothing to work on (it is empty or white space only): exit status 1,
    before any work (:func:`jaket.kg.readers.refuse_empty`)."""
