"""What the benchmarks with ``--threads`` and ``--random-seed`` do first, in one place."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch


def apply_threads_and_seed(args: argparse.Namespace) -> None:
    """``--threads`` (torch's intra-op threads; none given = torch's default) and ``--random-seed``
    (torch's global generator)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.random_seed)


@contextmanager
def jaket_cache(folder: str | Path) -> Iterator[Path]:
    """``JAKET_CACHE`` set to ``folder`` inside the block (the text-vector and memory caches live
    there), restored afterwards."""
    previous = os.environ.get("JAKET_CACHE")
    os.environ["JAKET_CACHE"] = str(folder)
    try:
        yield Path(folder)
    finally:
        if previous is None:
            os.environ.pop("JAKET_CACHE", None)
        else:
            os.environ["JAKET_CACHE"] = previous
