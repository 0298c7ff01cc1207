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
    """``--precision auto|fp32|bf16`` and its alias ``--bf16`` (= ``--precision bf16``), both into
    ``args.precision`` (None when neither is given; :func:`jaket.model.device.choose_precision` resolves it)."""
    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="bf16 autocast for the encoder's matrix products (weights, optimizer and scores "
                             "stay fp32), fp32, or auto: bf16 only where the device computes it natively "
                             "(a GPU with bf16, a CPU whose bf16 products are measured at least as fast as "
                             f"fp32), else fp32 (default {default_help})")
    parser.add_argument("--bf16", dest="precision", action="store_const", const="bf16",
                        help="the same as --precision bf16 (2-3x faster on CPUs with AMX / AVX512-BF16 and "
                             "on GPUs; many times slower on CPUs without: --precision auto avoids that)")


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


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
