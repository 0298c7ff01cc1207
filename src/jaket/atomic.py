"""Writing a whole folder so that readers see the old one or the new one, never half of either."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_directory(target: str | Path, prefix: str | None = None) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; when the block succeeds it replaces
    ``target`` (an older ``target`` is moved aside first, then deleted); when it fails it is removed
    and ``target`` is left as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = prefix if prefix is not None else f".{target.name}"
    temporary = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{prefix}.tmp-"))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o777 & ~umask)  # mkdtemp makes it private; the result is an ordinary folder
    try:
        yield temporary
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{prefix}.old-"))
            os.replace(target, old / target.name)
        os.replace(temporary, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
