"""Biaffine NER: J. Yu, B. Bohnet, M. Poesio. *Named Entity Recognition as Dependency Parsing.* ACL 2020;
with boundary smoothing (E. Zhu, J. Li. *Boundary Smoothing for Named Entity Recognition.* ACL 2022), the
strong baseline of DSpERT (``docs/papers.md``, DSpERT).

Map to code: word states ``x`` from a pretrained transformer (:class:`~ner_zoo.modules.transformer.
TransformerEncoder`, first sub-word), optional BiLSTM ``h = BiLSTM(x)``; ``h_s = FFNN_s(h)``,
``h_e = FFNN_e(h)`` (:attr:`BiaffineNERNet.start_ffn` / ``end_ffn``); ``r_m(s, e) = h_s^T U_m h_e + W_m
[h_s; h_e] + b_m`` per class (:class:`~ner_zoo.modules.biaffine.Biaffine` with both biases) for every
``s <= e`` with ``e - s < max_width`` (:meth:`BiaffineNERNet.span_logits`); softmax cross-entropy or soft
(boundary-smoothed) cross-entropy (``loss``); decoding: argmax, drop NONE, greedy by probability without
clashes (flat: no overlap; nested: no crossing).

Differences from Yu et al.: no fastText/char-CNN inputs and no highway BiLSTM (the transformer is the
encoder, as in the boundary-smoothing paper), one learning-rate group for the PLM (``pretrained_lr``), and
with an uncased encoder (the offline MiniLM) a casing embedding on each word state (the encoder's ``casing_dim``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ner_zoo.modules.biaffine import Biaffine
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.span_losses import BoundarySmoothingLoss, SpanLoss
from ner_zoo.modules.spans import SpanGrid
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.ranges import NonNegativeInt, PositiveFloat, PositiveInt, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.span_model import GridSpanModel, SpanBatch


class BiaffineNERNet(GridSpanModel):
    """Transformer word states (-> BiLSTM) -> start / end FFNNs -> biaffine scores of every span -> softmax.

    Args:
        vocabs: linked from the data module.
        encoder: the transformer (:class:`~ner_zoo.modules.transformer.TransformerEncoder`, ``class_path``/
            ``init_args``: ``model``, ``pooling``, ``max_subwords_per_word``, ``context`` (neighbouring
            sentences per side), ``plm_dropout`` (hidden/attention dropout inside it), ``casing_dim`` (a
            casing-class embedding appended to the word states; not in Yu et al., whose encoders are cased));
            ``None``: the offline MiniLM-L6 with ``plm_dropout`` 0.2.
        lstm_hidden: BiLSTM size per direction (0: no BiLSTM, FFNNs on the transformer states).
        lstm_layers: BiLSTM layers.
        dropout: dropout on the encoder output and on the BiLSTM output.
        ffn_dim: size of the start / end representations (150 in Yu et al.).
        ffn_dropout: dropout on the start / end representations.
        max_width: longest span scored, in words (``None``: every span of the sentence).
        loss: span loss (default boundary smoothing, eps 0.1, summed per sentence; ``CrossEntropySpanLoss``
            for the original).
        pretrained_lr: learning rate of the transformer (the optimiser's lr is the rest).
        **kwargs: ``overlap``, ``optimizer``, ``lr_scheduler`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, encoder: TransformerEncoder | None = None, lstm_hidden: NonNegativeInt = 200,
                 lstm_layers: PositiveInt = 1, dropout: Probability = 0.4, ffn_dim: PositiveInt = 150, ffn_dropout: Probability = 0.2,
                 max_width: PositiveInt | None = None, loss: SpanLoss | None = None, pretrained_lr: PositiveFloat | None = 2e-5,
                 **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)  # pretrained_lr: read by the task module (its default here)
        if max_width is not None and max_width < 1:
            raise ValueError(f"max_width must be >= 1 or null, got {max_width}")
        self.max_width = max_width
        self.encoder = encoder if encoder is not None else TransformerEncoder(plm_dropout=0.2)
        dim = self.encoder.output_dim
        self.lstm = BiLSTMEncoder(dim, lstm_hidden, num_layers=lstm_layers) if lstm_hidden > 0 else None
        dim = self.lstm.output_dim if self.lstm is not None else dim
        self.dropout = nn.Dropout(dropout)
        self.start_ffn = nn.Sequential(nn.Linear(dim, ffn_dim), nn.ReLU(), nn.Dropout(ffn_dropout))
        self.end_ffn = nn.Sequential(nn.Linear(dim, ffn_dim), nn.ReLU(), nn.Dropout(ffn_dropout))
        self.biaffine = Biaffine(ffn_dim, ffn_dim, self.num_classes)
        self.loss = loss if loss is not None else BoundarySmoothingLoss(0.1, 1, reduction="sum")

    def span_logits(self, batch: SpanBatch) -> tuple[SpanGrid, Tensor]:
        """The word span grid (widths ``1..max_width``) and the logits ``[B, S, num_classes]`` of its spans."""
        enc = self.encoder.encode_sentences(batch.sentences, batch.mask.device, hidden_states=False)
        x, mask = self.dropout(enc.word_states), enc.word_mask
        if self.lstm is not None:
            x = self.dropout(self.lstm(x, mask))
        L = x.shape[1]
        scores = self.biaffine(self.start_ffn(x), self.end_ffn(x))  # [B, L(start), L(last), C]
        grid = SpanGrid.build(mask.sum(1), min(self.max_width or L, L), L)
        b = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
        start, last = grid.spans[..., 0], (grid.spans[..., 1] - 1).clamp(max=L - 1)
        return grid, scores[b, start, last]


__getattr__ = hosts(BiaffineNERNet)  # BiaffineNER: the LightningModule that fits BiaffineNERNet (ner_zoo.training.base)
