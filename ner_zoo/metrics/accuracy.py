"""Token accuracy (POS tagging, chunk tags) as a torchmetrics metric with ``correct``/``total`` sum states."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import torch
from torch import Tensor
from torchmetrics import Metric

from ner_zoo.metrics.functional import _tag_agreement


class TokenAccuracy(Metric):
    """Share of tokens whose predicted tag equals the gold tag; 0 when no token was seen.

    As input to ``update``: either lists of tag strings (one list per sentence, lengths must match), or
    tensors: ``preds`` indices ``[B, T]`` (or scores ``[B, T, C]``, arg-maxed), ``golds`` indices ``[B, T]``
    and an optional boolean ``mask`` ``[B, T]`` of real tokens.

    Args:
        ignore_index: gold index that marks tokens to skip (e.g. ``-100`` for padding), tensor input only.
        **kwargs: passed to :class:`torchmetrics.Metric`.

    Example:
        >>> m = TokenAccuracy()
        >>> m.update([["DT", "NN"], ["VB"]], [["DT", "VB"], ["VB"]])
        >>> round(float(m.compute()), 4)
        0.6667
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    correct: Tensor
    total: Tensor

    def __init__(self, ignore_index: Optional[int] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.ignore_index = ignore_index
        self.add_state("correct", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(
        self,
        preds: Union[Tensor, Sequence[Sequence[str]]],
        golds: Union[Tensor, Sequence[Sequence[str]]],
        mask: Optional[Tensor] = None,
    ) -> None:
        """Add one batch.

        Args:
            preds: predicted tags (strings per sentence) or indices/scores as a tensor.
            golds: gold tags, same form as ``preds`` (indices for tensors).
            mask: ``[B, T]`` true for real tokens; tensor input only.

        Raises:
            ValueError: shapes or lengths differ (nothing is truncated).
        """
        if not isinstance(preds, Tensor):
            if mask is not None:
                raise ValueError("mask is only supported with tensor input")
            correct, total = _tag_agreement(preds, golds)
            self.correct += correct
            self.total += total
            return
        if preds.dim() == golds.dim() + 1:
            preds = preds.argmax(-1)
        if preds.shape != golds.shape:
            raise ValueError(f"preds shape {tuple(preds.shape)} does not match golds shape {tuple(golds.shape)}")
        valid = torch.ones_like(golds, dtype=torch.bool) if mask is None else mask.to(torch.bool)
        if valid.shape != golds.shape:
            raise ValueError(f"mask shape {tuple(valid.shape)} does not match golds shape {tuple(golds.shape)}")
        if self.ignore_index is not None:
            valid = valid & (golds != self.ignore_index)
        self.correct += ((preds == golds) & valid).sum()
        self.total += valid.sum()

    def compute(self) -> Tensor:
        """Accuracy as a 0-dim float tensor."""
        dtype = torch.float32 if self.device.type == "mps" else torch.float64
        return self.correct.to(dtype) / self.total.clamp(min=1).to(dtype)
