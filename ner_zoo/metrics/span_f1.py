"""Exact-match span F1 as torchmetrics metrics (``SpanF1`` per label, ``SpanF1ByLength`` per length bucket,
``SpanF1ByNesting`` for nested vs flat entities).

States are count tensors summed across processes (``dist_reduce_fx="sum"``), never lists of spans, so
DDP synchronisation is exact (torchmetrics#538, #2170). The scores themselves come from
:class:`ner_zoo.metrics.functional.SpanCounts`, shared with the pure-Python twins :func:`span_prf` and
:func:`length_prf`, so the class and the function always agree.

Typical use in a LightningModule (the result is a dict, so it is logged by hand)::

    self.val_f1.update(pred_spans, gold_spans)          # in validation_step
    result = self.val_f1.compute()                       # in on_validation_epoch_end
    self.log_dict(SpanF1.to_floats(result, prefix="val/"))
    self.val_f1.reset()
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch
from torch import Tensor
from torchmetrics import Metric

from ner_zoo.metrics.functional import (
    LENGTH_BUCKETS,
    Bucketer,
    LabelBucketer,
    LengthBucketer,
    NestingBucketer,
    SpanCounts,
    SpanLists,
    count_matches,
)


class _SpanCountMetric(Metric):
    """Shared machinery: per-bucket ``tp``/``fp``/``fn`` count tensors plus an unknown-label counter."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    tp: Tensor
    fp: Tensor
    fn: Tensor
    unknown_fp: Tensor
    n_sentences: Tensor

    def __init__(self, names: Sequence[str], bucket: Bucketer, **kwargs: Any):
        super().__init__(**kwargs)
        self.names = list(names)
        self._bucket = bucket
        k = len(self.names)
        self.add_state("tp", torch.zeros(k, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("fp", torch.zeros(k, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("fn", torch.zeros(k, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("unknown_fp", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("n_sentences", torch.zeros((), dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: SpanLists, golds: SpanLists) -> None:
        """Add one batch.

        Args:
            preds: predicted spans, one iterable of ``(start, end_exclusive, label)`` per sentence.
            golds: gold spans, aligned with ``preds``.
        """
        c = count_matches(preds, golds, self._bucket, self.names)
        device = self.tp.device
        self.tp += torch.tensor(c.tp, dtype=torch.long, device=device)
        self.fp += torch.tensor(c.fp, dtype=torch.long, device=device)
        self.fn += torch.tensor(c.fn, dtype=torch.long, device=device)
        self.unknown_fp += c.unknown_fp
        self.n_sentences += len(golds)

    def counts(self) -> SpanCounts:
        """The current (local, unsynced) counts as plain Python ints."""
        return SpanCounts(self.names, self.tp.tolist(), self.fp.tolist(), self.fn.tolist(), int(self.unknown_fp))

    def compute(self) -> dict[str, Tensor]:
        """Scores as 0-dim tensors: ``precision``, ``recall``, ``f1``, ``macro_f1`` and ``<score>/<name>``.

        Called through torchmetrics, the counts are already summed over processes here.
        """
        dtype = torch.float32 if self.device.type == "mps" else torch.float64  # MPS has no float64
        return {k: torch.tensor(v, dtype=dtype, device=self.device) for k, v in self.counts().scores().items()}

    @staticmethod
    def to_floats(result: dict[str, Tensor], prefix: str = "") -> dict[str, float]:
        """Flatten a :meth:`compute` result into Python floats for ``self.log_dict``.

        Args:
            result: the dict returned by :meth:`compute`.
            prefix: prepended to every key, e.g. ``"val/"`` gives ``val/f1``, ``val/f1/PER``.
        """
        return {prefix + k: float(v) for k, v in result.items()}

    def per_type_rows(self, result: Optional[dict[str, Tensor]] = None, micro: bool = False) -> list[list]:
        """Rows ``[name, precision, recall, f1, support]`` (fractions) for a table, one per label or bucket.

        Args:
            result: a :meth:`compute` result; computed now when ``None``.
            micro: append a final ``["micro", P, R, F1, total support]`` row.
        """
        r = self.compute() if result is None else result
        rows = [
            [n, float(r[f"precision/{n}"]), float(r[f"recall/{n}"]), float(r[f"f1/{n}"]), int(r[f"support/{n}"])]
            for n in self.names
        ]
        if micro:
            rows.append(["micro", float(r["precision"]), float(r["recall"]), float(r["f1"]), sum(x[4] for x in rows)])
        return rows


class SpanF1(_SpanCountMetric):
    r"""Exact-match span precision, recall and F1 over a fixed label list (CoNLL / nested NER).

    A predicted span is correct when ``(start, end_exclusive, label)`` equals a gold span of the same
    sentence. Spans are sets per sentence: nested and overlapping spans are fine, duplicates count once.
    :math:`P = tp/(tp+fp)`, :math:`R = tp/(tp+fn)`, :math:`F_1 = 2PR/(P+R)`, each 0 when undefined.

    As input to ``update``: ``preds`` and ``golds``, lists (one item per sentence) of span iterables.
    A gold label outside ``labels`` raises :class:`~ner_zoo.errors.LabelError`. A predicted label outside
    ``labels`` does not crash: it is counted in an extra "unknown" bucket (state ``unknown_fp``) that
    adds false positives to the micro precision but has no per-type entry and no part in ``macro_f1``.

    As output of ``compute``: a dict of 0-dim float tensors ``precision``, ``recall``, ``f1`` (micro),
    ``macro_f1`` (mean F1 over labels occurring in gold or predictions), and per label ``f1/<T>``,
    ``precision/<T>``, ``recall/<T>``, ``support/<T>`` (number of gold spans).

    Args:
        labels: the entity types, in the order used for the count states.
        **kwargs: passed to :class:`torchmetrics.Metric` (e.g. ``sync_on_compute``).

    Example:
        >>> from ner_zoo.data.schema import Span
        >>> m = SpanF1(["LOC", "PER"])
        >>> m.update([[Span(0, 2, "PER"), Span(3, 4, "LOC")]], [[Span(0, 2, "PER"), Span(3, 5, "LOC")]])
        >>> {k: round(float(v), 3) for k, v in m.compute().items() if k in ("precision", "f1", "f1/PER")}
        {'precision': 0.5, 'f1': 0.5, 'f1/PER': 1.0}
    """

    def __init__(self, labels: Sequence[str], **kwargs: Any):
        labels = list(labels)
        if not labels:
            raise ValueError("SpanF1 needs at least one label")
        if len(set(labels)) != len(labels):
            raise ValueError(f"duplicate labels in {labels}")
        super().__init__(labels, LabelBucketer(labels), **kwargs)

    @property
    def labels(self) -> list[str]:
        return self.names


class SpanF1ByLength(_SpanCountMetric):
    """Exact-match span F1 broken down by entity length (in tokens), for nested-NER analyses.

    Matching is the same as :class:`SpanF1` (label included); each true positive and false negative is
    counted in the bucket of the gold span's length, each false positive in the bucket of its own length.
    Keys of ``compute`` are ``f1/len=1``, ``precision/len=4-5``, ``support/len>=10`` ..., plus the micro
    ``precision``/``recall``/``f1`` and ``macro_f1`` over buckets that occur.

    Args:
        bounds: increasing lower bounds of the buckets, starting at 1; the default gives
            1, 2, 3, 4-5, 6-9, >=10.
        **kwargs: passed to :class:`torchmetrics.Metric`.
    """

    def __init__(self, bounds: Sequence[int] = LENGTH_BUCKETS, **kwargs: Any):
        bucket = LengthBucketer(bounds)
        super().__init__(bucket.names, bucket, **kwargs)


class SpanF1ByNesting(_SpanCountMetric):
    """Exact-match span F1 of ``nested`` and ``flat`` spans (:class:`~ner_zoo.metrics.functional.NestingBucketer`: a
    span, gold or predicted, is nested when it contains or lies inside another gold span of its sentence).
    Keys of ``compute``: ``f1/nested``, ``recall/flat``, ``support/nested`` ... plus the micro scores."""

    def __init__(self, **kwargs: Any):
        bucket = NestingBucketer()
        super().__init__(bucket.names, bucket, **kwargs)
