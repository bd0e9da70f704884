"""Evaluation: exact-match span F1 (torchmetrics classes and pure-Python twins), token accuracy, reports.

Nothing here depends on Lightning. Names are imported on first use, so the pure-Python reports (what ``ner-zoo
score`` reads) never load torchmetrics.
"""

import importlib

_WHERE = {
    "TokenAccuracy": "accuracy",
    **{name: "functional" for name in ("LENGTH_BUCKETS", "SpanCounts", "conlleval_report", "conlleval_scores",
                                   "length_prf", "score_spans_report", "span_counts", "span_prf", "token_accuracy")},
    **{name: "span_f1" for name in ("SpanF1", "SpanF1ByLength", "SpanF1ByNesting")},
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"ner_zoo.metrics.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ner_zoo.metrics' has no attribute {name!r}")
