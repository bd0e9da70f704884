"""Sentence-level recurrent encoders, and a bidirectional LSTM over padded batches without packing."""

from __future__ import annotations

from contextlib import nullcontext

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ner_zoo.modules.precision import autocast_off, to_fp32


def reverse_index(lengths: torch.Tensor, steps: int, device: torch.device) -> torch.Tensor:
    """``[B, L]`` positions that reverse the first ``lengths[b]`` steps of each row (see :func:`reverse_padded`)."""
    pos = torch.arange(steps, device=device).unsqueeze(0)
    index = lengths.to(device).unsqueeze(1) - 1 - pos
    return torch.where(index >= 0, index, pos)


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor, index: torch.Tensor | None = None) -> torch.Tensor:
    """Reverse the first ``lengths[b]`` steps of each row of ``x [B, L, ...]``; padding stays in place.

    Applying it twice gives ``x`` back. ``index``: :func:`reverse_index` of these lengths, when already made.
    """
    if index is None:
        index = reverse_index(lengths, x.shape[1], x.device)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


def _direction(lstm: nn.LSTM, layer: int, reverse: bool) -> list[torch.Tensor]:
    suffix = f"_l{layer}" + ("_reverse" if reverse else "")
    names = ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if lstm.bias else ())
    return [getattr(lstm, name + suffix) for name in names]


def bilstm(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Outputs ``[B, L, 2 * hidden]`` of a bidirectional, batch-first ``lstm`` over right-padded rows.

    The same function as running ``lstm`` on the packed rows (positions past a row's length hold
    arbitrary values; callers mask them). On CPU it does not pack: the forward direction runs over the
    padded batch (padding comes after every real step, so it cannot reach them), the backward direction
    over each row reversed within its length, then reversed back. Unpacked, the LSTM projects the inputs
    of all steps in one matrix product instead of one per step, about 2x faster for tagger batches. On
    CUDA it packs (cuDNN runs packed batches natively). ``lengths`` must be at least 1.
    """
    if x.is_cuda or not (lstm.bidirectional and lstm.batch_first) or lstm.proj_size:
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        return pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=x.shape[1])[0]
    B, H = x.shape[0], lstm.hidden_size
    zeros = x.new_zeros(1, B, H)
    index = reverse_index(lengths, x.shape[1], x.device)  # the same for every layer, both ways
    for layer in range(lstm.num_layers):
        if layer > 0 and lstm.dropout > 0 and lstm.training:
            x = nn.functional.dropout(x, lstm.dropout, training=True)
        fwd = torch.lstm(x, (zeros, zeros), _direction(lstm, layer, False), lstm.bias, 1, 0.0, lstm.training,
                         False, True)[0]
        bwd = torch.lstm(reverse_padded(x, lengths, index), (zeros, zeros), _direction(lstm, layer, True), lstm.bias,
                         1, 0.0, lstm.training, False, True)[0]
        x = torch.cat([fwd, reverse_padded(bwd, lengths, index)], 2)
    return x


class BiLSTMEncoder(nn.Module):
    """A (multi-layer) bidirectional LSTM over padded sentences (see :func:`bilstm`), always in fp32.

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
        self.half_on_cuda = False  # set by ner_zoo.training.HalfPrecisionLSTM: cuDNN LSTM in the autocast type

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Encode ``x [B, L, input_dim]``.

        Args:
            x: token representations.
            mask: ``[B, L]`` bool, True at real tokens, left-aligned; every row needs a token. ``None``
                means no padding.

        Returns:
            ``[B, L, 2 * hidden]`` fp32 (the autocast type with ``half_on_cuda`` on CUDA), zero at padded
            positions.
        """
        B = x.shape[0]
        half = self.half_on_cuda and x.is_cuda and torch.is_autocast_enabled("cuda")
        with nullcontext() if half else autocast_off(x):  # nn.LSTM has no bf16 CPU kernel on many machines
            x = x if half else to_fp32(x)
            if mask is None:
                return self.lstm(x)[0]
            lengths = mask.sum(1)
            if B and not bool(mask[:, 0].all()):
                raise ValueError("every sentence needs at least one token (a mask row is all False)")
            return bilstm(self.lstm, x, lengths).masked_fill(~mask.unsqueeze(2), 0.0)
