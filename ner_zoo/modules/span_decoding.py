"""Choosing the output spans of one sentence among scored candidates.

Functions take one sentence's candidates, ``spans [N, 2]`` (start, end exclusive) and ``scores [N]``,
and return indices into them, so labels and other per-candidate data follow by indexing; the ``_batch``
variants take padded ``[B, N, ...]`` candidates with a ``valid`` mask and return a keep mask.
Pairwise relations come from ``[N, N]`` matrices (overlap, crossing, IoU), never from loops over pairs;
the greedy selections loop over ranks, each round vectorised over the candidates and the batch.

* :func:`decode_flat`: greedy by score, no two kept spans overlap (CoNLL, OntoNotes).
* :func:`decode_nested`: greedy by score, kept spans may nest but never cross (ACE, GENIA, KBP).
* :func:`decode_batch`: either of the two on a padded batch ``[B, N, 2]`` at once (what models use).
* :func:`remove_crossing`: drop every candidate that crosses another (Locate-and-Label, before NMS).
* :func:`merge_duplicates`: one candidate per (start, end).
* :func:`soft_nms_1d` / :func:`soft_nms_batch`: Soft-NMS (Bodla et al. 2017) on 1-D spans, incl.
  Locate-and-Label's step decay.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from ner_zoo.modules.spans import iou_1d


def overlap_matrix(spans: Tensor) -> Tensor:
    """``[..., N, N]`` True where two spans share a token (the diagonal is True); ``spans [..., N, 2]``."""
    s, e = spans[..., 0], spans[..., 1]
    return (s[..., :, None] < e[..., None, :]) & (s[..., None, :] < e[..., :, None])


def contains_matrix(spans: Tensor) -> Tensor:
    """``[..., N, N]`` True where span ``i`` contains span ``j`` (identical spans contain each other)."""
    s, e = spans[..., 0], spans[..., 1]
    return (s[..., :, None] <= s[..., None, :]) & (e[..., None, :] <= e[..., :, None])


def crossing_matrix(spans: Tensor) -> Tensor:
    """``[..., N, N]`` True where two spans overlap without either containing the other."""
    inside = contains_matrix(spans)
    return overlap_matrix(spans) & ~inside & ~inside.transpose(-1, -2)


def same_span_matrix(spans: Tensor) -> Tensor:
    """``[..., N, N]`` True where two candidates cover the same tokens."""
    s, e = spans[..., 0], spans[..., 1]
    return (s[..., :, None] == s[..., None, :]) & (e[..., :, None] == e[..., None, :])


def greedy_select_batch(scores: Tensor, conflict: Tensor, valid: Tensor | None = None) -> Tensor:
    """Greedy selection for a batch: best score first, skip a candidate that conflicts with a kept one.

    Ties keep input order. Candidates are sorted once; then one round per rank decides that rank for
    every sentence at once from the conflict matrix (``N`` rounds of ``O(B * N)`` work), which bounds the
    cost even when an untrained model proposes every span.

    Args:
        scores: ``[B, N]``.
        conflict: ``[B, N, N]`` symmetric bool; the diagonal is ignored.
        valid: ``[B, N]`` real candidates (padding is never kept nor blocks anything).

    Returns:
        Keep mask ``[B, N]``.
    """
    B, n = scores.shape
    valid = torch.ones_like(scores, dtype=torch.bool) if valid is None else valid
    if n == 0:
        return valid
    order = torch.sort(scores.masked_fill(~valid, float("-inf")), dim=1, descending=True, stable=True).indices
    c = conflict.gather(1, order.unsqueeze(2).expand(B, n, n)).gather(2, order.unsqueeze(1).expand(B, n, n))
    real = valid.gather(1, order)
    keep = torch.zeros_like(real)
    keep[:, 0] = real[:, 0]
    for r in range(1, n):
        keep[:, r] = real[:, r] & ~(c[:, :r, r] & keep[:, :r]).any(1)
    return torch.zeros_like(keep).scatter(1, order, keep)


def greedy_select(scores: Tensor, conflict: Tensor) -> Tensor:
    """:func:`greedy_select_batch` for one sentence: kept indices, best score first."""
    if scores.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long, device=scores.device)
    keep = greedy_select_batch(scores.unsqueeze(0), conflict.unsqueeze(0))[0]
    order = torch.sort(scores, descending=True, stable=True).indices
    return order[keep[order]]


def decode_batch(spans: Tensor, scores: Tensor, valid: Tensor | None = None, nested: bool = False) -> Tensor:
    """Flat or nested greedy decoding of a padded batch of candidates, keep mask ``[B, N]``.

    Args:
        spans: ``[B, N, 2]``; scores: ``[B, N]``; valid: ``[B, N]`` real candidates.
        nested: allow nesting (still no crossing, one candidate per span); else no overlap at all.
    """
    conflict = crossing_matrix(spans) | same_span_matrix(spans) if nested else overlap_matrix(spans)
    return greedy_select_batch(scores, conflict, valid)


def decode_flat(spans: Tensor, scores: Tensor) -> Tensor:
    """Greedy non-overlapping selection (indices, best first)."""
    return greedy_select(scores, overlap_matrix(spans))


def decode_nested(spans: Tensor, scores: Tensor, allow_same_span: bool = False) -> Tensor:
    """Greedy selection without crossing spans; nesting allowed (indices, best first).

    Args:
        spans, scores: the candidates.
        allow_same_span: keep several candidates on the same tokens (different labels); by default a
            span gets one label, as with a softmax over types.
    """
    conflict = crossing_matrix(spans)
    if not allow_same_span:
        conflict = conflict | same_span_matrix(spans)
    return greedy_select(scores, conflict)


def remove_crossing(spans: Tensor) -> Tensor:
    """Bool keep-mask ``[N]``: False for every candidate that crosses some other candidate."""
    return ~crossing_matrix(spans).any(1)


def merge_duplicates(spans: Tensor, scores: Tensor, labels: Tensor, keep: Literal["first", "best"] = "first",
                     accumulate: Literal["none", "sum", "repeat"] = "none") -> tuple[Tensor, Tensor]:
    """One candidate per (start, end).

    Args:
        spans, scores: the candidates.
        labels: ``[N]`` label ids.
        keep: representative of a group: ``first`` in input order (Locate-and-Label) or ``best`` score.
        accumulate: the representative's new score: ``none`` (its own), ``sum`` (sum over group members
            with its label), ``repeat`` (its own score times the number of such members: what the
            Locate-and-Label evaluator does). Members with another label are dropped.

    Returns:
        ``(indices, scores)`` of the representatives, in input order.
    """
    n = scores.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=scores.device), scores
    key = spans[:, 0].long() * (int(spans[:, 1].max()) + 1) + spans[:, 1].long()
    _, group = torch.unique(key, return_inverse=True)
    rank = torch.arange(n, device=scores.device)
    if keep == "best":
        order = torch.sort(scores, descending=True, stable=True).indices
        rank = torch.empty_like(rank).scatter_(0, order, torch.arange(n, device=scores.device))
    first = torch.full((int(group.max()) + 1,), n, dtype=torch.long, device=scores.device)
    first = first.scatter_reduce(0, group, rank, "amin")
    is_rep = rank == first[group]
    rep = torch.full_like(first, -1).scatter(0, group[is_rep], torch.nonzero(is_rep).squeeze(1))
    same = labels == labels[rep[group]]
    if accumulate == "sum":
        total = torch.zeros_like(first, dtype=scores.dtype).index_add(0, group, scores * same)
        new = total[group]
    elif accumulate == "repeat":
        count = torch.zeros_like(first).index_add(0, group, same.long())
        new = scores * count[group]
    else:
        new = scores
    idx = torch.nonzero(is_rep).squeeze(1)
    return idx, new[idx]


def soft_nms_batch(spans: Tensor, scores: Tensor, valid: Tensor | None = None,
                   method: Literal["step", "linear", "gaussian", "hard"] = "step", iou_threshold: float = 0.6,
                   decay: float = 0.9, sigma: float = 0.5) -> tuple[Tensor, Tensor]:
    """Type-agnostic Soft-NMS on a padded batch: repeatedly take the best remaining span of each sentence
    and decay the scores of the others.

    Decay of a remaining span with IoU ``o`` to the span just taken:

    * ``step``: times ``decay`` if ``o >= iou_threshold`` (Locate-and-Label Eq. 18: ``u = 0.9``, ``k = 0.6``);
    * ``linear``: times ``1 - o`` if ``o >= iou_threshold``; ``gaussian``: times ``exp(-o^2 / sigma)``;
    * ``hard``: to 0 if ``o >= iou_threshold`` (classic NMS).

    Args:
        spans: ``[B, N, 2]``; scores: ``[B, N]``; valid: ``[B, N]`` real candidates.
        method, iou_threshold, decay, sigma: see above.

    Returns:
        ``(final scores [B, N], rank [B, N])``: the decayed scores and the selection order (0 = first;
        padding ranks last).
    """
    if method not in ("step", "linear", "gaussian", "hard"):
        raise ValueError(f"unknown Soft-NMS method {method!r} (step, linear, gaussian, hard)")
    B, n = scores.shape
    valid = torch.ones_like(scores, dtype=torch.bool) if valid is None else valid
    iou = iou_1d(spans, spans)
    s = scores.float().clone()
    remaining = valid.clone()
    rank = torch.full((B, n), n, dtype=torch.long, device=scores.device)
    rows = torch.arange(B, device=scores.device)
    for r in range(int(valid.sum(1).max()) if n else 0):
        i = s.masked_fill(~remaining, float("-inf")).argmax(1)  # [B]
        live = remaining[rows, i]
        rank[rows[live], i[live]] = r
        remaining[rows, i] = False
        o = iou[rows, i]  # [B, N]
        if method == "step":
            factor = torch.where(o >= iou_threshold, decay, 1.0)
        elif method == "linear":
            factor = torch.where(o >= iou_threshold, 1 - o, 1.0)
        elif method == "gaussian":
            factor = torch.exp(-(o ** 2) / sigma)
        else:
            factor = torch.where(o >= iou_threshold, 0.0, 1.0)
        s = torch.where(remaining & live.unsqueeze(1), s * factor, s)
    return s, rank


def soft_nms_1d(spans: Tensor, scores: Tensor, method: Literal["step", "linear", "gaussian", "hard"] = "step",
                iou_threshold: float = 0.6, decay: float = 0.9, sigma: float = 0.5,
                score_threshold: float = 0.0) -> tuple[Tensor, Tensor]:
    """:func:`soft_nms_batch` for one sentence, then keep final scores ``> score_threshold`` (Locate-and-
    Label's delta).

    Returns:
        ``(indices, final scores)`` of the kept spans, in selection order.
    """
    if scores.shape[0] == 0:
        if method not in ("step", "linear", "gaussian", "hard"):
            raise ValueError(f"unknown Soft-NMS method {method!r} (step, linear, gaussian, hard)")
        return torch.zeros(0, dtype=torch.long, device=scores.device), scores
    final, rank = soft_nms_batch(spans.unsqueeze(0), scores.unsqueeze(0), None, method, iou_threshold, decay, sigma)
    order = torch.argsort(rank[0])
    kept = order[final[0, order] > score_threshold]
    return kept, final[0, kept].to(scores.dtype)
