"""Pointer boundary decoder: each word points to the last word of the entity it starts, or to a sentinel.

After BDRYBOT (Li, Sun, Ma 2020) as re-designed by MIN (Li et al., ACL 2021, Sec. 3.2, Eqs. 8-10): every
word is decoded (no skipping), so one batched LSTM call serves the whole sequence.

* a learned **sentinel** state sits right after each sentence, at index ``n`` (0-based) of a sentence of
  ``n`` words, whatever the padded length; positions beyond it are masked;
* decoder input ``s_j = h_{j-1} + h_j + h_{j+1}`` (zeros beyond the sentence edges, never the sentinel),
  ``d_j = LSTM(s_j, d_{j-1})`` (unidirectional);
* ``u_{j,i} = d_j^T W h_i + U^T d_j + V^T h_i + b`` (a scalar :class:`~ner_zoo.modules.biaffine.Biaffine`),
  ``p(i | j) = softmax_i u_{j,i}`` over ``i in [j, n]`` (``n`` = the sentinel);
* gold: an entity's first word points to its last word (a one-word entity to itself), every other word to
  the sentinel (built by MIN's collator, `ner_zoo.models.min.pointer_targets`);
* segment information ``H^Seg_j = sum_{i=j}^{min(n-1, j+K-1)} p(i|j) [h_j; h_i; h_i - h_j; h_i * h_j]``
  (:func:`segment_information`): the sentinel is left out and probabilities are not renormalised.
"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ner_zoo.modules.biaffine import Biaffine
from ner_zoo.modules.precision import autocast_off, to_fp32

IGNORE = -100  # target of positions without a pointer loss (padding)
_MASKED = -1e9  # score of an impossible end position (fp32)


def pointer_mask(lengths: Tensor, max_length: int, window: int | None = None) -> Tensor:
    """Allowed ``(start j, end i)`` pairs ``[B, L, L + 1]``: ``j < n`` and ``j <= i <= n`` (``n`` = sentinel).

    With ``window``, ends are further limited to ``i - j < window`` (the sentinel stays allowed).
    """
    j = torch.arange(max_length, device=lengths.device).view(1, -1, 1)
    i = torch.arange(max_length + 1, device=lengths.device).view(1, 1, -1)
    n = lengths.view(-1, 1, 1)
    valid = (j < n) & (i >= j) & (i <= n)
    if window is not None:
        valid &= (i - j < window) | (i == n)
    return valid


def segment_information(states: Tensor, probs: Tensor, lengths: Tensor, max_segment: int) -> Tensor:
    """``H^Seg [B, L, 4D]`` from word states ``[B, L, D]`` and pointer probabilities ``[B, L, L + 1]``.

    The window ``i = j .. j + K - 1`` (cut at the sentence end) is gathered at once (``[B, L, K, D]``).
    Since the segment vector is linear in ``h_i``, the sum is ``[s h_j; m; m - s h_j; m * h_j]`` with
    ``m = sum_i p(i|j) h_i`` and ``s = sum_i p(i|j)``.
    """
    B, L, D = states.shape
    offsets = torch.arange(L, device=states.device).unsqueeze(1) + torch.arange(max_segment, device=states.device)
    valid = offsets.unsqueeze(0) < lengths.view(-1, 1, 1)  # [B, L, K]; also excludes the sentinel
    index = offsets.clamp_max(L - 1)  # [L, K]
    p = probs.gather(2, index.unsqueeze(0).expand(B, -1, -1)) * valid
    window = states[:, index.reshape(-1)].view(B, L, max_segment, D)
    p = p.to(states.dtype)
    m = torch.einsum("blk,blkd->bld", p, window)
    sh = p.sum(-1, keepdim=True) * states
    return torch.cat([sh, m, m - sh, m * states], dim=-1)


class PointerBoundaryDecoder(nn.Module):
    """Sentinel, neighbour-sum LSTM decoder, biaffine pointer and segment information (MIN, Eqs. 8-10).

    Args:
        input_dim: size ``D`` of the boundary states ``h``.
        decoder_hidden: size of the unidirectional decoder LSTM (``None``: ``input_dim``).
        max_segment: longest segment ``K`` summed into the segment information (MIN: 6).
        window: cap the pointer's softmax support at ``window`` words after the start (plus the sentinel);
            ``None`` (MIN) keeps the full support ``[j, n]``.
    """

    def __init__(self, input_dim: int, decoder_hidden: int | None = None, max_segment: int = 6,
                 window: int | None = None):
        super().__init__()
        if max_segment < 1 or (window is not None and window < 1):
            raise ValueError("max_segment and window must be positive")
        hidden = decoder_hidden or input_dim
        self.max_segment, self.window = max_segment, window
        self.sentinel = nn.Parameter(torch.empty(input_dim).normal_(0.0, 0.1))
        self.decoder = nn.LSTM(input_dim, hidden, batch_first=True)
        self.scorer = Biaffine(hidden, input_dim, 1)
        self.output_dim = 4 * input_dim

    def extended(self, states: Tensor, mask: Tensor) -> Tensor:
        """``[B, L + 1, D]``: the (masked) states with the sentinel at index ``n`` of each row."""
        h = states * mask.unsqueeze(-1).to(states.dtype)
        ext = torch.cat([h, h.new_zeros(h.shape[0], 1, h.shape[2])], 1)
        at = torch.arange(ext.shape[1], device=ext.device) == mask.sum(1, keepdim=True)  # [B, L + 1]
        return torch.where(at.unsqueeze(-1), self.sentinel.to(ext.dtype), ext)

    def decode_states(self, states: Tensor, mask: Tensor) -> Tensor:
        """``d_j = LSTM(h_{j-1} + h_j + h_{j+1})`` ``[B, L, H]``, in fp32 whatever the autocast."""
        h = states * mask.unsqueeze(-1).to(states.dtype)
        s = h + F.pad(h[:, :-1], (0, 0, 1, 0)) + F.pad(h[:, 1:], (0, 0, 0, 1))
        with autocast_off(s):
            # a unidirectional LSTM: padding after the sentence cannot change the states before it
            return self.decoder(to_fp32(s))[0]

    def forward(self, states: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Pointer log-probabilities ``[B, L, L + 1]`` (fp32) and segment information ``[B, L, 4D]``.

        Rows of padded positions are uniform over nothing useful; they carry no loss and no segment value.
        """
        lengths = mask.sum(1)
        h = states * mask.unsqueeze(-1).to(states.dtype)
        ext = self.extended(h, mask)
        d = self.decode_states(h, mask)
        scores = self.scorer(d.to(ext.dtype), ext).squeeze(-1).float()
        valid = pointer_mask(lengths, states.shape[1], self.window)
        log_p = torch.log_softmax(scores.masked_fill(~valid, _MASKED), dim=-1)
        probs = log_p.exp() * valid
        seg = segment_information(h, probs, lengths, self.max_segment)
        return log_p, seg

    @staticmethod
    def loss(log_p: Tensor, target: Tensor) -> Tensor:
        """``L_Bdy``: pointer cross-entropy averaged over each sentence's words, then over the batch."""
        keep = target != IGNORE
        nll = -log_p.gather(2, target.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        per_sentence = (nll * keep).sum(1) / keep.sum(1).clamp_min(1)
        return per_sentence.mean()
