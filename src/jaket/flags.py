"""The command-line flags every command shares: ``--device`` and ``--precision`` (with ``--bf16``),
and the value types of counted and probability flags (:func:`positive_int`, :func:`probability`).

Declared here, in one place and without torch, so any command's parser adds them the same way;
what they mean is resolved where the devices are (:func:`jaket.model.device.resolve_device`,
:func:`jaket.model.device.choose_precision`).
"""

from __future__ import annotations

import argparse


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    """The shared ``--device`` flag (resolved by :func:`jaket.model.device.resolve_device`)."""
    parser.add_argument("--device", metavar="DEVICE", default=None,
                        help="cpu, cuda, cuda:N or mps (default: cuda when a GPU is visible, else cpu)")


PRECISIONS = ("auto", "fp32", "bf16")


def add_precision_argument(parser: argparse.ArgumentParser, default_help: str = "fp32") -> None:
    """``--precision auto|fp32|bf16`` and its hidden, deprecated alias ``--bf16`` (= ``--precision bf16``),
    both into ``args.precision`` (None when neither is given; :func:`jaket.model.device.choose_precision` resolves it)."""
    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="bf16 autocast for the encoder's matrix products (weights, optimizer and scores "
                             "stay fp32), fp32, or auto: bf16 only where the device computes it natively "
                             "(a GPU with bf16, a CPU whose bf16 products are measured at least as fast as "
                             f"fp32), else fp32 (default {default_help})")
    deprecated_alias(parser, "--bf16", "--precision", store_const="bf16")  # the old spelling (docs/cli.md)


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer of at least 0, got {text}")
    return value


def int_list(text: str, least: int = 1) -> str:
    """An argparse type: a comma list of integers of at least ``least`` (kept as written; empty: none)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of integers, got {text!r}") from None
    if values and min(values) < least:  # an empty list is one: "none"
        raise argparse.ArgumentTypeError(f"expected a comma list of integers of at least {least}, got {text!r}")
    return text


def probability(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1], got {text}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number of at least 0."""
    value = float(text)
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, got {text}")
    return value


def deprecation_line(old: str, new: str, what: str = "") -> str:
    """The one stderr line of a deprecated spelling: ``warning: --old is deprecated; use --new``
    (``what``: ``"config key "`` for a job key)."""
    return f"warning: {what}{old} is deprecated; use {new}"


class _DeprecatedAlias(argparse.Action):
    """An old flag kept for one release: hidden from ``--help``, it stores into the new flag's
    destination (with the new flag's type and choices, so the same values are refused the same way)
    and prints :func:`deprecation_line` once per parse."""

    def __init__(self, option_strings, dest, new: str, store_const=None, nargs=None, extend=False, **kwargs):
        self.new = new
        self.store_const = store_const
        self.extend = extend  # the new flag collects its values (nargs="+", action="extend"): so does the alias
        super().__init__(option_strings, dest, nargs=0 if store_const is not None else nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        import sys

        print(deprecation_line(option_string, self.new), file=sys.stderr)
        if self.extend:
            values = [*(getattr(namespace, self.dest, None) or []), *values]
        setattr(namespace, self.dest, self.store_const if self.store_const is not None else values)


def deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, *, store_const=None) -> None:
    """Add ``old`` as a hidden alias of the already added flag ``new`` (same destination, type and
    choices); ``store_const``: the alias takes no value and stores this one (``--bf16`` ->
    ``--precision bf16``)."""
    target = next((a for a in parser._actions if new in a.option_strings), None)
    if target is None:
        raise ValueError(f"deprecated_alias: {new} is not a flag of this parser")
    extra = {} if store_const is not None else {"type": target.type, "choices": target.choices,
                                                 "metavar": target.metavar, "nargs": target.nargs,
                                                 "extend": isinstance(target, argparse._ExtendAction)}
    parser.add_argument(old, dest=target.dest, action=_DeprecatedAlias, new=new, store_const=store_const,
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS, **extra)
