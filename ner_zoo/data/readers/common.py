"""Pieces shared by the corpus readers: the result type, text decoding and path expansion."""

from __future__ import annotations

import functools
import gc
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from ner_zoo.data.schema import Sentence
from ner_zoo.data.tagging import TagScheme
from ner_zoo.errors import DataFormatError

F = TypeVar("F", bound=Callable)


def gc_paused(fn: F) -> F:
    """Run ``fn`` with the cyclic garbage collector off: readers build millions of small acyclic objects,
    and collections triggered by them took about half of the reading time."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper  # type: ignore[return-value]


class SentenceList(list):
    """A plain ``list`` of :class:`Sentence` that also carries what the reader learned about the file.

    Attributes:
        path: the file (or folder) read.
        scheme: tag scheme of the label column (detected or given); ``None`` for span-annotated or
            unlabelled input.
        encoding: the encoding the text was decoded with.
        notes: reader-specific facts, e.g. ``{"duplicates_dropped": 119}``.
    """

    def __init__(self, sentences: Iterable[Sentence] = (), *, path: object = None,
                 scheme: TagScheme | None = None, encoding: str | None = None, notes: dict | None = None):
        super().__init__(sentences)
        self.path = path
        self.scheme = scheme
        self.encoding = encoding
        self.notes = dict(notes or {})


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``, read once (so a pipe or ``/dev/stdin`` works); a missing path or a folder is a
    :class:`DataFormatError`."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataFormatError("file not found", path) from None
    except IsADirectoryError:
        raise DataFormatError("is a directory, expected a file", path) from None


def read_text(path: str | os.PathLike[str], encoding: str | None = None, data: bytes | None = None
              ) -> tuple[str, str]:
    """Read a whole text file with line endings normalised to ``\\n``.

    Args:
        path: the file.
        encoding: explicit codec; ``None`` tries UTF-8 (a BOM is dropped; a UTF-16 byte-order mark selects
            UTF-16) and falls back to Latin-1, which decodes any byte sequence, with a ``UnicodeWarning``
            naming the file and line.
        data: the file's bytes when already read (a pipe can be read only once); ``path`` then only names it.

    Returns:
        ``(text, encoding_used)``.
    """
    if data is None:
        data = read_bytes(path)
    if encoding is None and data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encoding = "utf-16"
    if encoding is None:
        try:
            text, used = data.decode("utf-8-sig"), "utf-8"
        except UnicodeDecodeError as e:
            text, used = data.decode("latin-1"), "latin-1"
            line = data.count(b"\n", 0, e.start) + 1
            warnings.warn(f"{path}:{line}: byte {data[e.start]:#04x} is not UTF-8; the whole file is read as "
                          "Latin-1 (set the encoding to utf-8, e.g. --data.init_args.encoding utf-8, to make this an error)", UnicodeWarning, stacklevel=2)
    else:
        try:
            text, used = data.decode(encoding), encoding
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise DataFormatError(f"cannot decode byte {data[e.start]:#04x} as {encoding}", path, line,
                                  "leave the encoding unset to fall back to Latin-1") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, used


def expand_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], pattern: str) -> list[Path]:
    """A file, a folder (its files matching ``pattern``, sorted) or an iterable of files -> list of files."""
    if isinstance(paths, (str, os.PathLike)):
        p = Path(paths)
        if p.is_dir():
            files = sorted(f for f in p.glob(pattern) if f.is_file())
            if not files:
                raise DataFormatError(f"no files matching {pattern!r} in this folder", p)
            return files
        if not p.exists():
            raise DataFormatError("file not found", p)
        return [p]
    return [Path(f) for f in paths]
