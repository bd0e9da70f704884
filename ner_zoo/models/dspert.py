"""DSpERT: E. Zhu, Y. Liu, J. Li. *Deep Span Representations for Named Entity Recognition.* Findings of ACL 2023.
Notes on the paper and the official code (eznlp): ``docs/papers.md``.

Spans live on sub-words (``K``, the config's ``max_width``, counts sub-words); gold word spans map to
``[first sub-word of the start word, end of the last word)``. Map from the paper (Sections 3.1-3.3) to code:

* token Transformer ``H^0..H^L`` (sub-word level, target sentence only): ``TransformerEncoder.encode`` in
  :meth:`DSpERTNet.encode` (with optional document context, sentences longer than the model are windowed);
* span Transformer ``S^{l,k}`` for ``k = 2..K`` (Eqs. 1-4): :class:`~ner_zoo.modules.span_transformer.
  SpanTransformer` over the top ``L~`` layers (``depth``; 0 = max-pooled last layer, the shallow model),
  a copy of the token Transformer's layers (``tied_weights``: the same modules); ``S^{L,1} = H^L``;
* BiLSTM before the classifier: one over ``H^L`` (size 1), a second one shared by the sizes ``k >= 2``
  running along the start positions of ``S^{L,k}`` (:meth:`DSpERTNet.span_states`, ``lstm_hidden``);
* ``z = FFN([h_span; w_k])`` with a 25-d width embedding, ``p = softmax(W z)`` (:meth:`DSpERTNet.span_logits`);
  departure: with an uncased encoder (the offline MiniLM) its ``casing_dim`` appends the casing embedding of
  the span's first and last word, ``[h_span; w_k; c_first; c_last]`` (0 for cased encoders, as the paper's);
* boundary smoothing loss (Zhu & Li 2022, eps 0.1), summed over the spans of a sentence (``loss``);
* decoding: argmax, drop NONE, keep word-aligned spans (:func:`word_aligned_spans`), greedy clash removal
  (flat or nested by task, :meth:`~ner_zoo.training.span_model.SpanModel.select_spans`).
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import torch
from torch import Tensor, nn

from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.span_losses import BoundarySmoothingLoss, SpanLoss
from ner_zoo.modules.span_transformer import SpanTransformer
from ner_zoo.modules.spans import SpanGrid, WidthEmbedding, boundary_representation
from ner_zoo.modules.transformer import EncoderOutput, TransformerEncoder
from ner_zoo.ranges import NonNegativeInt, PositiveFloat, PositiveInt, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.network import warn
from ner_zoo.training.span_model import SpanBatch, SpanModel


def word_to_subword_spans(gold: Tensor, word_start: Tensor, word_end: Tensor) -> Tensor:
    """Word spans ``[B, G, 3]`` (start, end exclusive, label) -> the same spans in sub-word indices."""
    start = word_start.gather(1, gold[..., 0].clamp(0, word_start.shape[1] - 1))
    end = word_end.gather(1, (gold[..., 1] - 1).clamp(0, word_end.shape[1] - 1))
    return torch.stack([start, end, gold[..., 2]], -1)


def word_aligned_spans(spans: Tensor, word_start: Tensor, word_end: Tensor, word_mask: Tensor) -> tuple[Tensor, Tensor]:
    """Sub-word spans -> word spans; a span is word-aligned when it starts at a word's first sub-word and
    ends at a word's last sub-word.

    Args:
        spans: ``[B, N, 2]`` sub-word spans (end exclusive).
        word_start, word_end: ``[B, L]`` first and one-past-last sub-word of each word.
        word_mask: ``[B, L]`` real words.

    Returns:
        ``word spans [B, N, 2]`` and ``aligned [B, N]`` (word spans are meaningless where not aligned).
    """
    B, L = word_start.shape
    n = int(max(word_end.max(), spans.max()) if spans.numel() else word_end.max()) + 2
    words = torch.arange(L, device=spans.device).expand(B, L)
    trash = torch.full_like(word_start, n - 1)  # padding words write to a discarded cell
    first = torch.full((B, n), -1, dtype=torch.long, device=spans.device)
    first = first.scatter(1, torch.where(word_mask, word_start, trash), words)
    last = torch.full((B, n), -1, dtype=torch.long, device=spans.device)
    last = last.scatter(1, torch.where(word_mask, word_end, trash), words + 1)
    first[:, -1] = last[:, -1] = -1
    s, e = first.gather(1, spans[..., 0].clamp(0, n - 1)), last.gather(1, spans[..., 1].clamp(0, n - 1))
    return torch.stack([s, e], -1), (s >= 0) & (e > s)


class DSpERTNet(SpanModel):
    """Token Transformer + span Transformer -> BiLSTM streams -> [span; width] -> FFN -> softmax.

    Args:
        vocabs: linked from the data module.
        encoder: the token Transformer (:class:`~ner_zoo.modules.transformer.TransformerEncoder`,
            ``class_path``/``init_args``: ``model`` (a BERT-style model), ``max_subwords_per_word`` (5 in
            eznlp), ``context`` (neighbouring sentences per side), ``plm_dropout`` (hidden/attention dropout
            of the PLM and of its copy, 0.2), ``casing_dim`` (casing-class embedding of the span's first and
            last word appended to the classifier input; not in the paper, whose encoders are cased)); DSpERT
            reads every layer's sub-word states, so the encoder's ``pooling``, ``layers`` and ``dropout`` do
            not apply (a value other than their defaults is refused). ``None``: the offline MiniLM-L6 with
            ``max_subwords_per_word`` 5, ``plm_dropout`` 0.2.
        max_width: longest span ``K``, in sub-words (Table 7: 25/25/18/16/10/16 for ACE04/ACE05/GENIA/KBP17/CoNLL03/
            OntoNotes5); longer gold entities cannot be predicted (warned once).
        depth: ``L~``, number of top layers in the span Transformer (``None``: all; 0: shallow max-pool).
        tied_weights: the span Transformer shares the token Transformer's weights (ablation).
        pack: one packed attention over all sizes instead of one per size (same result).
        checkpoint: activation checkpointing of the span Transformer blocks (long documents).
        pool_dropout: dropout before the initial max-pooling (0.2).
        lstm_hidden: BiLSTM size per direction (200, i.e. 400 in total); 0: no BiLSTM (ablation).
        lstm_dropout: dropout on the BiLSTM input (0.5).
        width_dim: width embedding size (25; 0: none).
        ffn_dim: classifier hidden size (300, ReLU).
        ffn_dropout: dropout on the FFN input and on its output (0.4, 0.2).
        loss: span loss (default boundary smoothing, eps 0.1, summed per sentence).
        pretrained_lr: learning rate of the token and span Transformers (2e-5; the optimiser's lr is the rest).
        **kwargs: ``overlap``, ``optimizer``, ``lr_scheduler`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, encoder: TransformerEncoder | None = None, max_width: PositiveInt = 10,
                 depth: NonNegativeInt | None = None, tied_weights: bool = False, pack: bool = False, checkpoint: bool = False,
                 pool_dropout: Probability = 0.2, lstm_hidden: NonNegativeInt = 200, lstm_dropout: Probability = 0.5, width_dim: NonNegativeInt = 25,
                 ffn_dim: PositiveInt = 300, ffn_dropout: Sequence[Probability] = (0.4, 0.2), loss: SpanLoss | None = None,
                 pretrained_lr: PositiveFloat | None = 2e-5, **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)  # pretrained_lr: read by the task module (its default here)
        if max_width < 1:
            raise ValueError(f"max_width must be >= 1, got {max_width}")
        self.max_width = max_width
        # the encoder's plm_dropout is set before the span Transformer copies its layers
        self.encoder = encoder if encoder is not None else TransformerEncoder(max_subwords_per_word=5, plm_dropout=0.2)
        given = {"pooling": self.encoder.pooling, "layers": self.encoder.layers,
                 "dropout": getattr(self.encoder.dropout, "p", 0.0)}  # nn.Identity when the dropout is 0
        defaults = inspect.signature(TransformerEncoder).parameters
        unused = {k: v for k, v in given.items() if v != defaults[k].default}
        if unused:
            raise ValueError(f"the encoder's {', '.join(f'{k}={v!r}' for k, v in unused.items())} would be ignored "
                             f"(DSpERT reads every layer's sub-word states): leave {'it' if len(unused) == 1 else 'them'} "
                             "out")
        self.span_transformer = SpanTransformer.from_pretrained(self.encoder.model, depth, tied=tied_weights,
                                                                pool_dropout=pool_dropout, pack=pack,
                                                                checkpoint=checkpoint)
        dim = self.encoder.model.config.hidden_size
        self.lstm_dropout = nn.Dropout(lstm_dropout)
        self.token_lstm = BiLSTMEncoder(dim, lstm_hidden) if lstm_hidden > 0 else None
        self.span_lstm = BiLSTMEncoder(dim, lstm_hidden) if lstm_hidden > 0 else None
        out = 2 * lstm_hidden if lstm_hidden > 0 else dim
        self.width = WidthEmbedding(max_width, width_dim) if width_dim > 0 else None
        d_in, d_out = ffn_dropout if isinstance(ffn_dropout, Sequence) else (ffn_dropout, ffn_dropout)
        span_dim = out + width_dim + 2 * self.encoder.casing_dim
        self.classifier = nn.Sequential(nn.Dropout(d_in), nn.Linear(span_dim, ffn_dim), nn.ReLU(),
                                        nn.Dropout(d_out), nn.Linear(ffn_dim, self.num_classes))
        self.loss = loss if loss is not None else BoundarySmoothingLoss(0.1, 1, reduction="sum")
        self._warned_width = False

    # representations ----------------------------------------------------------------------------------------
    def span_states(self, hidden: Sequence[Tensor], mask: Tensor, grid: SpanGrid) -> Tensor:
        """``[B, S_grid, D']`` states of every grid span: size 1 = ``H^L``, size k = span Transformer, then
        the BiLSTM streams (one batched run over all sizes ``k >= 2``)."""
        B, S, _ = hidden[-1].shape
        sizes = [k for k in grid.widths if k >= 2]
        spans = self.span_transformer(hidden, sizes)
        token = hidden[-1]
        if self.token_lstm is None:
            return torch.cat([token] + spans, 1)
        n_sub = mask.sum(1)
        token = self.token_lstm(self.lstm_dropout(token), mask)
        live = [(k, s) for k, s in zip(sizes, spans) if s.shape[1] > 0]  # a prefix: sizes ascend
        missing = [token.new_zeros(B, 0, token.shape[-1])] * (len(sizes) - len(live))
        if not live:
            return torch.cat([token] + missing, 1)
        stacked = torch.cat([nn.functional.pad(s, (0, 0, 0, S - s.shape[1])) for _, s in live], 0)
        n = torch.cat([(n_sub - k + 1).clamp(min=1) for k, _ in live])  # empty rows: one dummy step
        streams = self.span_lstm(self.lstm_dropout(stacked), torch.arange(S, device=mask.device) < n.unsqueeze(1))
        return torch.cat([token] + [t[:, :S - k + 1] for (k, _), t in zip(live, streams.split(B, 0))] + missing, 1)

    def span_logits(self, batch: SpanBatch) -> tuple[EncoderOutput, SpanGrid, Tensor]:
        """Encoder output, the sub-word span grid (sizes ``1..K``) and logits ``[B, S_grid, num_classes]``."""
        enc = self.encoder.encode_sentences(batch.sentences, batch.mask.device, hidden_states=True)
        mask = enc.subword_mask
        grid = SpanGrid.build(mask.sum(1), self.max_width, mask.shape[1])
        h = self.span_states(enc.hidden_states, mask, grid)
        parts = [h] + ([self.width(grid.spans).to(h.dtype)] if self.width is not None else [])
        if enc.subword_casing is not None:  # casing of the span's first and last word
            parts.append(boundary_representation(enc.subword_casing, grid.spans).to(h.dtype))
        return enc, grid, self.classifier(torch.cat(parts, -1))

    # NERModule ------------------------------------------------------------------------------------------------
    def compute_loss(self, batch: SpanBatch) -> Tensor:
        self.check_gold(batch)
        enc, grid, logits = self.span_logits(batch)
        gold = word_to_subword_spans(batch.gold_spans, enc.word_start, enc.word_end)
        if not self._warned_width:
            wide = int((batch.gold_mask & (gold[..., 1] - gold[..., 0] > self.max_width)).sum())
            if wide:
                warn(f"{wide} gold entities of a training batch are longer than max_width="
                               f"{self.max_width} sub-words and cannot be predicted (warned once)")
                self._warned_width = True
        return self.loss(logits, grid, gold, batch.gold_mask)

    def decode(self, batch: SpanBatch) -> list[list]:
        enc, grid, logits = self.span_logits(batch)
        spans, aligned = word_aligned_spans(grid.spans, enc.word_start, enc.word_end, enc.word_mask)
        return self.select_spans(spans, grid.mask & aligned, logits.float().softmax(-1))


__getattr__ = hosts(DSpERTNet)  # DSpERT: the LightningModule that fits DSpERTNet (ner_zoo.training.base)
