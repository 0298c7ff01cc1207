"""Writing files and folders so that readers see the old version or the new one, never half of either.

Every writer of jaket goes through this module: the content goes to a temporary file (or folder)
beside the target, is flushed to disk (``fsync``) and then renamed over the target with
``os.replace``, which is atomic on POSIX file systems. A process killed mid-write leaves the old
target intact and at most a hidden ``.NAME.tmp-*`` file.

Permissions are those a plain ``open(path, "w")`` would give: a new file gets ``0o666`` less the
umask (``tempfile`` would make it private, ``0o600``), a replaced file keeps its mode; a new folder
gets ``0o777`` less the umask.

Every JSON file is strict JSON (RFC 8259): :func:`strict_json` turns NaN and infinities, which
Python's ``json`` would write as the non-standard ``NaN`` / ``Infinity``, into ``null``, and
:func:`write_json` logs a warning naming the file and the figures that could not be computed.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import numbers
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import IO, Any, Callable

log = logging.getLogger(__name__)

#: replaced figures named in :func:`write_json`'s warning before "... and N more"
MAX_NAMED = 5


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but only a fallback)
    os.umask(mask)
    return mask


def _file_mode(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)  # open(..., "w") on an existing file keeps it
    except OSError:
        return 0o666 & ~current_umask()


def fsync_directory(directory: str | Path) -> None:
    """Make a rename inside ``directory`` durable (ignored where folders cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _naming(error: OSError, target: Path) -> OSError:
    """``error`` of making a temporary file or folder beside ``target``, naming ``target`` (the path
    the user gave), not the temporary name no one asked for."""
    return type(error)(error.errno, error.strerror, str(target))


@contextmanager
def atomic_path(target: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``target`` for a writer that wants a file name (safetensors,
    matplotlib); when the block succeeds the file written there replaces ``target``. ``suffix``
    keeps an extension some writers read the format from (``".png"``)."""
    target = Path(target)
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder; name a file to write", str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(target)
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.tmp-", suffix=suffix)
    except OSError as error:
        raise _naming(error, target) from None
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(target.parent)


@contextmanager
def atomic_open(target: str | Path, mode: str = "w", encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO[Any]]:
    """``open(target, mode)`` whose result replaces ``target`` only when the block succeeds
    (``mode`` ``"w"`` or ``"wb"``)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes a whole file: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(target) as temporary:
        if mode == "wb":
            with open(temporary, "wb") as handle:
                yield handle
        else:
            with open(temporary, "w", encoding=encoding, newline=newline) as handle:
                yield handle


def write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_open(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    with atomic_open(path, "w", newline="\n") as handle:
        handle.write(text)
    return Path(path)


def write_lines(path: str | Path, lines: Iterable[str]) -> Path:
    """One string per line, each followed by ``\\n`` (streams: the lines are never all in memory; an
    item may hold several lines joined by ``\\n``, the last without its own).

    A file whose text would begin with U+FEFF (an id that starts with it, say) gets a byte order
    mark written first: every reader here (and ``utf-8-sig``) drops one leading mark, so the
    text's own character is read back rather than taken for the mark."""
    with atomic_open(path, "w", newline="\n") as handle:
        batch: list[str] = []
        size = 0
        lines = iter(lines)
        first = next(lines, None)
        if first is not None:
            if first.startswith("\ufeff"):
                handle.write("\ufeff")
            lines = chain((first,), lines)
        for line in lines:
            batch.append(line)
            size += len(line)
            if len(batch) == 4096 or size > 1 << 20:  # one write a batch: a million lines are a second faster
                batch.append("")
                handle.write("\n".join(batch))
                batch.clear()
                size = 0
        if batch:
            batch.append("")
            handle.write("\n".join(batch))
    return Path(path)


def copy_file(source: str | Path, target: str | Path) -> Path:
    """A copy of ``source`` at ``target``, appearing whole or not at all."""
    with atomic_path(target) as temporary:
        shutil.copyfile(source, temporary)
    return Path(target)


def strict_json(value: Any, replaced: list[str] | None = None, where: str = "") -> Any:
    """``value`` ready for strict JSON: every NaN / infinity becomes ``None`` (``null``), tuples and
    sets lists, numpy scalars and arrays (anything with ``dtype`` and ``tolist``) plain numbers and
    lists. ``replaced`` (when given) collects where each NaN / infinity was, as a key path such as
    ``summary.lm.std`` or ``values[2]`` below ``where``. Other values are returned unchanged."""
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {k: strict_json(v, replaced, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [strict_json(v, replaced, f"{where}[{i}]") for i, v in enumerate(items)]
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # numpy / torch scalars and arrays
        return strict_json(value.tolist(), replaced, where)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number):
            return number
        if replaced is not None:
            replaced.append(where or "(the value)")
        return None
    return value


def json_text(data: Any, indent: int | None = 2, default: Callable[[Any], Any] | None = None,
              sort_keys: bool = False, ensure_ascii: bool = True, replaced: list[str] | None = None) -> str:
    """``data`` as strict JSON text (:func:`strict_json`; ``default`` converts other objects, as in
    :func:`json.dumps`). ``replaced`` collects where NaN / infinities were written as ``null``."""
    if default is not None:
        def strict_default(value: Any) -> Any:
            return strict_json(default(value), replaced, "(converted value)")
    else:
        strict_default = None
    return json.dumps(strict_json(data, replaced), indent=indent, default=strict_default,
                      sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=False)


def write_json(path: str | Path, data: Any, indent: int | None = 2,
               default: Callable[[Any], Any] | None = None, sort_keys: bool = False) -> Path:
    """``data`` as strict JSON (indented unless ``indent`` is None), ending with a newline.

    A NaN or infinity (a figure that could not be computed, e.g. a mean over nothing) is written as
    ``null`` (:func:`strict_json`) and a warning names the file and where those figures are."""
    replaced: list[str] = []
    text = json_text(data, indent=indent, default=default, sort_keys=sort_keys, replaced=replaced)
    with atomic_open(path, "w", newline="\n") as handle:
        handle.write(text)
        handle.write("\n")
    if replaced:
        named = ", ".join(replaced[:MAX_NAMED]) + (f" and {len(replaced) - MAX_NAMED} more"
                                                     if len(replaced) > MAX_NAMED else "")
        log.warning("%s: %d figure(s) could not be computed (NaN or infinite) and are written as null: %s",
                    path, len(replaced), named)
    return Path(path)


def _fsync_tree(directory: Path) -> None:
    for root, _, files in os.walk(directory):
        for name in files:
            with open(os.path.join(root, name), "rb") as handle:
                os.fsync(handle.fileno())
        fsync_directory(root)


@contextmanager
def atomic_directory(target: str | Path, prefix: str | None = None, durable: bool = False
                     ) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; when the block succeeds it replaces
    ``target`` (an older ``target`` is moved aside first, then deleted); when it fails it is removed
    and ``target`` is left as it was. ``durable``: every file is flushed to disk before the rename
    (a folder that has its name is then complete even after a power cut)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = prefix if prefix is not None else f".{target.name}"
    try:
        temporary = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{prefix}.tmp-"))
    except OSError as error:
        raise _naming(error, target) from None
    os.chmod(temporary, 0o777 & ~current_umask())  # mkdtemp makes it private
    try:
        yield temporary
        if durable:
            _fsync_tree(temporary)
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{prefix}.old-"))
            os.replace(target, old / target.name)
        os.replace(temporary, target)
        fsync_directory(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
