"""What the benchmarks with ``--threads`` and ``--random-seed`` do first, in one place."""

from __future__ import annotations

import argparse

import torch


def apply_threads_and_seed(args: argparse.Namespace) -> None:
    """``--threads`` (torch's intra-op threads; none given = torch's default) and ``--random-seed``
    (torch's global generator)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.random_seed)
