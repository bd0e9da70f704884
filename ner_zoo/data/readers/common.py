"""Pieces shared by the corpus readers: the result type, text decoding and path expansion."""

from __future__ import annotations

import functools
import gc
import os
import re
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


#: the option that sets the encoding of a data module's files, named in the readers' messages; commands with an
#: ``--encoding`` of their own (predict, score, data stats) pass ``encoding_option="--encoding"`` to the readers
DATA_ENCODING_OPTION = "--data.init_args.encoding"
#: a valid multi-byte UTF-8 character (a file holding one and a non-UTF-8 byte has mixed encodings)
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


#: the first bytes of compressed, archive and other binary files that are never text (``file``'s magic numbers)
MAGIC = {b"\x1f\x8b": "gzip-compressed", b"\xfd7zXZ\x00": "xz-compressed",
         b"(\xb5/\xfd": "zstd-compressed", b"PK\x03\x04": "a zip archive (or a torch checkpoint)",
         b"7z\xbc\xaf'\x1c": "a 7z archive", b"%PDF-": "a PDF document", b"\x89PNG": "a PNG image",
         b"\x7fELF": "a program"}
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13}  # besides tab, LF, form feed, CR


def _utf8(sample: bytes) -> bool:
    """Whether ``sample`` is UTF-8 (a character cut at its end allowed)."""
    import codecs

    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        return True
    except UnicodeDecodeError:
        return False


def refuse_binary(head: bytes, path: object) -> None:
    """Compressed or binary input is one :class:`DataFormatError` (never decoded as Latin-1 and read as text):
    a known magic number, or in the first 4 KiB over 10 % control bytes or a NUL in bytes that are not UTF-8 (a
    stray NUL or control character inside a text file is kept: it is data). UTF-16 text (with its byte-order
    mark) is text. A ``.gz`` file is not decompressed on the fly: the message says how."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return
    found = [what for magic, what in MAGIC.items() if head.startswith(magic)]
    if head[:3] == b"BZh" and head[4:10] == b"1AY&SY":
        found.append("bzip2-compressed")
    for what in found:
        if what:
            tool = what.split("-")[0]
            hint = (f"compressed input is not read: decompress it first ({tool} -dc FILE > FILE.txt)"
                    if "compressed" in what else "give a text file (UTF-8)")
            raise DataFormatError(f"binary input: the file is {what}, not text", path, hint=hint)
    sample = head[:4096]
    if len(sample) >= 16 and (sum(b in _CONTROL for b in sample) > 0.1 * len(sample)
                              or b"\x00" in sample and not _utf8(sample)):
        raise DataFormatError("binary input: its first bytes are control characters and NULs, not text", path,
                              hint="give a text file (UTF-8)")


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``, read once (so a pipe or ``/dev/stdin`` works); a missing path or a folder is a
    :class:`DataFormatError`."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataFormatError("file not found", path) from None
    except IsADirectoryError:
        raise DataFormatError("is a directory, expected a file", path) from None


def read_text(path: str | os.PathLike[str], encoding: str | None = None, data: bytes | None = None,
              encoding_option: str = DATA_ENCODING_OPTION) -> tuple[str, str]:
    """Read a whole text file with line endings normalised to ``\\n``.

    Args:
        path: the file.
        encoding: explicit codec; ``None`` tries UTF-8 (a BOM is dropped; a UTF-16 byte-order mark selects
            UTF-16) and falls back to Latin-1, which decodes any byte sequence, with a ``UnicodeWarning``
            naming the file and line.
        data: the file's bytes when already read (a pipe can be read only once); ``path`` then only names it.
        encoding_option: the option that sets ``encoding`` where the caller reads it from, named in the messages.

    Returns:
        ``(text, encoding_used)``.
    """
    if data is None:
        data = read_bytes(path)
    refuse_binary(data[:4096], path)
    if encoding is None and data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encoding = "utf-16"
    if encoding is None:
        try:
            text, used = data.decode("utf-8-sig"), "utf-8"
        except UnicodeDecodeError as e:
            bad = data.count(b"\n", 0, e.start) + 1
            utf8 = _UTF8_MULTIBYTE.search(data)
            if utf8 is not None:  # one encoding per file: never decode the UTF-8 part as Latin-1 (mojibake)
                good = data.count(b"\n", 0, utf8.start()) + 1
                raise DataFormatError(
                    f"mixed encodings: byte {data[e.start]:#04x} is not UTF-8, but line {good} holds UTF-8 "
                    f"({utf8.group().decode('utf-8')!r})", path, bad,
                    f"convert the file to UTF-8, or pass {encoding_option} latin-1 to read every byte as Latin-1"
                ) from None
            text, used = data.decode("latin-1"), "latin-1"
            warnings.warn(f"{path}:{bad}: byte {data[e.start]:#04x} is not UTF-8; the whole file is read as "
                          f"Latin-1 (pass {encoding_option} utf-8 to make this an error)", UnicodeWarning,
                          stacklevel=2)
    else:
        try:
            text, used = data.decode(encoding), encoding
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise DataFormatError(f"cannot decode byte {data[e.start]:#04x} as {encoding}", path, line,
                                  f"pass {encoding_option} latin-1 to read every byte as Latin-1") from None
        except LookupError:
            raise DataFormatError(f"unknown encoding {encoding!r}", path,
                                  hint=f"{encoding_option} takes a Python codec name, e.g. utf-8 or latin-1") from None
        if text.startswith("\ufeff"):
            text = text[1:]
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
