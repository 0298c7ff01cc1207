"""The ``jaket`` command line.

Each subsystem owns its subcommands: a module with ``register(subparsers)`` that adds parsers whose
``func`` attribute is called with the parsed namespace and returns the exit status. This file only
collects them, so the command-line surface grows without one file every part edits.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from jaket import __version__
from jaket.paths import offline_environment, thread_environment

#: modules that contribute subcommands, in the order they appear in ``jaket --help``
_SUBCOMMAND_MODULES = (
    "jaket.kg.cli",
    "jaket.kg.linking",
    "jaket.model.cli",
    "jaket.train.cli",
    "jaket.tasks.cli",
    "jaket.tasks.reference",
    "jaket.tasks.predict",
    "jaket.bench.cli",
    "jaket.demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaket",
        description="Joint pre-training of a knowledge graph and a language model (JAKET).",
    )
    parser.add_argument("--version", action="version", version=f"jaket {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name == name:  # that part is not written yet
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    offline_environment()
    thread_environment()  # before the subcommand modules import torch
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
