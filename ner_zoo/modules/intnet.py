"""IntNet: a funnel-shaped, densely connected wide CNN over characters (Xin et al., 2018).

Y. Xin, E. Hart, V. Mahajan, J.-D. Ruvini. *Learning Better Internal Structure of Words for Sequence
Labeling.* EMNLP 2018; configuration of Luo et al. (AAAI 2020, HCR): char dim 32, 7 layers, kernels 3 and
5, 32 filters in the first layer, 16 in the others, which gives 160-d words.

Layout: an initial layer of parallel convolutions (one per kernel width, ``first_filters`` each), then
``(layers - 1) / 2`` blocks of [1x1 conv -> ``filters``; parallel convs of ``filters`` each], every block's
output concatenated with all earlier features (dense connections); ReLU everywhere; max over the word's
characters. Unlike the reference code, padded character positions are zeroed after every convolution, so
a word's vector does not depend on how long the other words of the batch are.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from ner_zoo.modules.char_encoders import exporting
from ner_zoo.ranges import PositiveInt, Probability, check_ranges


class IntNet(nn.Module):
    """Character ids ``[B, L, C]`` -> word vectors ``[B, L, output_dim]`` (zero rows for padding words).

    Args:
        num_chars: size of the character vocabulary (id 0 is padding).
        char_dim: character embedding size.
        first_filters: filters per kernel width in the initial layer.
        filters: filters of the 1x1 bottleneck and per kernel width in each later block.
        layers: convolution layers: 1 initial + 2 per block, so an odd number (7 in HCR).
        kernels: kernel widths used in parallel (odd).
        dropout: dropout on the character embeddings (0.5 in the HCR code).
        padding_idx: the padding char id.
    """

    def __init__(self, num_chars: int, char_dim: PositiveInt = 32, first_filters: PositiveInt = 32, filters: PositiveInt = 16,
                 layers: PositiveInt = 7, kernels: Sequence[PositiveInt] = (3, 5), dropout: Probability = 0.5, padding_idx: int = 0):
        super().__init__()
        check_ranges(IntNet.__init__, locals())
        kernels = tuple(int(k) for k in kernels)
        if layers < 1 or layers % 2 == 0:
            raise ValueError(f"layers must be a positive odd number (1 initial + 2 per block), got {layers}")
        if not kernels or any(k < 1 or k % 2 == 0 for k in kernels):
            raise ValueError(f"kernels must be positive odd widths, got {kernels}")
        self.padding_idx = padding_idx
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=padding_idx)
        bound = math.sqrt(3.0 / char_dim)
        with torch.no_grad():
            self.embedding.weight.uniform_(-bound, bound)
            self.embedding.weight[padding_idx].zero_()
        self.dropout = nn.Dropout(dropout)
        self.initial = nn.ModuleList(nn.Conv1d(char_dim, first_filters, k, padding=k // 2) for k in kernels)
        width = first_filters * len(kernels)
        self.bottlenecks, self.blocks = nn.ModuleList(), nn.ModuleList()
        for _ in range((layers - 1) // 2):
            self.bottlenecks.append(nn.Conv1d(width, filters, 1))
            self.blocks.append(nn.ModuleList(nn.Conv1d(filters, filters, k, padding=k // 2) for k in kernels))
            width += filters * len(kernels)
        self.output_dim = width

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """``[B, L, C]`` char ids -> ``[B, L, output_dim]``."""
        if chars.dim() != 3:
            raise ValueError(f"char ids must be [batch, words, chars], got shape {tuple(chars.shape)}")
        B, L = chars.shape[:2]
        flat = chars.reshape(B * L, -1)
        lengths = (flat != self.padding_idx).sum(1)
        out = self.embedding.weight.new_zeros(B * L, self.output_dim)
        if exporting():  # ONNX: every slot at full width (no frozen shapes); an empty one's features are all 0
            index, words = None, flat
        else:
            index = lengths.nonzero().squeeze(1)  # only real words are encoded
            if index.numel() == 0:
                return out.view(B, L, self.output_dim)
            lengths = lengths[index]
            words = flat[index, : int(lengths.max())]
        inside = (torch.arange(words.shape[1], device=words.device) < lengths.unsqueeze(1)).unsqueeze(1)  # [N,1,C]
        x = self.dropout(self.embedding(words)).transpose(1, 2)  # [N, char_dim, C]
        feats = torch.cat([torch.relu(conv(x)) for conv in self.initial], 1) * inside
        for bottleneck, convs in zip(self.bottlenecks, self.blocks):
            z = torch.relu(bottleneck(feats)) * inside
            new = torch.cat([torch.relu(conv(z)) for conv in convs], 1) * inside
            feats = torch.cat([feats, new], 1)
        # ReLU >= 0 and padding is 0, so the max over all positions is the max over the real characters
        if index is None:
            return feats.amax(2).view(B, L, self.output_dim)
        out = out.to(feats.dtype).index_copy(0, index, feats.amax(2))
        return out.view(B, L, self.output_dim)
