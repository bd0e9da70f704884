"""Character-level word encoders: a char BiLSTM (Lample et al., 2016) and a char CNN (Ma & Hovy, 2016).

Both take character ids ``[B, L, C]`` (0 = padding; a word's characters left-aligned, padding words all
zero) and return one vector per word, ``[B, L, output_dim]``, zero for padding words. Only real words
are encoded: they are gathered from the batch first, so cost follows the number of words, not ``B*L``
(the char BiLSTM without dropout encodes each distinct word of a batch once, found by :func:`unique_rows`).
Traced for ONNX (:func:`exporting`), every word slot is encoded at full width instead, so no batch's word count
or word length is frozen into the graph; the vectors are the same.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
from torch import nn

from ner_zoo.modules.precision import autocast_off, to_fp32
from ner_zoo.modules.rnn import bilstm_final
from ner_zoo.ranges import PositiveInt, Probability, check_ranges


def exporting() -> bool:
    """Traced (``torch.onnx.export`` traces): data-dependent shapes would become constants of the graph."""
    return torch.jit.is_tracing()


def _real_words(chars: torch.Tensor, padding_idx: int):
    """``(flat word index [N], char ids [N, C'], lengths [N])`` of the non-empty words, ``C'`` = longest.
    When :func:`exporting`: ``(None, every slot [B*L, C], lengths [B*L])`` (0 for empty slots)."""
    if chars.dim() != 3:
        raise ValueError(f"char ids must be [batch, words, chars], got shape {tuple(chars.shape)}")
    flat = chars.reshape(-1, chars.shape[-1])
    lengths = (flat != padding_idx).sum(1)
    if exporting():
        return None, flat, lengths
    index = lengths.nonzero().squeeze(1)
    lengths = lengths[index]
    width = int(lengths.max()) if index.numel() else 0
    return index, flat[index, :width], lengths


def _scatter_words(chars: torch.Tensor, index: torch.Tensor | None, vectors: torch.Tensor, dim: int,
                   lengths: torch.Tensor | None = None) -> torch.Tensor:
    B, L = chars.shape[:2]
    if index is None:  # exporting: a vector per slot; empty slots (``lengths`` 0) become zero
        return torch.where((lengths > 0).unsqueeze(1), vectors, 0.0).view(B, L, dim)
    out = vectors.new_zeros(B * L, dim)
    out[index] = vectors
    return out.view(B, L, dim)


def unique_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(x, dim=0, return_inverse=True)`` for ``x [N, C]`` of non-negative integers (char ids): the
    same rows in the same (lexicographic) order and the same inverse, 2.5-4x faster on CPU for a batch's word
    slots (``unique(dim=0)`` compares neighbouring rows one tensor call at a time). Each run of ``63 // bits``
    columns is packed into one int64 key, most significant first, so keys sort as the rows do; the keys are
    ranked column by column with 1-D ``unique``, the ranks kept below ``N``."""
    N, C = x.shape
    if N == 0:
        return torch.unique(x, dim=0, return_inverse=True)
    bits = max(1, int(x.max()).bit_length())
    per = max(1, 63 // bits)
    cols = -(-C // per)
    keys = (nn.functional.pad(x, (0, cols * per - C)).view(N, cols, per)
            << torch.arange((per - 1) * bits, -1, -bits, device=x.device)).sum(2)
    rank = torch.unique(keys[:, 0], return_inverse=True)[1]
    for c in range(1, cols):
        values, inverse = torch.unique(keys[:, c], return_inverse=True)
        rank = torch.unique(rank * len(values) + inverse, return_inverse=True)[1]
    rows = x.new_empty(int(rank.max()) + 1, C).index_copy_(0, rank, x)  # equal rows share a rank
    return rows, rank


class CharBiLSTM(nn.Module):
    """Char embeddings -> BiLSTM; a word is its final forward and backward states concatenated.

    Args:
        num_chars: size of the character vocabulary (id 0 is padding).
        char_dim: character embedding size.
        hidden: LSTM size per direction; ``output_dim = 2 * hidden``.
        dropout: dropout on the character embeddings.
        padding_idx: the padding char id.
    """

    def __init__(self, num_chars: int, char_dim: PositiveInt = 25, hidden: PositiveInt = 25, dropout: Probability = 0.0,
                 padding_idx: int = 0):
        super().__init__()
        check_ranges(CharBiLSTM.__init__, locals())
        self.padding_idx = padding_idx
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=padding_idx)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(char_dim, hidden, batch_first=True, bidirectional=True)
        self.output_dim = 2 * hidden
        self.half_on_cuda = False  # set by ner_zoo.training.HalfPrecisionLSTM: cuDNN LSTM in the autocast type

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """``[B, L, C]`` char ids -> ``[B, L, 2 * hidden]`` (fp32, or the autocast type with ``half_on_cuda``
        on CUDA; zero rows for padding words)."""
        distinct = not (self.training and self.dropout.p > 0)  # no dropout: a word's vector is the same everywhere
        if distinct and self.padding_idx == 0 and not exporting():
            return self._distinct_words(chars)
        index, words, lengths = _real_words(chars, self.padding_idx)
        if index is not None and index.numel() == 0:
            return self.embedding.weight.new_zeros(*chars.shape[:2], self.output_dim)
        inverse, real = None, lengths
        if index is None:  # exporting: empty slots run over one padding char, then are zeroed
            lengths = lengths.clamp_min(1)
        elif distinct:  # so encode each distinct word once
            words, inverse = torch.unique(words, dim=0, return_inverse=True)
            lengths = (words != self.padding_idx).sum(1)
        vectors = self._encode(words, lengths)
        if inverse is not None:
            vectors = vectors[inverse]
        return _scatter_words(chars, index, vectors, self.output_dim, real)

    def _encode(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``[N, C']`` char ids of words with ``lengths [N]`` (at least 1) -> ``[N, 2 * hidden]``."""
        x = self.dropout(self.embedding(words))
        half = self.half_on_cuda and x.is_cuda and torch.is_autocast_enabled("cuda")
        with nullcontext() if half else autocast_off(x):  # no bf16 LSTM kernels on many CPUs
            return bilstm_final(self.lstm, x if half else to_fp32(x), lengths)

    def _distinct_words(self, chars: torch.Tensor) -> torch.Tensor:
        """Each distinct word of the batch encoded once: :func:`unique_rows` of every word slot (rows sorted, so
        with padding id 0 the all-padding row of empty slots, if any, comes first and is left out), then one
        ``index_select`` hands each slot its word's vector (zero for an empty slot). One pass over the slots
        instead of picking the real words first and scattering back."""
        B, L, C = chars.shape
        if chars.numel() == 0:
            return self.embedding.weight.new_zeros(B, L, self.output_dim)
        words, inverse = unique_rows(chars.reshape(B * L, C))
        lengths = (words != self.padding_idx).sum(1)
        first, width = torch.stack([lengths[0], lengths.max()]).tolist()  # one host sync
        if width == 0:  # no real word
            return self.embedding.weight.new_zeros(B, L, self.output_dim)
        skip = int(first == 0)  # the empty slots' row
        vectors = self._encode(words[skip:, :width], lengths[skip:])
        if skip:
            vectors = torch.cat([vectors.new_zeros(1, vectors.shape[1]), vectors])
        return vectors.index_select(0, inverse).view(B, L, -1)


class CharCNN(nn.Module):
    """Char embeddings -> 1-D convolution -> max over the word's characters.

    Args:
        num_chars: size of the character vocabulary (id 0 is padding).
        char_dim: character embedding size.
        filters: number of filters; ``output_dim = filters``.
        kernel: window width (odd; the word is zero-padded by ``kernel // 2`` on both sides).
        dropout: dropout on the character embeddings.
        tanh: apply ``tanh`` to the convolution (as in Ma & Hovy's implementation) before pooling.
        padding_idx: the padding char id.
    """

    def __init__(self, num_chars: int, char_dim: PositiveInt = 30, filters: PositiveInt = 30, kernel: PositiveInt = 3,
                 dropout: Probability = 0.0, tanh: bool = True, padding_idx: int = 0):
        super().__init__()
        check_ranges(CharCNN.__init__, locals())
        if kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"kernel must be a positive odd number, got {kernel}")
        self.padding_idx = padding_idx
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=padding_idx)
        self.dropout = nn.Dropout(dropout)
        self.conv = nn.Conv1d(char_dim, filters, kernel, padding=kernel // 2)
        self.tanh = tanh
        self.output_dim = filters

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """``[B, L, C]`` char ids -> ``[B, L, filters]`` (zero rows for padding words)."""
        index, words, lengths = _real_words(chars, self.padding_idx)
        if index is not None and index.numel() == 0:
            return self.embedding.weight.new_zeros(*chars.shape[:2], self.output_dim)
        x = self.dropout(self.embedding(words))  # [N, C', D]; padding chars embed to 0
        h = self.conv(x.transpose(1, 2))  # [N, F, C']
        if self.tanh:
            h = torch.tanh(h)
        inside = torch.arange(words.shape[1], device=words.device) < lengths.unsqueeze(1)  # [N, C']
        h = h.masked_fill(~inside.unsqueeze(1), float("-inf")).amax(2)
        return _scatter_words(chars, index, h, self.output_dim, lengths)
