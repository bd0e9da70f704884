"""Choosing the output spans of one sentence among scored candidates.

Every function takes one sentence's candidates, ``spans [N, 2]`` (start, end exclusive) and ``scores
[N]``, and returns indices into them, so labels and any other per-candidate data follow by indexing.
Pairwise relations come from ``[N, N]`` matrices (overlap, crossing, IoU), never from loops over pairs;
the greedy selections loop over rounds of a vectorised update.

* :func:`decode_flat`: greedy by score, no two kept spans overlap (CoNLL, OntoNotes).
* :func:`decode_nested`: greedy by score, kept spans may nest but never cross (ACE, GENIA, KBP).
* :func:`remove_crossing`: drop every candidate that crosses another (Locate-and-Label, before NMS).
* :func:`merge_duplicates`: one candidate per (start, end).
* :func:`soft_nms_1d`: Soft-NMS (Bodla et al. 2017) on 1-D spans, incl. Locate-and-Label's step decay.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from ner_zoo.modules.spans import iou_1d


def overlap_matrix(spans: Tensor) -> Tensor:
    """``[N, N]`` True where two spans share a token (the diagonal is True)."""
    s, e = spans[:, 0], spans[:, 1]
    return (s[:, None] < e[None, :]) & (s[None, :] < e[:, None])


def contains_matrix(spans: Tensor) -> Tensor:
    """``[N, N]`` True where span ``i`` contains span ``j`` (identical spans contain each other)."""
    s, e = spans[:, 0], spans[:, 1]
    return (s[:, None] <= s[None, :]) & (e[None, :] <= e[:, None])


def crossing_matrix(spans: Tensor) -> Tensor:
    """``[N, N]`` True where two spans overlap without either containing the other."""
    inside = contains_matrix(spans)
    return overlap_matrix(spans) & ~inside & ~inside.T


def greedy_select(scores: Tensor, conflict: Tensor) -> Tensor:
    """Indices kept by greedy selection: best score first, skip a candidate that conflicts with a kept one.

    Ties keep input order. The greedy result is the unique fixed point of "keep ``j`` iff no kept
    higher-ranked ``i`` conflicts with ``j``"; iterating that map from "keep all" reaches it after at
    most ``N`` rounds (each round fixes at least one more rank), usually after a few.

    Args:
        scores: ``[N]``.
        conflict: ``[N, N]`` symmetric bool; the diagonal is ignored.

    Returns:
        Kept indices, best score first.
    """
    n = scores.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=scores.device)
    order = torch.sort(scores, descending=True, stable=True).indices
    c = conflict[order][:, order] & torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
    keep = torch.ones(n, dtype=torch.bool, device=scores.device)
    for _ in range(n):
        new = ~(c & keep.unsqueeze(1)).any(0)
        if torch.equal(new, keep):
            break
        keep = new
    return order[keep]


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
        same = (spans[:, None, 0] == spans[None, :, 0]) & (spans[:, None, 1] == spans[None, :, 1])
        conflict = conflict | same
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


def soft_nms_1d(spans: Tensor, scores: Tensor, method: Literal["step", "linear", "gaussian", "hard"] = "step",
                iou_threshold: float = 0.6, decay: float = 0.9, sigma: float = 0.5,
                score_threshold: float = 0.0) -> tuple[Tensor, Tensor]:
    """Type-agnostic Soft-NMS: repeatedly take the best remaining span and decay the others' scores.

    Decay of a remaining span with IoU ``o`` to the span just taken:

    * ``step``: times ``decay`` if ``o > iou_threshold`` (Locate-and-Label: ``u = 0.9``, ``k = 0.6``);
    * ``linear``: times ``1 - o`` if ``o > iou_threshold``; ``gaussian``: times ``exp(-o^2 / sigma)``;
    * ``hard``: to 0 if ``o > iou_threshold`` (classic NMS).

    Args:
        spans, scores: the candidates.
        method, iou_threshold, decay, sigma: see above.
        score_threshold: keep spans whose final score is ``> score_threshold`` (Locate-and-Label's delta).

    Returns:
        ``(indices, final scores)`` of the kept spans, in selection order.
    """
    n = scores.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=scores.device), scores
    iou = iou_1d(spans, spans)
    s = scores.clone().float()
    remaining = torch.ones(n, dtype=torch.bool, device=scores.device)
    picked = []
    for _ in range(n):
        i = torch.where(remaining, s, float("-inf")).argmax()
        picked.append(i)
        remaining[i] = False
        o = iou[i]
        if method == "step":
            factor = torch.where(o > iou_threshold, decay, 1.0)
        elif method == "linear":
            factor = torch.where(o > iou_threshold, 1 - o, 1.0)
        elif method == "gaussian":
            factor = torch.exp(-(o ** 2) / sigma)
        elif method == "hard":
            factor = torch.where(o > iou_threshold, 0.0, 1.0)
        else:
            raise ValueError(f"unknown Soft-NMS method {method!r} (step, linear, gaussian, hard)")
        s = torch.where(remaining, s * factor, s)
    order = torch.stack(picked)
    final = s[order]
    kept = final > score_threshold
    return order[kept], final[kept].to(scores.dtype)
