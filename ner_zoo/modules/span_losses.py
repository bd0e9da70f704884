"""Losses of span models: focal loss, boundary regression, boundary smoothing, and span-grid targets.

Label ids: ``0`` is NONE (not an entity), entity types are ``1..C`` (see
:class:`~ner_zoo.training.span_model.SpanModel`). Gold spans of a batch are ``[B, G, 3]`` long tensors
(start, end exclusive, label id) with a ``[B, G]`` mask. Per-example functions return unreduced values
(shape ``[N]`` or ``[B, S]``) so per-sample weights (e.g. soft examples) broadcast correctly.

* Focal loss (Lin et al. 2017): ``FL = -alpha_y (1 - p_y)^gamma log p_y``.
* Boundary smoothing (Zhu & Li 2022; docs/papers.md, DSpERT): each gold span keeps ``1 - eps``; every span at L1
  distance ``d = 1..D`` in (start, end) space gets ``eps / (4 d D)``; mass of neighbours outside the
  sentence or off the grid goes back to the gold span (eznlp loses the off-grid part, widths > K); a span
  whose entity mass exceeds 1 (overlapping neighbourhoods) is L1-normalised; NONE takes the rest.
"""

from __future__ import annotations

from typing import Literal, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ner_zoo.modules.spans import SpanGrid
from ner_zoo.ranges import NonNegativeFloat, NonNegativeInt, UnitInterval, check_choices, check_ranges


def focal_loss(logits: Tensor, target: Tensor, gamma: float = 2.0,
               alpha: float | Sequence[float] | Tensor | None = None,
               reduction: Literal["none", "mean", "sum"] = "none", ignore_index: int = -100) -> Tensor:
    """Softmax focal loss; ``gamma = 0`` and no ``alpha`` is cross-entropy.

    Args:
        logits: ``[N, C]`` (any leading shape ``[..., C]`` works).
        target: class ids ``[N]``; ``ignore_index`` entries give 0.
        gamma: focusing parameter.
        alpha: class weight, one float for all classes or one per class ``[C]``.
        reduction: ``none`` (shape ``[N]``), ``mean`` over non-ignored entries, or ``sum``.
    """
    logp = F.log_softmax(logits.float(), -1)
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0).unsqueeze(-1)
    logp_y = logp.gather(-1, safe).squeeze(-1)
    loss = -((1 - logp_y.exp()).clamp(min=0) ** gamma) * logp_y if gamma else -logp_y
    if alpha is not None:
        a = torch.as_tensor(alpha, dtype=loss.dtype, device=loss.device)
        loss = loss * (a[safe.squeeze(-1)] if a.ndim else a)
    loss = loss.masked_fill(~valid, 0.0)
    if reduction == "mean":
        return loss.sum() / valid.sum().clamp(min=1)
    return loss.sum() if reduction == "sum" else loss


def soft_label_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """``-sum_c target_c log softmax(logits)_c`` per example: ``[..., C]`` x ``[..., C]`` -> ``[...]``."""
    return -(target.float() * F.log_softmax(logits.float(), -1)).sum(-1)


def smooth_l1_overlap_loss(pred: Tensor, target: Tensor, beta: float = 1.0) -> tuple[Tensor, Tensor]:
    """Boundary regression losses of Locate-and-Label, per example.

    Args:
        pred: predicted (continuous) spans ``[N, 2]`` (seed + predicted offsets).
        target: gold spans ``[N, 2]``.
        beta: smooth-L1 threshold.

    Returns:
        ``smooth_l1 [N]``: sum over the two boundaries of smooth-L1(pred - target), as Eq. 14 (the seed
        cancels, so this equals the loss on offsets); ``overlap [N]``: ``1 - (min(ends) - max(starts)) / (max(ends) -
        min(starts))``, i.e. 1 - 1-D GIoU (a gap between the spans makes the ratio negative).
    """
    pred, target = pred.float(), target.float()
    smooth = F.smooth_l1_loss(pred, target, reduction="none", beta=beta).sum(-1)
    inter = torch.minimum(pred[:, 1], target[:, 1]) - torch.maximum(pred[:, 0], target[:, 0])
    hull = torch.maximum(pred[:, 1], target[:, 1]) - torch.minimum(pred[:, 0], target[:, 0])
    return smooth, 1 - inter / hull.clamp(min=1e-6)


# --- targets on the span grid -------------------------------------------------------------------------------
def hard_span_targets(grid: SpanGrid, gold: Tensor, gold_mask: Tensor) -> Tensor:
    """Label id of every grid span, ``[B, S]`` (0 = NONE). Gold spans off the grid (too wide) are absent.

    Two gold spans on the same tokens with different types (rare, ACE05) keep the larger label id.
    """
    B, S = grid.mask.shape
    slot = grid.slots(gold)
    ok = gold_mask & (slot >= 0)
    target = torch.zeros(B, S, dtype=torch.long, device=gold.device)
    return target.scatter_reduce(1, slot.clamp(min=0), torch.where(ok, gold[..., 2], 0), "amax")


def _neighbour_offsets(size: int, epsilon: float) -> tuple[list[tuple[int, int]], list[float]]:
    offsets, weights = [], []
    for d in range(1, size + 1):
        for ds in range(-d, d + 1):
            for de in sorted({d - abs(ds), abs(ds) - d}):
                offsets.append((ds, de))
                weights.append(epsilon / (4 * d * size))
    return offsets, weights


def boundary_smoothing_targets(grid: SpanGrid, gold: Tensor, gold_mask: Tensor, num_classes: int,
                               epsilon: float = 0.1, size: int = 1) -> Tensor:
    """Soft labels ``[B, S, num_classes]`` (class 0 = NONE) of every grid span; each row sums to 1.

    Args:
        grid: the enumerated spans.
        gold: ``[B, G, 3]`` start, end (exclusive), label id (``1..num_classes-1``).
        gold_mask: ``[B, G]``.
        num_classes: entity types + 1.
        epsilon: mass moved from each gold span to its neighbours.
        size: neighbourhood radius ``D`` in L1 distance over (start, end).
    """
    B, S = grid.mask.shape
    device = gold.device
    off, w = _neighbour_offsets(size, epsilon)
    off_t = torch.tensor([(0, 0)] + off, device=device)  # [P, 2]
    w_t = torch.tensor([1.0 - epsilon] + w, device=device)
    cand = gold[..., None, :2] + off_t  # [B, G, P, 2]
    lengths = grid.lengths.view(B, 1, 1)
    slot = grid.slots(cand)
    inside = (cand[..., 0] >= 0) & (cand[..., 1] > cand[..., 0]) & (cand[..., 1] <= lengths) & (slot >= 0)
    real = gold_mask & inside[..., 0]  # gold spans off the grid cannot be represented at all
    weight = torch.where(inside, w_t, 0.0)
    weight[..., 0] += (w_t * (~inside).float()).sum(-1)  # mass of impossible neighbours back to gold
    weight = weight * real.unsqueeze(-1)
    index = slot.clamp(min=0) * num_classes + gold[..., 2:3]
    flat = torch.zeros(B, S * num_classes, device=device)
    flat.scatter_add_(1, index.reshape(B, -1), weight.reshape(B, -1))
    target = flat.view(B, S, num_classes)
    mass = target[..., 1:].sum(-1, keepdim=True)
    target[..., 1:] = target[..., 1:] / mass.clamp(min=1.0)
    target[..., 0] = (1 - target[..., 1:].sum(-1)).clamp(min=0)
    return target


# --- loss modules (injectable with class_path) --------------------------------------------------------------
class SpanLoss(nn.Module):
    """Base of span-classification losses over a :class:`~ner_zoo.modules.spans.SpanGrid`.

    Args:
        reduction: ``mean`` over real spans of the batch, or ``sum`` over the spans of each sentence then
            mean over sentences (DSpERT).
    """

    def __init__(self, reduction: Literal["mean", "sum"] = "mean"):
        super().__init__()
        check_choices(SpanLoss.__init__, locals())
        self.reduction = reduction

    def per_span(self, logits: Tensor, grid: SpanGrid, gold: Tensor, gold_mask: Tensor) -> Tensor:
        """Unreduced loss ``[B, S]``."""
        raise NotImplementedError

    def forward(self, logits: Tensor, grid: SpanGrid, gold: Tensor, gold_mask: Tensor) -> Tensor:
        """Scalar loss of ``logits [B, S, C]`` against the gold spans ``[B, G, 3]``."""
        loss = self.per_span(logits, grid, gold, gold_mask) * grid.mask
        if self.reduction == "sum":
            return loss.sum() / max(1, loss.shape[0])
        return loss.sum() / grid.mask.sum().clamp(min=1)


class CrossEntropySpanLoss(SpanLoss):
    """Softmax cross-entropy over labels + NONE (Sohrab & Miwa 2018)."""

    def per_span(self, logits, grid, gold, gold_mask):
        target = hard_span_targets(grid, gold, gold_mask)
        return F.cross_entropy(logits.float().flatten(0, 1), target.flatten(), reduction="none").view_as(target)


class FocalSpanLoss(SpanLoss):
    """Focal loss over labels + NONE.

    Args:
        gamma: focusing parameter (2 in Locate-and-Label).
        alpha: class weight(s), ``None`` for none.
        reduction: see :class:`SpanLoss`.
    """

    def __init__(self, gamma: NonNegativeFloat = 2.0, alpha: float | list[float] | None = None,
                 reduction: Literal["mean", "sum"] = "mean"):
        check_ranges(FocalSpanLoss.__init__, locals())
        super().__init__(reduction)
        self.gamma, self.alpha = gamma, alpha

    def per_span(self, logits, grid, gold, gold_mask):
        target = hard_span_targets(grid, gold, gold_mask)
        return focal_loss(logits.flatten(0, 1), target.flatten(), self.gamma, self.alpha).view_as(target)


class BoundarySmoothingLoss(SpanLoss):
    """Soft-label cross-entropy against boundary-smoothed targets (Zhu & Li 2022; DSpERT).

    Args:
        epsilon: smoothing mass (0.1).
        size: neighbourhood radius D (1).
        reduction: see :class:`SpanLoss` (DSpERT sums over spans: ``sum``).
    """

    def __init__(self, epsilon: UnitInterval = 0.1, size: NonNegativeInt = 1, reduction: Literal["mean", "sum"] = "mean"):
        check_ranges(BoundarySmoothingLoss.__init__, locals())
        super().__init__(reduction)
        self.epsilon, self.size = epsilon, size

    def per_span(self, logits, grid, gold, gold_mask):
        target = boundary_smoothing_targets(grid, gold, gold_mask, logits.shape[-1], self.epsilon, self.size)
        return soft_label_cross_entropy(logits, target)
