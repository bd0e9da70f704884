"""Guard against very long training sentences: the BiLSTM backward pass grows about quadratically with the
sentence length on CPU (1k tokens 0.7 s, 8k tokens 22 s per step), so one 50k-token sentence stalls an epoch.

``max_train_length`` (data modules) splits such sentences at a safe boundary (never inside a gold span) or
skips them; only the training split is touched, and prediction stays unlimited.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Literal, Sequence

from ner_zoo.data.schema import Sentence, Span

#: a training sentence longer than this gets a warning when no ``max_train_length`` is set
WARN_TRAIN_LENGTH = 1000
LongSentences = Literal["split", "skip"]


def _cut(spans: Sequence[Span], start: int, limit: int, n: int) -> int:
    """The cut after ``start``: the last position ``<= start + limit`` inside no span, else the first after it."""
    inside = {p for sp in spans for p in range(sp.start + 1, sp.end)}
    end = min(start + limit, n)
    for p in range(end, start, -1):
        if p not in inside:
            return p
    return next(p for p in range(end + 1, n + 1) if p not in inside)


def split_sentence(sent: Sentence, limit: int) -> list[Sentence]:
    """``sent`` in pieces of at most ``limit`` tokens (longer only where a gold span is longer), spans kept whole."""
    n, pieces, start = len(sent), [], 0
    while start < n:
        end = _cut(sent.spans, start, limit, n)
        spans = [Span(s.start - start, s.end - start, s.label) for s in sent.spans if start <= s.start and s.end <= end]
        columns = {k: v[start:end] for k, v in sent.columns.items()}
        pieces.append(replace(sent, tokens=sent.tokens[start:end], spans=spans, columns=columns,
                              source=f"{sent.source} (tokens {start}-{end})"))
        start = end
    return pieces


def limit_train_lengths(sentences: list[Sentence], max_length: int | None, mode: LongSentences = "split",
                        where: object = "train") -> tuple[list[Sentence], dict]:
    """Apply ``max_length`` to training sentences; returns the sentences and what was done (for the run record)."""
    longest = max((len(s) for s in sentences), default=0)
    if max_length is None:
        if longest > WARN_TRAIN_LENGTH:
            n_long = sum(len(s) > WARN_TRAIN_LENGTH for s in sentences)
            warnings.warn(f"{where}: {n_long} training sentence(s) longer than {WARN_TRAIN_LENGTH} tokens (longest "
                          f"{longest}); recurrent models slow down about quadratically with length: set "
                          "data.init_args.max_train_length to split (or skip) them", stacklevel=2)
        return sentences, {}
    if max_length < 1:
        raise ValueError(f"max_train_length must be >= 1, got {max_length}")
    if mode not in ("split", "skip"):
        raise ValueError(f"long_sentences must be 'split' or 'skip', got {mode!r}")
    long = [s for s in sentences if len(s) > max_length]
    if not long:
        return sentences, {}
    if mode == "skip":
        out = [s for s in sentences if len(s) <= max_length]
    else:
        out = [p for s in sentences for p in (split_sentence(s, max_length) if len(s) > max_length else [s])]
    notes = {"max_train_length": max_length, "long_sentences": mode, "sentences_over_limit": len(long),
             "tokens_over_limit": sum(len(s) for s in long), "longest": longest,
             "train_sentences_before": len(sentences), "train_sentences_after": len(out)}
    verb = "skipped" if mode == "skip" else f"split into {len(out) - len(sentences) + len(long)} pieces"
    warnings.warn(f"{where}: {len(long)} training sentence(s) longer than max_train_length={max_length} "
                  f"(longest {longest}) {verb}", stacklevel=2)
    return out, notes
