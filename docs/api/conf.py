"""Sphinx configuration of jaket's API reference (``make docs``): autodoc over the public API, the
names ``jaket/__init__.py`` exports. Built offline, with warnings as errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import jaket  # noqa: E402

project = "jaket"
release = version = jaket.__version__
extensions = ["sphinx.ext.autodoc"]
# the public API only: members that are documented, in the source's order; the type hints in the
# description, where they read better than in a long signature
autodoc_default_options = {"members": True, "member-order": "bysource", "undoc-members": False}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
# our docstrings name internal objects with :func:/:class: roles; those are not in the reference
# (internal on purpose), so an unresolved cross-reference is plain text, not a warning
nitpicky = False
html_theme = "alabaster"
html_static_path: list[str] = []
exclude_patterns = ["_build"]
