"""Span enumeration, span geometry (IoU, seed matching) and span representations, all vectorised.

Conventions (shared by :mod:`~ner_zoo.modules.span_losses` and :mod:`~ner_zoo.modules.span_decoding`):

* A span is a half-open token range ``(start, end)``, ``end`` exclusive, width ``end - start >= 1``.
* Spans of a batch are a padded ``[B, S, 2]`` long tensor plus a ``[B, S]`` bool mask (True = real).
* :func:`enumerate_spans` lays spans out on a *grid* that depends only on the padded length ``L`` and
  the enumerated widths: width-major (all spans of the first width, by start, then the next width...),
  slot ``offset[w] + start``. Every sentence of the batch shares the same grid; the mask marks the
  spans that fit inside each sentence. :func:`span_slots` maps any ``(start, end)`` back to its slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import torch
from torch import Tensor, nn


def normalize_widths(widths: int | Sequence[int]) -> tuple[int, ...]:
    """``K`` -> ``(1, ..., K)``; a sequence -> sorted unique widths (each >= 1)."""
    ws = tuple(range(1, int(widths) + 1)) if isinstance(widths, int) else tuple(sorted({int(w) for w in widths}))
    if not ws or ws[0] < 1:
        raise ValueError(f"span widths must be positive integers, got {widths!r}")
    return ws


def _grid_counts(max_length: int, widths: tuple[int, ...]) -> list[int]:
    return [max(0, max_length - w + 1) for w in widths]


def enumerate_spans(lengths: Tensor, widths: int | Sequence[int],
                    max_length: int | None = None) -> tuple[Tensor, Tensor]:
    """All spans of the given widths, on the shared width-major grid.

    Args:
        lengths: sentence lengths ``[B]``.
        widths: maximum width ``K`` (widths ``1..K``) or an explicit set of widths (Locate-and-Label seeds).
        max_length: padded length ``L`` of the batch (default ``lengths.max()``, which syncs on GPU).

    Returns:
        ``spans [B, S, 2]`` (an expanded view: the same grid for every sentence) and ``mask [B, S]``
        (True where ``end <= length``), ``S = sum_w max(0, L - w + 1)``.
    """
    ws = normalize_widths(widths)
    lengths = torch.as_tensor(lengths)
    L = int(lengths.max()) if max_length is None else int(max_length)
    device = lengths.device
    counts_list = _grid_counts(L, ws)
    S = sum(counts_list)  # computed on the host: no device sync
    counts = torch.tensor(counts_list, device=device)
    width_per_slot = torch.repeat_interleave(torch.tensor(ws, device=device), counts, output_size=S)
    offsets = torch.cumsum(counts, 0) - counts
    starts = torch.arange(S, device=device) - torch.repeat_interleave(offsets, counts, output_size=S)
    grid = torch.stack([starts, starts + width_per_slot], -1)
    spans = grid.unsqueeze(0).expand(lengths.shape[0], -1, -1)
    mask = spans[..., 1] <= lengths.unsqueeze(1)
    return spans, mask


def span_slots(spans: Tensor, max_length: int, widths: int | Sequence[int]) -> Tensor:
    """Slot of each ``(start, end)`` on the grid of :func:`enumerate_spans` (``-1``: not on the grid).

    Args:
        spans: ``[..., 2]`` (extra trailing columns, e.g. a label, are ignored).
        max_length: the padded length ``L`` the grid was built for.
        widths: the grid's widths.
    """
    ws = normalize_widths(widths)
    device = spans.device
    table = torch.full((ws[-1] + 2,), -1, dtype=torch.long, device=device)
    table[torch.tensor(ws, device=device)] = torch.arange(len(ws), device=device)
    counts = torch.tensor(_grid_counts(max_length, ws), device=device)
    offsets = torch.cumsum(counts, 0) - counts
    start, end = spans[..., 0].long(), spans[..., 1].long()
    width = (end - start).clamp(0, ws[-1] + 1)
    widx = table[width]
    ok = (widx >= 0) & (start >= 0) & (end <= max_length)
    slot = offsets[widx.clamp(min=0)] + start
    return torch.where(ok, slot, torch.full_like(slot, -1))


@dataclass(frozen=True)
class SpanGrid:
    """The enumerated spans of a batch and how to find a span's slot (see the module docstring).

    Attributes:
        spans: ``[B, S, 2]`` start/end (exclusive).
        mask: ``[B, S]`` True for spans inside their sentence.
        lengths: sentence lengths ``[B]``.
        widths: the enumerated widths.
        max_length: padded length ``L``.
    """

    spans: Tensor
    mask: Tensor
    lengths: Tensor
    widths: tuple[int, ...]
    max_length: int

    @classmethod
    def build(cls, lengths: Tensor, widths: int | Sequence[int], max_length: int | None = None) -> "SpanGrid":
        ws = normalize_widths(widths)
        L = int(lengths.max()) if max_length is None else int(max_length)
        spans, mask = enumerate_spans(lengths, ws, L)
        return cls(spans, mask, lengths, ws, L)

    @property
    def max_width(self) -> int:
        return self.widths[-1]

    def slots(self, spans: Tensor) -> Tensor:
        """:func:`span_slots` on this grid."""
        return span_slots(spans, self.max_length, self.widths)


# --- geometry ----------------------------------------------------------------------------------------------
def iou_1d(a: Tensor, b: Tensor) -> Tensor:
    """Token-count IoU ``|A n B| / |A u B|`` of every pair: ``a [..., N, 2]``, ``b [..., M, 2]`` -> ``[..., N, M]``."""
    a, b = a.float(), b.float()
    a_s, a_e = a[..., :, None, 0], a[..., :, None, 1]
    b_s, b_e = b[..., None, :, 0], b[..., None, :, 1]
    inter = (torch.minimum(a_e, b_e) - torch.maximum(a_s, b_s)).clamp(min=0)
    union = (a_e - a_s) + (b_e - b_s) - inter
    return inter / union.clamp(min=1e-12)


class SeedMatch(NamedTuple):
    """Result of :func:`best_iou_match`: ``index [B, S]`` of the best gold (``-1``: no gold overlaps the
    seed), its ``iou [B, S]`` (0 then) and the regression targets ``offsets [B, S, 2]`` = (gold start -
    seed start, gold end - seed end), zero where there is no match."""

    index: Tensor
    iou: Tensor
    offsets: Tensor


def best_iou_match(seeds: Tensor, golds: Tensor, gold_mask: Tensor) -> SeedMatch:
    """Pair each seed span with the gold span of highest IoU (first one on ties).

    Args:
        seeds: ``[B, S, 2]``.
        golds: ``[B, G, >=2]`` (start, end, ...).
        gold_mask: ``[B, G]`` True for real gold spans.
    """
    B, S = seeds.shape[:2]
    if golds.shape[1] == 0:
        return SeedMatch(torch.full((B, S), -1, dtype=torch.long, device=seeds.device),
                         torch.zeros(B, S, device=seeds.device), torch.zeros_like(seeds))
    iou = iou_1d(seeds, golds[..., :2]).masked_fill(~gold_mask.unsqueeze(1), -1.0)
    best, index = iou.max(-1)
    found = best > 0
    matched = torch.gather(golds[..., :2], 1, index.unsqueeze(-1).expand(-1, -1, 2)).to(seeds.dtype)
    offsets = torch.where(found.unsqueeze(-1), matched - seeds, torch.zeros_like(seeds))
    return SeedMatch(index.masked_fill(~found, -1), best.clamp(min=0), offsets)


# --- representations ---------------------------------------------------------------------------------------
def gather_tokens(states: Tensor, index: Tensor) -> Tensor:
    """``states [B, L, D]`` at positions ``index [B, S]`` (clamped into ``[0, L)``) -> ``[B, S, D]``."""
    b = torch.arange(states.shape[0], device=states.device).unsqueeze(1)
    return states[b, index.clamp(0, states.shape[1] - 1)]


def span_max_pool(states: Tensor, spans: Tensor, span_mask: Tensor | None = None,
                  max_width: int | None = None) -> Tensor:
    """Max over each span's tokens, ``[B, L, D]`` x ``[B, S, 2]`` -> ``[B, S, D]`` (masked spans give 0).

    A sparse table of arg-max positions answers every range-max query with two lookups: level ``j``
    holds, per feature, the position of the max over ``[i, i + 2^j)``; a span of width ``w`` compares
    level ``floor(log2 w)`` at ``start`` and at ``end - 2^j``. The table is built without autograd and
    the result is one ``gather`` of ``states``, so backward is a single scatter. Memory is
    ``O(log K * B * L * D)`` instead of the ``O(B * S * K * D)`` of gathering every token of every span.

    Args:
        states: token states.
        spans: start/end (exclusive), ``end > start`` for real spans.
        span_mask: ``[B, S]`` real spans (others may hold anything).
        max_width: an upper bound on real span widths (default: computed, a host sync on GPU).
    """
    B, L, D = states.shape
    start, end = spans[..., 0].long(), spans[..., 1].long()
    width = (end - start).clamp(min=1)
    if span_mask is not None:
        width = width.masked_fill(~span_mask, 1)
    if max_width is None:
        max_width = int(width.max()) if width.numel() else 1
    K = max(1, min(max_width, L))
    with torch.no_grad():
        values = [states.detach()]
        where = [torch.arange(L, device=states.device, dtype=torch.int32).view(1, L, 1).expand(B, L, D)]
        step = 1
        while 2 * step <= K and step < L:
            v, i = values[-1], where[-1]
            right = v[:, step:] > v[:, :-step]
            values.append(torch.cat([torch.where(right, v[:, step:], v[:, :-step]), v[:, L - step:]], 1))
            where.append(torch.cat([torch.where(right, i[:, step:], i[:, :-step]), i[:, L - step:]], 1))
            step *= 2
        table_v, table_i = torch.stack(values), torch.stack(where)  # [J, B, L, D]
        powers = 2 ** torch.arange(1, len(values), device=states.device)
        j = (width.unsqueeze(-1) >= powers).sum(-1)
        b = torch.arange(B, device=states.device).unsqueeze(1)
        lo, hi = start.clamp(0, L - 1), (end - 2 ** j).clamp(0, L - 1)
        take_hi = table_v[j, b, hi] > table_v[j, b, lo]
        index = torch.where(take_hi, table_i[j, b, hi], table_i[j, b, lo]).long()
    out = states.gather(1, index)
    if span_mask is not None:
        out = out.masked_fill(~span_mask.unsqueeze(-1), 0.0)
    return out


def boundary_representation(states: Tensor, spans: Tensor, lengths: Tensor | None = None, inner: bool = True,
                            outer: bool = False) -> Tensor:
    """Boundary token states of each span, concatenated.

    Args:
        states: ``[B, L, D]``.
        spans: ``[B, S, 2]`` start/end (exclusive).
        lengths: sentence lengths ``[B]`` (clamps the outer end; default ``L``).
        inner: include ``[h_start; h_{end-1}]``.
        outer: include ``[h_{start-1}; h_end]`` clamped into the sentence (Locate-and-Label).

    Returns:
        ``[B, S, (2 * inner + 2 * outer) * D]``.
    """
    start, end = spans[..., 0].long(), spans[..., 1].long()
    parts = []
    if inner:
        parts += [gather_tokens(states, start), gather_tokens(states, end - 1)]
    if outer:
        last = (lengths if lengths is not None else torch.full_like(start[:, 0], states.shape[1])) - 1
        parts += [gather_tokens(states, (start - 1).clamp(min=0)),
                  gather_tokens(states, torch.minimum(end, last.unsqueeze(1)))]
    if not parts:
        raise ValueError("boundary_representation needs inner and/or outer")
    return torch.cat(parts, -1)


class WidthEmbedding(nn.Module):
    """Embedding of span width ``end - start``, widths above ``max_width`` sharing the last vector.

    Args:
        max_width: number of distinct widths (DSpERT clips at the 97.5% quantile of training widths).
        dim: embedding size.
    """

    def __init__(self, max_width: int, dim: int):
        super().__init__()
        self.max_width, self.output_dim = max_width, dim
        self.embedding = nn.Embedding(max_width, dim)

    def forward(self, spans: Tensor) -> Tensor:
        """``[..., 2]`` spans -> ``[..., dim]``."""
        width = (spans[..., 1] - spans[..., 0]).long().clamp(1, self.max_width)
        return self.embedding(width - 1)
