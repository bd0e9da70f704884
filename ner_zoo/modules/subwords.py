"""Words -> sub-word model rows, torch-free (numpy, the ``tokenizers`` library): what the transformer encoder
does before its network runs. One implementation for both runtimes: :class:`ner_zoo.modules.transformer.
TransformerEncoder` (PyTorch) and the ONNX tagger (:mod:`ner_zoo.api.onnx_transformer`), so they cannot drift.

* :func:`encode_words`: each word list through the fast tokenizer (``is_pretokenized``, no special tokens).
* :func:`align`: the per-word cap (a word keeps its first ``cap`` sub-words) and the unknown-token fallback (a
  word without sub-words gets ``unk_id``); one model row ``prefix + left-context + target + right-context +
  suffix`` per sentence, the context trimmed symmetrically (:func:`plan_rows`), or, for a target longer than the
  ``budget``, overlapping windows of ``budget`` sub-words every ``stride`` (then without context); each target
  sub-word is read from the row where it is most central (ties: the first row).
* :class:`DocumentContext`: the neighbouring sentences a sentence reads as context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Layout:
    """The constants of an encoder's rows: special ids around each row, the unknown id, the per-word cap, the
    room for sub-words in a row (model maximum minus specials) and the window stride."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    unk_id: int
    cap: int
    budget: int
    stride: int


@dataclass
class Alignment:
    """numpy index arrays of one batch; per target sub-word (in word order) unless said otherwise."""

    input_ids: np.ndarray  # model rows [R, W] (prefix + sub-words + suffix), -1 on padding
    src_row: np.ndarray  # row and column of the model output it is read from
    src_col: np.ndarray
    seq: np.ndarray  # sentence
    pos: np.ndarray  # position among the sentence's sub-words
    word: np.ndarray  # word in the sentence
    word_index: np.ndarray  # word in the batch (flat)
    rank: np.ndarray  # rank inside its word (0: first sub-word)
    n_words: np.ndarray  # per sentence
    n_sub: np.ndarray  # per sentence

    @property
    def first(self) -> np.ndarray:
        return self.rank == 0


def encode_words(tokenizer, sequences: Sequence[Sequence[str]]) -> tuple[list[list[int]], list[list[int]]]:
    """Sub-word ids and the word index of each sub-word, per word list; ``tokenizer`` is a
    ``tokenizers.Tokenizer`` (a transformers fast tokenizer's ``backend_tokenizer``, or one read from
    ``tokenizer.json``), used without truncation or padding."""
    if tokenizer.truncation is not None:
        tokenizer.no_truncation()
    if tokenizer.padding is not None:
        tokenizer.no_padding()
    enc = tokenizer.encode_batch([list(s) for s in sequences], is_pretokenized=True, add_special_tokens=False)
    return [e.ids for e in enc], [e.word_ids for e in enc]


def _ints(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def subwords(ids_rows: list[list[int]], word_rows: list[list[int]], n_words: np.ndarray, cap: int,
             unk_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat sub-word ids, global word index and rank inside the word, sorted by word; cap and fallback applied."""
    ids = _ints([i for row in ids_rows for i in row])
    offsets = np.cumsum(n_words) - n_words
    word = _ints([w for row in word_rows for w in row])
    seq = np.repeat(np.arange(len(ids_rows)), [len(r) for r in ids_rows])
    gw = offsets[seq] + word
    new = np.ones(len(gw), dtype=bool)
    new[1:] = gw[1:] != gw[:-1]
    run = np.cumsum(new) - 1
    rank = np.arange(len(gw)) - np.flatnonzero(new)[run]
    keep = rank < cap
    ids, gw, rank = ids[keep], gw[keep], rank[keep]
    missing = np.flatnonzero(np.bincount(gw, minlength=int(n_words.sum())) == 0)
    ids = np.concatenate([ids, np.full(len(missing), unk_id, dtype=np.int64)])
    gw, rank = np.concatenate([gw, missing]), np.concatenate([rank, np.zeros(len(missing), dtype=np.int64)])
    order = np.argsort(gw * cap + rank, kind="stable")
    return ids[order], gw[order], rank[order]


def plan_rows(n_sub, budget: int, stride: int) -> list[tuple[int, int, int]]:
    """Model rows as ``(sequence, first sub-word, width)`` from per-sequence left/target/right counts."""
    rows = []
    for b, (nl, nt, nr) in enumerate(np.asarray(n_sub).tolist()):
        if nt <= budget:
            room = budget - nt
            kl = min(nl, room // 2)
            kr = min(nr, room - kl)
            kl = min(nl, room - kr)
            rows.append((b, nl - kl, kl + nt + kr))
        else:  # windows over the target alone
            starts = list(range(0, nt - budget, stride)) + [nt - budget]
            rows += [(b, nl + s, budget) for s in starts]
    return rows


def align(tokenizer, layout: Layout, sentences: Sequence[Sequence[str]], left: Sequence[Sequence[str]],
          right: Sequence[Sequence[str]]) -> Alignment:
    """Model rows of target ``sentences`` (word lists) with ``left``/``right`` context words per sentence, and
    the row/column each target sub-word is read from."""
    bsz = len(sentences)
    full = [list(a) + list(s) + list(c) for a, s, c in zip(left, sentences, right)]
    n_words = _ints([len(s) for s in full])
    ids, gw, rank = subwords(*encode_words(tokenizer, full), n_words, layout.cap, layout.unk_id)
    # segment of each sub-word: 0 left context, 1 target, 2 right context
    ends = np.cumsum(n_words)
    seq = np.searchsorted(ends, gw, side="right")
    word = gw - (ends - n_words)[seq]
    nl_words, nt_words = _ints([len(a) for a in left]), _ints([len(s) for s in sentences])
    segment = (word >= nl_words[seq]).astype(np.int64) + (word >= (nl_words + nt_words)[seq])
    n_sub = np.bincount(seq * 3 + segment, minlength=3 * bsz).reshape(bsz, 3)
    s_off = np.cumsum(n_sub.sum(1)) - n_sub.sum(1)

    # model rows; each target sub-word is read from the row where it is most central (ties: first row)
    rows = plan_rows(n_sub, layout.budget, layout.stride)
    r_seq, r_start, r_width = (_ints(c) for c in zip(*rows))
    row_of = np.repeat(np.arange(len(rows)), r_width)
    j = np.arange(len(row_of)) - (np.cumsum(r_width) - r_width)[row_of]  # position in the row
    flat = (s_off[r_seq] + r_start)[row_of] + j  # index into the flat sub-word arrays
    centrality = np.minimum(j, r_width[row_of] - 1 - j)
    key = centrality * (len(rows) + 1) - row_of
    tgt = segment[flat] == 1
    key, flat_t, row_t, j_t = key[tgt], flat[tgt], row_of[tgt], j[tgt]
    best = np.full(len(ids), -(2 ** 62), dtype=np.int64)
    np.maximum.at(best, flat_t, key)
    win = key == best[flat_t]
    order = np.argsort(flat_t[win], kind="stable")  # back to word order
    flat_t, src_row, src_col = flat_t[win][order], row_t[win][order], j_t[win][order] + len(layout.prefix)

    t_seq, nt_sub = seq[flat_t], n_sub[:, 1]
    t_word = word[flat_t] - nl_words[t_seq]
    return Alignment(input_ids=_rows(ids[flat], r_width, layout), src_row=src_row, src_col=src_col, seq=t_seq,
                     pos=np.arange(len(flat_t)) - (np.cumsum(nt_sub) - nt_sub)[t_seq], word=t_word,
                     word_index=(np.cumsum(nt_words) - nt_words)[t_seq] + t_word, rank=rank[flat_t],
                     n_words=nt_words, n_sub=nt_sub)


def _rows(ids: np.ndarray, widths: np.ndarray, layout: Layout) -> np.ndarray:
    """``prefix + ids[row] + suffix`` per row, padded with -1."""
    pre, suf = list(layout.prefix), list(layout.suffix)
    parts = np.split(ids, np.cumsum(widths)[:-1])
    out = np.full((len(parts), len(pre) + len(suf) + int(widths.max())), -1, dtype=np.int64)
    for r, chunk in enumerate(parts):
        row = pre + chunk.tolist() + suf
        out[r, : len(row)] = row
    return out


class DocumentContext:
    """Neighbouring sentences of the same document and split, looked up by ``(split, doc_id, index)``.

    Keying by split means a training sentence never gets a dev or test sentence as context, even when two
    files reuse a document id (the ACE files all use ``doc_key`` 0).

    Args:
        sentences: sentences of any splits (objects with ``tokens``, ``doc_id``, ``index`` and optionally
            ``split``).
    """

    def __init__(self, sentences: Sequence = ()):
        self.tokens: dict[tuple[str | None, str, int], list[str]] = {}
        self.add(sentences)

    @staticmethod
    def key(s, offset: int = 0) -> tuple[str | None, str, int]:
        return getattr(s, "split", None), s.doc_id, s.index + offset

    def add(self, sentences: Sequence) -> None:
        for s in sentences:
            if s.doc_id is not None:
                self.tokens[self.key(s)] = list(s.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def get(self, sentences: Sequence, k: int) -> tuple[list[list[str]], list[list[str]]]:
        """Per sentence, the tokens of up to ``k`` preceding and ``k`` following sentences of its document."""
        left, right = [], []
        for s in sentences:
            if s.doc_id is None or k <= 0:
                left.append([]), right.append([])
                continue
            left.append(self._join(s, range(-k, 0)))
            right.append(self._join(s, range(1, k + 1)))
        return left, right

    def _join(self, s, offsets: range) -> list[str]:
        return [t for o in offsets for t in self.tokens.get(self.key(s, o), [])]
