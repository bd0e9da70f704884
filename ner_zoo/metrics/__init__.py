"""Evaluation: exact-match span F1 (torchmetrics classes and pure-Python twins), token accuracy, reports.

The torchmetrics classes are imported lazily: ``from ner_zoo.metrics import span_prf`` does not load
torchmetrics (which pulls in scipy and transformers); ``from ner_zoo.metrics import SpanF1`` does.
Nothing here depends on Lightning.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from ner_zoo.metrics.accuracy import TokenAccuracy
    from ner_zoo.metrics.span_f1 import SpanF1, SpanF1ByLength

_LAZY = {"SpanF1": "span_f1", "SpanF1ByLength": "span_f1", "TokenAccuracy": "accuracy"}

__all__ = [
    "LENGTH_BUCKETS",
    "SpanCounts",
    "SpanF1",
    "SpanF1ByLength",
    "TokenAccuracy",
    "conlleval_report",
    "conlleval_scores",
    "length_prf",
    "score_spans_report",
    "span_counts",
    "span_prf",
    "token_accuracy",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"ner_zoo.metrics.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'ner_zoo.metrics' has no attribute {name!r}")
