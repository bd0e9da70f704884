"""Base networks of span models (plain torch): gold spans as tensors, span-score decoding.

A span model classifies spans into NONE (id 0) or an entity type (id ``1..C``, the order of
``vocabs.labels``). Decoding is nested (no crossing) for the ``nested_ner`` task and flat (no overlap)
otherwise, so the same model runs on GENIA/ACE and on CoNLL-2003; ``overlap`` overrides it.
Besides the per-type F1, the task module (:class:`~ner_zoo.training.base.NERModule`) logs for span models F1 per
entity length (``val/f1/len=1`` ... ``test/f1/len>=10``) and of nested and flat entities (``test/f1/nested``,
``test/f1/flat``), which the run record keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Sequence

import torch
from torch import Tensor

from ner_zoo.data.batching import Batch, Collator
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.errors import LabelError
from ner_zoo.modules.span_decoding import decode_batch
from ner_zoo.ranges import check_choices
from ner_zoo.training.network import Network


class ScoredSpans(list):
    """A sentence's predicted spans (a plain list of :class:`Span` to every reader) that also carries one
    confidence in [0, 1] per span, ``scores`` (the span classifier's probability of the predicted label)."""

    def __init__(self, spans=(), scores=()):
        super().__init__(spans)
        self.scores = list(scores)


def scored(pairs) -> ScoredSpans:
    """``(span, score)`` pairs -> :class:`ScoredSpans` sorted by span."""
    pairs = sorted(pairs)
    return ScoredSpans([p[0] for p in pairs], [p[1] for p in pairs])


def compact(keep: Tensor, *tensors: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
    """Move the kept entries of each row to the front (stable), cut to the longest row:
    ``(pick [B, n], valid [B, n], [t gathered along dim 1 for t in tensors])``."""
    n = int(keep.sum(1).max()) if keep.numel() else 0
    pick = torch.sort(keep.byte(), dim=1, descending=True, stable=True).indices[:, :n]
    out = []
    for t in tensors:
        index = pick.view(*pick.shape, *([1] * (t.ndim - 2))).expand(*pick.shape, *t.shape[2:])
        out.append(t.gather(1, index))
    return pick, keep.gather(1, pick), out


def span_rows(spans: Tensor, labels: Tensor, keep: Tensor, scores: Tensor, names: Sequence[str]) -> list[ScoredSpans]:
    """Per row, the kept ``spans [B, N, 2]`` as :class:`Span` (label id ``k`` -> ``names[k - 1]``; 0 = NONE) with
    their ``scores``."""
    return [scored((Span(s, e, names[k - 1]), q) for (s, e), k, ok, q in zip(rows, labs, oks, qs) if ok)
            for rows, labs, oks, qs in zip(spans.tolist(), labels.tolist(), keep.tolist(), scores.tolist())]


@dataclass
class SpanBatch(Batch):
    """A :class:`~ner_zoo.data.batching.Batch` plus gold spans as tensors.

    Attributes:
        gold_spans: ``[B, G, 3]`` long: start, end (exclusive), label id (``1..C``); padding rows are 0.
        gold_mask: ``[B, G]`` True for real gold spans.
        unknown_labels: gold spans whose label the model does not know (left out of ``gold_spans``;
            training on such a batch raises, prediction ignores gold).
    """

    gold_spans: Tensor | None = None
    gold_mask: Tensor | None = None
    unknown_labels: int = 0

    def to(self, device: torch.device | str, non_blocking: bool = False, **kwargs: object) -> "SpanBatch":
        moved = super().to(device, non_blocking=non_blocking, **kwargs)
        move = lambda t: None if t is None else t.to(device, non_blocking=non_blocking)  # noqa: E731
        return replace(moved, gold_spans=move(self.gold_spans), gold_mask=move(self.gold_mask))


class SpanCollator:
    """Default featurisation (words, chars, features; no tags) plus gold span tensors.

    Args:
        base: the token collator (built with ``tags=None``).
        labels: entity types; label id = position + 1.
    """

    def __init__(self, base: Collator, labels: Sequence[str]):
        self.base = base
        self.label_ids = {label: i + 1 for i, label in enumerate(labels)}

    def gold(self, sentences: Sequence[Sentence]) -> tuple[Tensor, Tensor, int]:
        rows = [[(sp.start, sp.end, self.label_ids[sp.label]) for sp in (s.spans or []) if sp.label in self.label_ids]
                for s in sentences]
        unknown = sum(len(s.spans or []) for s in sentences) - sum(len(r) for r in rows)
        g = max([1] + [len(r) for r in rows])
        gold = torch.zeros(len(rows), g, 3, dtype=torch.long)
        mask = torch.zeros(len(rows), g, dtype=torch.bool)
        for i, r in enumerate(rows):
            if r:
                gold[i, : len(r)] = torch.tensor(r, dtype=torch.long)
                mask[i, : len(r)] = True
        return gold, mask, unknown

    def __call__(self, items: Sequence[tuple[int, Sentence]]) -> SpanBatch:
        batch = self.base(items)
        gold, mask, unknown = self.gold(batch.sentences)
        return SpanBatch(**{f.name: getattr(batch, f.name) for f in fields(Batch)}, gold_spans=gold,
                         gold_mask=mask, unknown_labels=unknown)


class SpanModel(Network):
    """A span classifier; subclasses implement ``compute_loss(batch)`` and ``decode(batch)``, usually via
    :meth:`select_spans` on their span probabilities.

    Args:
        overlap: ``flat`` (no overlapping output spans) or ``nested`` (nesting allowed, no crossing);
            ``None`` picks ``nested`` for the ``nested_ner`` task, else ``flat``.
        **kwargs: see :class:`~ner_zoo.training.network.Network`.
    """

    def __init__(self, overlap: Literal["flat", "nested"] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if self.task == "pos":
            raise ValueError("span models predict spans; the pos task has none (use a tagger)")
        check_choices(SpanModel.__init__, locals())
        self.nested = overlap == "nested" if overlap is not None else self.task == "nested_ner"
        self.num_classes = len(self.vocabs.labels) + 1  # + NONE (id 0)

    # data ---------------------------------------------------------------------------------------------------
    def make_collator(self) -> SpanCollator:
        """Token inputs (no tags) plus gold span tensors: batches are :class:`SpanBatch` (override to add inputs)."""
        v = self.vocabs
        return SpanCollator(Collator(v.words, v.chars, None, None, None, v.features), v.labels)

    def check_gold(self, batch: SpanBatch) -> None:
        """Raise :class:`LabelError` when a training batch has gold labels outside the label set."""
        if batch.unknown_labels:
            known = set(self.vocabs.labels)
            bad = [(s.source, sp) for s in batch.sentences for sp in (s.spans or []) if sp.label not in known]
            shown = "; ".join(f"{src or '<no source>'}: {tuple(sp)}" for src, sp in bad[:5])
            raise LabelError(f"{len(bad)} gold span(s) with labels outside {sorted(known)}: {shown}"
                             + (" ..." if len(bad) > 5 else ""))

    # decoding -----------------------------------------------------------------------------------------------
    @torch.no_grad()
    def select_spans(self, spans: Tensor, mask: Tensor, probs: Tensor,
                     threshold: float | None = None) -> list[list[Span]]:
        """Span lists from class probabilities: argmax label, drop NONE, then greedy flat/nested decoding.

        Args:
            spans: ``[B, S, 2]`` candidates.
            mask: ``[B, S]`` real candidates.
            probs: ``[B, S, num_classes]`` (class 0 = NONE); the score of a span is its max probability.
            threshold: also drop spans whose score is not above this.

        Returns:
            per sentence, :class:`ScoredSpans` (its ``scores``: each span's probability).
        """
        score, label = probs.float().max(-1)
        keep = mask & (label > 0)
        if threshold is not None:
            keep &= score > threshold
        # gather the candidates of each sentence to the front, then decode the padded batch at once
        _, valid, (cand, score, label) = compact(keep, spans, score, label)
        chosen = decode_batch(cand, score, valid, nested=self.nested)
        return span_rows(cand, label, chosen, score, self.vocabs.labels)


class GridSpanModel(SpanModel):
    """A span model that scores every span of a :class:`~ner_zoo.modules.spans.SpanGrid` at word level.

    Subclasses implement :meth:`span_logits` and set ``self.loss`` (a ``SpanLoss``); training and
    decoding are shared.
    """

    loss: torch.nn.Module

    def span_logits(self, batch: SpanBatch) -> tuple[Any, Tensor]:
        """``(grid, logits [B, S, num_classes])`` for the spans of ``batch``."""
        raise NotImplementedError

    def compute_loss(self, batch: SpanBatch) -> Tensor:
        self.check_gold(batch)
        grid, logits = self.span_logits(batch)
        return self.loss(logits, grid, batch.gold_spans, batch.gold_mask)

    def decode(self, batch: Batch) -> list[list]:
        grid, logits = self.span_logits(batch)
        return self.select_spans(grid.spans, grid.mask, logits.float().softmax(-1))
