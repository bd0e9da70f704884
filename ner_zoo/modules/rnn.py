"""Sentence-level recurrent encoders."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ner_zoo.modules.precision import autocast_off, to_fp32


class BiLSTMEncoder(nn.Module):
    """A (multi-layer) bidirectional LSTM over packed sentences, always computed in fp32.

    Args:
        input_dim: size of the token representations.
        hidden: LSTM size per direction; ``output_dim = 2 * hidden``.
        num_layers: stacked layers.
        dropout: dropout between stacked layers (``nn.LSTM``'s own; no effect with one layer).
    """

    def __init__(self, input_dim: int, hidden: int, num_layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden, num_layers=num_layers, batch_first=True, bidirectional=True,
                            dropout=dropout if num_layers > 1 else 0.0)
        self.output_dim = 2 * hidden

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Encode ``x [B, L, input_dim]``.

        Args:
            x: token representations.
            mask: ``[B, L]`` bool, True at real tokens, left-aligned; every row needs a token. ``None``
                means no padding.

        Returns:
            ``[B, L, 2 * hidden]`` fp32, zero at padded positions.
        """
        B, L = x.shape[:2]
        with autocast_off(x):  # nn.LSTM has no bf16 CPU kernel on many machines
            x = to_fp32(x)
            if mask is None:
                return self.lstm(x)[0]
            lengths = mask.sum(1).cpu()
            if B and int(lengths.min()) == 0:
                raise ValueError("every sentence needs at least one token (a mask row is all False)")
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.lstm(packed)
            return pad_packed_sequence(out, batch_first=True, total_length=L)[0]
