"""Span Transformer of DSpERT (Zhu, Liu & Li, ACL 2023): deep span representations, batched per span size.

For span size ``k`` and depth ``L~`` over a token Transformer of ``L`` layers with hidden states
``H^0..H^L`` (sub-word level), with ``l0 = L - L~``:

* ``S^{l0,k}_i = max_{i<=t<i+k} dropout(H^{l0}_t)`` (the initial query: max-pooled span window);
* ``S^{l,k}_i = CrossBlock_l(query = S^{l-1,k}_i, keys = values = H^{l-1}_{i..i+k-1})`` for
  ``l = l0+1..L``: exactly a BERT layer (multi-head attention, out-projection + residual + LayerNorm,
  FFN + residual + LayerNorm) except that the single query attends to the span's tokens only (not to
  itself). The blocks are copies of the token Transformer's top ``L~`` layers (or the same modules, tied).

Batching: keys and values are projected once per layer for every token and shared by all sizes; the
windows of one size are a strided ``unfold`` view, so all ``B * (S - k + 1)`` spans of size ``k`` are one
attention with ``k`` keys (a loop over sizes only). ``pack=True`` instead gathers every size into one
``[B, sum_k N_k, K]`` attention with a key-padding mask (fewer kernel launches, more padding). Work and
memory are ``O(k * D)`` per span plus ``O(D^2)`` per span for the query path: linear in the number of
spans. ``checkpoint=True`` recomputes each block in backward (activation checkpointing) for long inputs.

Works with BERT-style layers (``attention.self.{query,key,value,dropout}``, ``attention.output``,
``intermediate``, ``output``): BERT, RoBERTa, MiniLM, ELECTRA.
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint as _checkpoint


def transformer_layers(model: nn.Module) -> nn.ModuleList:
    """The layer list of a BERT-style ``AutoModel`` (``model.encoder.layer``)."""
    encoder = getattr(model, "encoder", None)
    layers = getattr(encoder, "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError(f"{type(model).__name__} has no BERT-style encoder.layer list for the span Transformer")
    for name in ("attention", "intermediate", "output"):
        if not hasattr(layers[0], name) or not hasattr(layers[0].attention, "self"):
            raise ValueError(f"{type(layers[0]).__name__} is not a BERT-style layer (needs attention.self, "
                             "attention.output, intermediate, output)")
    return layers


class SpanTransformer(nn.Module):
    """Span representations of sizes ``k >= 2`` from the token Transformer's hidden states.

    Args:
        layers: the blocks for layers ``l0+1..L`` (BERT-style layers; see :func:`transformer_layers`).
        start_layer: ``l0 = L - L~``: the layer whose states are max-pooled into the initial query.
        pool_dropout: dropout on ``H^{l0}`` before max-pooling (0.2 in the paper).
        pack: one attention over all sizes with a key-padding mask instead of one per size.
        checkpoint: activation checkpointing of every block while training.
    """

    def __init__(self, layers: Sequence[nn.Module], start_layer: int, pool_dropout: float = 0.2,
                 pack: bool = False, checkpoint: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.start_layer, self.pack, self.checkpoint = start_layer, pack, checkpoint
        self.pool_dropout = nn.Dropout(pool_dropout)

    @classmethod
    def from_pretrained(cls, model: nn.Module, depth: int | None = None, tied: bool = False,
                        **kwargs) -> "SpanTransformer":
        """The top ``depth`` layers of ``model`` (``None``: all), deep-copied unless ``tied``.

        Args:
            model: a BERT-style ``AutoModel`` (the token Transformer).
            depth: ``L~``; 0 gives no blocks (the output is the max-pooled last layer: the shallow model).
            tied: share the token Transformer's modules instead of copying them.
            **kwargs: ``pool_dropout``, ``pack``, ``checkpoint``.
        """
        layers = transformer_layers(model)
        depth = len(layers) if depth is None else depth
        if not 0 <= depth <= len(layers):
            raise ValueError(f"span Transformer depth must be in [0, {len(layers)}], got {depth}")
        top = list(layers[len(layers) - depth:])
        span = cls(top if tied else [copy.deepcopy(layer) for layer in top], len(layers) - depth, **kwargs)
        span.is_pretrained = True  # NERModule.parameter_groups: pretrained_lr (as in eznlp)
        return span

    @property
    def depth(self) -> int:
        return len(self.layers)

    # one block ----------------------------------------------------------------------------------------------
    @staticmethod
    def block(layer: nn.Module, query: Tensor, keys: Tensor, values: Tensor, key_mask: Tensor | None) -> Tensor:
        """One cross-attention BERT block.

        Args:
            layer: a BERT-style layer.
            query: ``[B, N, D]`` (one query per span).
            keys, values: projected windows ``[B, N, h, dh, k]`` (views are fine).
            key_mask: ``[B, N, k]`` True on real keys, or ``None`` (all real).
        """
        att = layer.attention.self
        B, N, _ = query.shape
        h, dh = att.num_attention_heads, att.attention_head_size
        q = att.query(query).view(B, N, h, dh)
        scores = torch.einsum("bnhd,bnhdk->bnhk", q, keys.to(q.dtype)) * dh ** -0.5
        if key_mask is not None:
            scores = scores.masked_fill(~key_mask.unsqueeze(2), float("-inf"))
        probs = att.dropout(F.softmax(scores.float(), -1).to(q.dtype))
        context = torch.einsum("bnhk,bnhdk->bnhd", probs, values.to(q.dtype)).reshape(B, N, h * dh)
        hidden = layer.attention.output(context, query)
        return layer.output(layer.intermediate(hidden), hidden)

    def _layer(self, i: int, query: Tensor, below: Tensor, windows) -> Tensor:
        """Project ``below`` to keys/values, cut windows, run block ``i``."""
        layer = self.layers[i]

        def run(query: Tensor, below: Tensor) -> Tensor:
            att = layer.attention.self
            B, S, _ = below.shape
            shape = (B, S, att.num_attention_heads, att.attention_head_size)
            keys, key_mask = windows(att.key(below).view(shape))
            values, _ = windows(att.value(below).view(shape))
            return self.block(layer, query, keys, values, key_mask)

        if self.checkpoint and self.training and torch.is_grad_enabled():
            return _checkpoint(run, query, below, use_reentrant=False)
        return run(query, below)

    # all spans ------------------------------------------------------------------------------------------------
    def forward(self, hidden_states: Sequence[Tensor], sizes: Sequence[int]) -> list[Tensor]:
        """Span states per size.

        Args:
            hidden_states: ``H^0..H^L`` of the token Transformer, each ``[B, S, D]`` (sub-words, no specials).
            sizes: span sizes ``k`` (each >= 1).

        Returns:
            One ``[B, max(0, S - k + 1), D]`` tensor per size, row ``i`` = the span ``[i, i + k)``; spans that
            run into padding hold values computed over padding (mask them downstream).
        """
        if len(hidden_states) != self.start_layer + self.depth + 1:
            raise ValueError(f"expected {self.start_layer + self.depth + 1} hidden states "
                             f"(embeddings + {self.start_layer + self.depth} layers), got {len(hidden_states)}")
        S = hidden_states[0].shape[1]
        sizes = [int(k) for k in sizes]
        if any(k < 1 for k in sizes):
            raise ValueError(f"span sizes must be >= 1, got {sizes}")
        live = [k for k in sizes if k <= S]
        if not live:
            out = {}
        elif self.pack:
            out = self._packed(hidden_states, live)
        else:
            out = {k: self._one_size(hidden_states, k) for k in live}
        empty = hidden_states[-1].new_zeros(hidden_states[-1].shape[0], 0, hidden_states[-1].shape[-1])
        return [out.get(k, empty) for k in sizes]

    def _one_size(self, hs: Sequence[Tensor], k: int) -> Tensor:
        base = self.pool_dropout(hs[self.start_layer])
        query = base.unfold(1, k, 1).amax(-1)  # [B, N, D]

        def windows(x: Tensor) -> tuple[Tensor, None]:  # [B, S, h, dh] -> [B, N, h, dh, k] view
            return x.unfold(1, k, 1), None

        for i in range(self.depth):
            query = self._layer(i, query, hs[self.start_layer + i], windows)
        return query

    def _packed(self, hs: Sequence[Tensor], sizes: list[int]) -> dict[int, Tensor]:
        base = hs[self.start_layer]
        B, S, D = base.shape
        device, K = base.device, max(sizes)
        counts = [S - k + 1 for k in sizes]
        width = torch.repeat_interleave(torch.tensor(sizes, device=device), torch.tensor(counts, device=device))
        start = torch.cat([torch.arange(n, device=device) for n in counts])  # one small tensor per size
        offset = torch.arange(K, device=device)
        index = (start.unsqueeze(1) + offset).clamp(max=S - 1)  # [M, K]
        key_mask = (offset < width.unsqueeze(1)).unsqueeze(0).expand(B, -1, -1)  # [B, M, K]

        def gather(x: Tensor) -> Tensor:  # [B, S, ...] -> [B, M, K, ...]
            return x[:, index]

        pooled = gather(self.pool_dropout(base)).masked_fill(~key_mask.unsqueeze(-1), float("-inf"))
        query = pooled.amax(2)

        def windows(x: Tensor) -> tuple[Tensor, Tensor]:  # [B, S, h, dh] -> [B, M, h, dh, K]
            return gather(x).permute(0, 1, 3, 4, 2), key_mask

        for i in range(self.depth):
            query = self._layer(i, query, hs[self.start_layer + i], windows)
        return dict(zip(sizes, torch.split(query, counts, dim=1)))

    # reference ------------------------------------------------------------------------------------------------
    def forward_per_span(self, hidden_states: Sequence[Tensor], sizes: Sequence[int]) -> list[Tensor]:
        """The same result computed one span at a time (a Python loop; for benchmarks and checks only)."""
        outs = []
        for k in sizes:
            B, S, D = hidden_states[0].shape
            rows = []
            for b in range(B):
                for i in range(S - k + 1):
                    hs = [h[b:b + 1, i:i + k] for h in hidden_states]
                    rows.append(self._one_size(hs, k))
            outs.append(torch.cat(rows, 1).view(B, max(0, S - k + 1), D) if rows
                        else hidden_states[-1].new_zeros(B, 0, D))
        return outs
