"""Dropout whose CPU mask comes from ``torch.rand`` instead of ``bernoulli_``.

The same function as :class:`torch.nn.Dropout` (each element kept with probability ``1 - p`` and scaled by
``1 / (1 - p)``, identity in evaluation), but on CPU the mask is drawn as ``rand >= p``: PyTorch's CPU
``bernoulli_`` draws element by element and costs about 2.5x the vectorised ``rand`` plus a multiply
(docs/benchmarks.md). The draws come from the same global generator, so runs stay seeded; for a given seed the
masks differ from ``nn.Dropout``'s. On other devices it is ``nn.Dropout`` (fused kernels there).
"""

from __future__ import annotations

import torch
from torch import nn


class Dropout(nn.Dropout):
    """:class:`torch.nn.Dropout` with a faster CPU mask (same distribution)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0 or x.device.type != "cpu" or self.inplace:
            return super().forward(x)
        if self.p == 1.0:
            return x * 0.0
        draws = torch.rand(x.shape)  # float32 whatever x's dtype (bf16 draws are coarse)
        if x.dtype == torch.float32:  # the draws become the scaled mask in place (1 or 0 from ge_, times the scale)
            return x * draws.ge_(self.p).mul_(1.0 / (1.0 - self.p))
        return x * (draws >= self.p).to(x.dtype).mul_(1.0 / (1.0 - self.p))
