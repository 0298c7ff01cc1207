"""The results tooling is the top-level package ``results/`` (run as ``python -m results.NAME``
from the repository root): importable here whatever the working directory."""

import sys
from pathlib import Path

REPO = str(Path(__file__).resolve().parents[2])
if REPO not in sys.path:
    sys.path.insert(0, REPO)
