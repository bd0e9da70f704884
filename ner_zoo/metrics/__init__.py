"""Evaluation: exact-match span F1 (torchmetrics classes and pure-Python twins), token accuracy, reports.

Nothing here depends on Lightning.
"""

from ner_zoo.metrics.accuracy import TokenAccuracy
from ner_zoo.metrics.report import (
    LENGTH_BUCKETS,
    SpanCounts,
    conlleval_report,
    conlleval_scores,
    length_prf,
    score_spans_report,
    span_counts,
    span_prf,
    token_accuracy,
)
from ner_zoo.metrics.span_f1 import SpanF1, SpanF1ByLength, SpanF1ByNesting

__all__ = [
    "LENGTH_BUCKETS",
    "SpanCounts",
    "SpanF1",
    "SpanF1ByLength",
    "SpanF1ByNesting",
    "TokenAccuracy",
    "conlleval_report",
    "conlleval_scores",
    "length_prf",
    "score_spans_report",
    "span_counts",
    "span_prf",
    "token_accuracy",
]

