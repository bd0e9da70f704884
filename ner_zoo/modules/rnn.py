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
    return _reverser(index)(x)


def _reverser(index: torch.Tensor):
    """``x -> x`` with the steps of each row moved to ``index [B, L]`` (:func:`reverse_index`). One ``index_select``
    over the ``[B * L, ...]`` view: on CPU 2-3x faster forward and backward than the equivalent ``gather``, whose
    backward scatters element by element; the same values, since both only move them. Traced (ONNX export):
    the ``gather``, which keeps the graph free of the batch shape."""
    if torch.jit.is_tracing():
        return lambda x: x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))
    B, L = index.shape
    flat = (index + torch.arange(0, B * L, L, device=index.device).unsqueeze(1)).view(-1)
    return lambda x: x.reshape(B * L, *x.shape[2:]).index_select(0, flat).view(x.shape)


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
    if unpadded(lstm, x, lengths):
        return lstm(x)[0]
    B, H = x.shape[0], lstm.hidden_size
    zeros = x.new_zeros(1, B, H)
    reverse = _reverser(reverse_index(lengths, x.shape[1], x.device))  # the same for every layer, both ways
    for layer in range(lstm.num_layers):
        if layer > 0 and lstm.dropout > 0 and lstm.training:
            x = nn.functional.dropout(x, lstm.dropout, training=True)
        fwd, bwd = _directions(lstm, layer, x, reverse, zeros)
        x = torch.cat([fwd, reverse(bwd)], 2)
    return x


def unpadded(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> bool:
    """Every row is ``x.shape[1]`` steps long, so ``lstm`` runs both directions in one call: the same outputs
    (gradients up to summation order), one oneDNN call fewer per layer and no reversals; 62 % of the
    BiLSTM-CRF's CoNLL-2003 batches (length buckets). Not while tracing (the graph would keep it), nor with
    dropout between layers in training (``nn.LSTM`` would draw it in another order)."""
    if torch.jit.is_tracing() or (lstm.num_layers > 1 and lstm.dropout > 0 and lstm.training):
        return False
    return bool((lengths == x.shape[1]).all())


def _directions(lstm: nn.LSTM, layer: int, x: torch.Tensor, reverse, zeros: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's outputs over the padded rows: forward in order, backward over the reversed rows (its
    output still reversed)."""
    fwd = torch.lstm(x, (zeros, zeros), _direction(lstm, layer, False), lstm.bias, 1, 0.0, lstm.training,
                     False, True)[0]
    bwd = torch.lstm(reverse(x), (zeros, zeros), _direction(lstm, layer, True), lstm.bias,
                     1, 0.0, lstm.training, False, True)[0]
    return fwd, bwd


def bilstm_final(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``[B, 2 * hidden]``: the final states of a bidirectional, batch-first ``lstm`` over right-padded rows, the
    forward direction's at each row's last step and the backward direction's at its first (a char BiLSTM's
    word vector). Equal to picking them from :func:`bilstm`'s outputs; on CPU with one layer it does not
    reverse the backward outputs back: in reversed order the backward state of the first step sits at the last
    real step, as the forward one does, so one row index picks both."""
    if x.is_cuda or lstm.num_layers != 1 or torch.jit.is_tracing() or not (lstm.bidirectional and lstm.batch_first) \
            or lstm.proj_size:
        out, h = bilstm(lstm, x, lengths), lstm.hidden_size
        last = out.gather(1, (lengths - 1).view(-1, 1, 1).expand(-1, 1, 2 * h)).squeeze(1)
        return torch.cat([last[:, :h], out[:, 0, h:]], 1)
    B, L, H = x.shape[0], x.shape[1], lstm.hidden_size
    reverse = _reverser(reverse_index(lengths, L, x.device))
    fwd, bwd = _directions(lstm, 0, x, reverse, x.new_zeros(1, B, H))
    last = torch.arange(0, B * L, L, device=x.device) + (lengths.to(x.device) - 1)
    return torch.cat([fwd.reshape(B * L, H).index_select(0, last), bwd.reshape(B * L, H).index_select(0, last)], 1)


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
