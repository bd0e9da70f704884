"""File output shared by every layer: :func:`atomic_write` (nothing is ever half-written)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["atomic_write"]


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def atomic_write(path: str | os.PathLike[str], encoding: str = "utf-8") -> Iterator[IO[str]]:
    """Open a temporary file next to ``path``; on success it replaces ``path`` in one step.

    A crash or an exception while writing leaves any previous ``path`` untouched and no temporary file.
    The new file keeps the old one's permissions (a new file gets the usual ``0666 & ~umask``). A symlink is
    followed (the file it points to is replaced, the link stays); a device node, FIFO or other non-regular
    file (``/dev/stdout``, ``/dev/full``) is written in place, so write errors surface and nothing replaces it.
    """
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory, expected a file", str(path))
        try:
            with open(path, "w", encoding=encoding, newline="\n") as f:
                yield f
        except OSError as e:  # name the target: a failed write or close has no file name of its own
            raise OSError(e.errno, e.strerror, str(path)) from None
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _new_file_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="\n") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
