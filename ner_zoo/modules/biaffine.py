"""Biaffine scorer (Dozat & Manning 2017; biaffine NER, Yu et al. 2020; MIN's pointer and interaction).

``score(x_i, y_j)_o = [x_i; 1]^T U_o [y_j; 1]``: with both biases on, this is the bilinear term plus a
linear term on each side plus a constant, per output channel ``o``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class Biaffine(nn.Module):
    """``x [B, N, d1]``, ``y [B, M, d2]`` -> scores ``[B, N, M, out]``.

    Args:
        in1: size of ``x`` (e.g. span-start representations).
        in2: size of ``y`` (e.g. span-end representations).
        out: number of output channels (entity types + 1 for biaffine NER; 1 for a pointer).
        bias_x: append a constant 1 to ``x`` (linear term in ``y`` and bias).
        bias_y: append a constant 1 to ``y`` (linear term in ``x`` and bias).
    """

    def __init__(self, in1: int, in2: int, out: int = 1, bias_x: bool = True, bias_y: bool = True):
        super().__init__()
        self.in1, self.in2, self.out = in1, in2, out
        self.bias_x, self.bias_y = bias_x, bias_y
        self.weight = nn.Parameter(torch.empty(out, in1 + bias_x, in2 + bias_y))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(max(1, self.in1 + self.bias_x))
        nn.init.uniform_(self.weight, -bound, bound)

    def extra_repr(self) -> str:
        return f"in1={self.in1}, in2={self.in2}, out={self.out}, bias_x={self.bias_x}, bias_y={self.bias_y}"

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        if self.bias_x:
            x = torch.cat([x, x.new_ones(*x.shape[:-1], 1)], -1)
        if self.bias_y:
            y = torch.cat([y, y.new_ones(*y.shape[:-1], 1)], -1)
        xu = torch.einsum("bnx,oxy->bnoy", x, self.weight.to(x.dtype))  # [B, N, out, d2]
        return torch.einsum("bnoy,bmy->bnmo", xu, y)
