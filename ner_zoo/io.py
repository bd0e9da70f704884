"""File output shared by every writer: one rule, two calls.

Every command that writes a file does::

    check_output(path, inputs=[the files it reads], overwrite=args.overwrite)   # early: before any slow work
    ...
    with atomic_write(path, overwrite=args.overwrite) as f:                     # when the result is ready
        f.write(...)

The rule:

* nothing is replaced unasked: an existing regular file is refused unless ``overwrite`` (``--overwrite``), and
  that is enforced at the moment of writing, not only by the early check: without ``overwrite`` the finished
  temporary file is hard-linked to the target's name (``link`` fails if the name exists, so a file that appeared
  while the command worked, or another writer's, is kept) and then unlinked; with ``overwrite`` it is renamed
  over the target;
* an output never equals or aliases (same file through a symlink, a hard link, ``..``) a file the command reads;
* ``-`` (stdout), ``/dev/stdout``, ``/dev/fd/N`` and anything that is not a regular file (a pipe, a FIFO, a
  device such as ``/dev/full``) is written in place, on the same open file, so ``>>`` appends and ``| cat`` works;
* a regular file is written atomically: a private temporary file from :func:`tempfile.mkstemp` in the target's
  folder becomes the target in one step, and a crash, an error (a full disk), Ctrl-C or SIGTERM leaves the old
  file and no temporary file (a hard kill may leave a hidden ``.<name>.<random>.tmp``, never the target's name);
* an OS error (no space, file too large, permission, a symlink loop) names the output, not a temporary file.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "check_output", "commit", "is_stream", "STDOUT"]

STDOUT = "-"
_FD = re.compile(r"^/(?:dev/fd|proc/(?:self|thread-self|%d)/fd)/(\d+)$" % os.getpid())
_NAMED_FDS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _named(e: OSError, path: object) -> OSError:
    """``e`` naming ``path`` (a failed write, close or temporary file has no useful file name of its own)."""
    out = type(e)(e.errno, e.strerror or str(e), str(path)) if e.errno is not None else OSError(str(e))
    if e.errno is None:
        out.filename = str(path)
    return out


def _fd_of(path: str | os.PathLike[str]) -> int | None:
    """The open file descriptor ``path`` stands for (``-``, ``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``,
    or a symlink to one of them), else None."""
    p = str(path)
    if p == STDOUT:
        return 1
    p = os.path.abspath(p)
    for _ in range(40):  # follow symlinks by hand: the last link of /dev/stdout may be 'pipe:[123]'
        if p in _NAMED_FDS:
            return _NAMED_FDS[p]
        m = _FD.match(p)
        if m:
            return int(m.group(1))
        try:
            target = os.readlink(p)
        except OSError:
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), target))
    return None


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written in place on an open descriptor (stdout, ``/dev/fd/N``), not as a file."""
    return _fd_of(path) is not None


def _stat(path: str | os.PathLike[str]) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:  # a symlink loop, a path through a file, no permission
        raise _named(e, path) from None


def check_output(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = (),
                 overwrite: bool = False, option: str = "--output") -> None:
    """Refuse ``path`` as an output before any work is done, raising a one-line error naming it.

    Args:
        path: the output (``-`` is stdout).
        inputs: every file the command reads; the output may be none of them, under any name.
        overwrite: allow replacing an existing regular file (``--overwrite``).
        option: the option the user gave ``path`` with, for the message.
    """
    from ner_zoo.errors import OutputError

    if _fd_of(path) is not None:
        return
    st = _stat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a directory, expected a file", str(path))
    for inp in inputs:
        if _fd_of(inp) is not None:
            continue
        try:
            other = os.stat(inp)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            also = "" if os.path.abspath(inp) == os.path.abspath(path) else f" ({inp})"
            raise OutputError(f"{path}: {option} is the input file{also}; the output would replace it")
    if stat.S_ISREG(st.st_mode) and not overwrite:
        raise exists_error(path, option)


@contextmanager
def _in_place(opener, path: object) -> Iterator[IO[str]]:
    try:
        f = opener()
    except OSError as e:
        raise _named(e, path) from None
    try:
        yield f
        f.flush()
    except OSError as e:
        raise _named(e, path) from None
    finally:
        try:
            f.close()
        except OSError:
            pass


def exists_error(path: object, option: str = "--output") -> Exception:
    from ner_zoo.errors import OutputError

    return OutputError(f"{path}: exists; pass --overwrite to replace it, or choose another {option}")


def commit(tmp: str | os.PathLike[str], target: str | os.PathLike[str], overwrite: bool,
           option: str = "--output") -> None:
    """``tmp`` (a finished file in ``target``'s folder) becomes ``target`` in one step: renamed over it with
    ``overwrite``, else linked to its name, which fails if that name exists (then ``tmp`` is left to the caller).

    A file system without hard links (``EPERM``/``ENOTSUP``/``EXDEV``...) claims the name with an exclusive create
    instead, then renames over the claimed, empty file."""
    if overwrite:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise exists_error(target, option) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            raise exists_error(target, option) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


@contextmanager
def atomic_write(path: str | os.PathLike[str], encoding: str = "utf-8", overwrite: bool = False,
                 option: str = "--output") -> Iterator[IO[str]]:
    """Write ``path``: a regular file atomically, a stream or device in place (see the module's rule).

    Without ``overwrite`` an existing file is never replaced, also one that appears while the caller writes
    (``OutputError`` naming it; the file is kept); files rewritten by design (a run's record) pass
    ``overwrite=True``. A regular file keeps its permissions (a new one gets ``0666 & ~umask``); a symlink is
    followed (the file it points to is replaced, the link stays). Aliasing is :func:`check_output`'s business.
    """
    fd = _fd_of(path)
    if fd is not None:  # the same open file: `>>` appends, a pipe gets the bytes; stdout's own buffer first
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        with _in_place(lambda: os.fdopen(os.dup(fd), "w", encoding=encoding, newline="\n"), path) as f:
            yield f
        return
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a directory, expected a file", str(path))
    if st is not None and stat.S_ISREG(st.st_mode) and not overwrite:  # the early check, for callers without one
        raise exists_error(path, option)
    if st is not None and not stat.S_ISREG(st.st_mode):  # a FIFO or a device (/dev/full): errors must surface
        with _in_place(lambda: open(path, "w", encoding=encoding, newline="\n"), path) as f:
            yield f
        return
    real = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode()
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    except OSError as e:
        raise _named(e, path) from None
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="\n") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        commit(tmp, real, overwrite, option)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and (e.filename is None or str(e.filename) == tmp):
            raise _named(e, path) from None
        raise
