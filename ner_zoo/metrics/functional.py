"""Span scores in pure Python (the functional twins of the metric classes) and conlleval-style reports.

Matching is exact on ``(start, end_exclusive, label)`` with set semantics per sentence: a span predicted
twice counts once, and nested or overlapping spans are scored like any others. Precision, recall and F1
are 0 (never NaN) when their denominator is 0; this follows ``conlleval.pl`` (the PyPI ``conlleval`` port
reports precision 1 when nothing was predicted, seqeval reports 0).

Tag sequences are read with :func:`ner_zoo.data.tagging.tags_to_spans` (conlleval's reading: an ``I-X``
after ``O`` or after another type opens an entity), so IOB1 files and invalid predictions score as
``conlleval.pl`` scores them.

This module does not import torchmetrics (the classes in :mod:`ner_zoo.metrics.span_f1` do).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional, Sequence

from ner_zoo.data.tagging import tags_to_spans
from ner_zoo.errors import LabelError

SpanTriple = tuple  # (start, end_exclusive, label); a Span, a tuple or a JSON list
SpanLists = Sequence[Iterable[SpanTriple]]  # one iterable of spans per sentence
TagSeqs = Sequence[Sequence[str]]  # one tag sequence per sentence
# Maps a span to a bucket index; ``is_gold`` tells whether it is a gold span. ``None`` = unknown prediction.
# A bucketer that needs the sentence (its tokens, its gold spans) also has ``for_sentence(tokens, gold)``,
# which returns the plain bucketer for that sentence (:class:`NestingBucketer`, :class:`FrequencyBucketer`).
Bucketer = Callable[[tuple, bool], Optional[int]]

LENGTH_BUCKETS = (1, 2, 3, 4, 6, 10)  # lower bounds: 1, 2, 3, 4-5, 6-9, >=10 tokens


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


@dataclass
class SpanCounts:
    """Per-bucket match counts; ``unknown_fp`` counts predictions whose label is not in ``names``."""

    names: list[str]
    tp: list[int]
    fp: list[int]
    fn: list[int]
    unknown_fp: int = 0

    def scores(self) -> dict[str, float]:
        """``precision``, ``recall``, ``f1`` (micro), ``macro_f1`` and ``{f1,precision,recall,support}/<name>``.

        ``macro_f1`` averages the buckets that occur in gold or predictions; the unknown-label bucket only
        enters the micro precision (as false positives).
        """
        out: dict[str, float] = {}
        tp, fp, fn = sum(self.tp), sum(self.fp) + self.unknown_fp, sum(self.fn)
        p, r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
        out.update(precision=p, recall=r, f1=_f1(p, r))
        occurring = []
        for name, t, f, n in zip(self.names, self.tp, self.fp, self.fn):
            p, r = _ratio(t, t + f), _ratio(t, t + n)
            out[f"f1/{name}"], out[f"precision/{name}"], out[f"recall/{name}"] = _f1(p, r), p, r
            out[f"support/{name}"] = float(t + n)
            if t + f + n > 0:
                occurring.append(out[f"f1/{name}"])
        out["macro_f1"] = sum(occurring) / len(occurring) if occurring else 0.0
        return out

    def rows(self) -> list[list]:
        """``[name, P, R, F1, support]`` per bucket, in ``names`` order (fractions, not percent)."""
        s = self.scores()
        return [[n, s[f"precision/{n}"], s[f"recall/{n}"], s[f"f1/{n}"], int(s[f"support/{n}"])] for n in self.names]


def _span_set(spans: Iterable[SpanTriple]) -> set[tuple]:
    # int(): tensor or numpy offsets would otherwise hash by identity and never match
    return {(int(s[0]), int(s[1]), s[2]) for s in spans}


def count_matches(preds: SpanLists, golds: SpanLists, bucket: Bucketer, names: Sequence[str],
                  tokens: Optional[Sequence[Sequence[str]]] = None) -> SpanCounts:
    """Count exact matches sentence by sentence into the buckets ``names``, chosen by ``bucket``.

    A gold span and a prediction equal to it always fall in the same bucket (every bucketer here is a function
    of the span and of its sentence only), so per-bucket precision and recall are well defined.

    Args:
        tokens: the sentences' tokens, for bucketers that read them (``for_sentence``).

    Raises:
        ValueError: ``preds`` and ``golds`` (or ``tokens``) hold different numbers of sentences.
    """
    if len(preds) != len(golds):
        raise ValueError(f"{len(preds)} predicted sentences but {len(golds)} gold sentences")
    if tokens is not None and len(tokens) != len(golds):
        raise ValueError(f"{len(tokens)} token sequences but {len(golds)} gold sentences")
    size = len(names)
    tp, fp, fn, unknown = [0] * size, [0] * size, [0] * size, 0
    per_sentence = getattr(bucket, "for_sentence", None)
    for i, (pred, gold) in enumerate(zip(preds, golds)):
        ps, gs = _span_set(pred), _span_set(gold)
        if per_sentence is not None:
            bucket = per_sentence(None if tokens is None else tokens[i], gs)
        for s in gs:
            b = bucket(s, True)
            if s in ps:
                tp[b] += 1
            else:
                fn[b] += 1
        for s in ps - gs:
            b = bucket(s, False)
            if b is None:
                unknown += 1
            else:
                fp[b] += 1
    return SpanCounts(list(names), tp, fp, fn, unknown)


class LabelBucketer:
    """Bucket = label index. An unknown gold label raises :class:`LabelError`; an unknown prediction is ``None``.

    A class rather than a closure so that metrics holding one stay picklable.
    """

    def __init__(self, labels: Sequence[str]):
        self.labels = list(labels)
        self.index = {lab: i for i, lab in enumerate(self.labels)}

    def __call__(self, span: tuple, is_gold: bool) -> Optional[int]:
        i = self.index.get(span[2])
        if i is None and is_gold:
            raise LabelError(f"gold span {span} has label {span[2]!r}, which is not in the label list {self.labels}")
        return i


def length_bucket_names(bounds: Sequence[int] = LENGTH_BUCKETS) -> list[str]:
    """``(1, 2, 3, 4, 6, 10)`` -> ``["len=1", "len=2", "len=3", "len=4-5", "len=6-9", "len>=10"]``."""
    if not bounds or bounds[0] != 1 or any(a >= b for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"length bucket bounds must increase strictly from 1, got {tuple(bounds)}")
    names = []
    for lo, hi in zip(bounds, list(bounds[1:]) + [None]):
        if hi is None:
            names.append(f"len>={lo}")
        else:
            names.append(f"len={lo}" if hi == lo + 1 else f"len={lo}-{hi - 1}")
    return names


class LengthBucketer:
    """Bucket = span length (``end - start``) against increasing lower ``bounds`` starting at 1."""

    def __init__(self, bounds: Sequence[int] = LENGTH_BUCKETS):
        self.names = length_bucket_names(bounds)
        self.bounds = list(bounds)

    def __call__(self, span: tuple, is_gold: bool) -> int:
        n = span[1] - span[0]
        if n < 1:
            raise ValueError(f"{'gold' if is_gold else 'predicted'} span {span} covers no tokens")
        return bisect_right(self.bounds, n) - 1


class NestingBucketer:
    """Bucket ``flat`` (0) or ``nested`` (1): a span, gold or predicted, is *nested* when it contains or lies
    inside another gold span of its sentence (another: other boundaries; the same boundaries with another
    label are one mention typed twice, and a crossing span is neither inside nor around). Judged against the
    gold spans only, so a prediction equal to a gold span gets that span's bucket."""

    names = ["flat", "nested"]

    def for_sentence(self, tokens, gold: set[tuple]) -> Bucketer:
        bounds = {(s[0], s[1]) for s in gold}

        def bucket(span: tuple, is_gold: bool) -> int:
            a, b = span[0], span[1]
            return int(any((c, d) != (a, b) and (c <= a and b <= d or a <= c and d <= b) for c, d in bounds))
        return bucket


FREQUENCY_BUCKETS = (0, 1, 2, 6)  # lower bounds: 0, 1, 2-5, >5 training occurrences


class FrequencyBucketer:
    """Bucket = training frequency of a span's *least frequent* token: an entity counts as unseen (``freq=0``)
    as soon as one of its words never occurs in training, since that word is the one neither the word
    embedding nor a memory of training occurrences can inform; the span's other words only make it easier.
    Predicted spans are bucketed by their own tokens, so a prediction equal to a gold span shares its bucket.

    Args:
        counts: occurrences of each (normalised) word in the training split.
        bounds: increasing lower bounds starting at 0 (default 0, 1, 2-5, >5).
        normalize: the word -> key map of ``counts`` (a model's vocabulary normalisation; default: none).
    """

    def __init__(self, counts: Mapping[str, int], bounds: Sequence[int] = FREQUENCY_BUCKETS,
                 normalize: Optional[Callable[[str], str]] = None):
        if not bounds or bounds[0] != 0 or any(a >= b for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"frequency bucket bounds must increase strictly from 0, got {tuple(bounds)}")
        self.counts, self.bounds, self.normalize = counts, list(bounds), normalize or (lambda w: w)
        self.names = []
        for lo, hi in zip(bounds, list(bounds[1:]) + [None]):
            self.names.append(f"freq>{lo - 1}" if hi is None else f"freq={lo}" if hi == lo + 1 else f"freq={lo}-{hi - 1}")

    def frequency(self, words: Sequence[str]) -> int:
        return min(self.counts.get(self.normalize(w), 0) for w in words)

    def for_sentence(self, tokens: Optional[Sequence[str]], gold: set[tuple]) -> Bucketer:
        if tokens is None:
            raise ValueError("the training-frequency breakdown needs the sentences' tokens")

        def bucket(span: tuple, is_gold: bool) -> int:
            if span[1] <= span[0] or span[1] > len(tokens):
                raise ValueError(f"span {span} is outside its sentence of {len(tokens)} tokens")
            return bisect_right(self.bounds, self.frequency(tokens[span[0]:span[1]])) - 1
        return bucket


def breakdown_counts(preds: SpanLists, golds: SpanLists, bucketer, tokens: Optional[Sequence[Sequence[str]]] = None
                     ) -> SpanCounts:
    """Per-bucket counts of any bucketer with ``names`` (:class:`LengthBucketer`, :class:`NestingBucketer`,
    :class:`FrequencyBucketer`)."""
    return count_matches([list(p) for p in preds], [list(g) for g in golds], bucketer, bucketer.names, tokens)


def span_counts(preds: SpanLists, golds: SpanLists, labels: Optional[Sequence[str]] = None) -> SpanCounts:
    """Per-label counts; ``labels=None`` takes every label seen in gold or predictions (sorted)."""
    preds, golds = [list(p) for p in preds], [list(g) for g in golds]
    if labels is None:
        labels = sorted({s[2] for sents in (preds, golds) for sent in sents for s in sent})
    return count_matches(preds, golds, LabelBucketer(labels), labels)


def span_prf(preds: SpanLists, golds: SpanLists, labels: Optional[Sequence[str]] = None) -> dict[str, float]:
    """Exact-match span precision/recall/F1, the pure-Python twin of :class:`~ner_zoo.metrics.SpanF1`.

    Args:
        preds: predicted spans, one iterable of ``(start, end_exclusive, label)`` per sentence.
        golds: gold spans, aligned with ``preds``.
        labels: fixed label list (unknown gold labels raise :class:`LabelError`, unknown predicted labels
            count as false positives); ``None`` uses every label seen.

    Returns:
        ``precision``, ``recall``, ``f1`` (micro), ``macro_f1`` and ``f1/<T>``, ``precision/<T>``,
        ``recall/<T>``, ``support/<T>`` per label, as floats.
    """
    return span_counts(preds, golds, labels).scores()


def length_prf(preds: SpanLists, golds: SpanLists, bounds: Sequence[int] = LENGTH_BUCKETS) -> dict[str, float]:
    """Like :func:`span_prf` but per entity-length bucket (keys ``f1/len=1`` ... ``f1/len>=10``)."""
    bucket = LengthBucketer(bounds)
    return count_matches(list(preds), list(golds), bucket, bucket.names).scores()


def token_accuracy(preds: TagSeqs, golds: TagSeqs) -> float:
    """Share of tokens whose predicted tag equals the gold tag (0 for no tokens).

    Raises:
        ValueError: sentence counts or lengths differ (nothing is truncated).
    """
    correct, total = _tag_agreement(preds, golds)
    return _ratio(correct, total)


def _tag_agreement(preds: TagSeqs, golds: TagSeqs) -> tuple[int, int]:
    if len(preds) != len(golds):
        raise ValueError(f"{len(preds)} predicted sentences but {len(golds)} gold sentences")
    correct = total = 0
    for i, (p, g) in enumerate(zip(preds, golds)):
        if len(p) != len(g):
            raise ValueError(f"sentence {i}: {len(p)} predicted tags for {len(g)} gold tags")
        correct += sum(a == b for a, b in zip(p, g))
        total += len(g)
    return correct, total


def _decode(gold_tag_seqs, pred_tag_seqs) -> tuple[list, list, int, int]:
    correct, total = _tag_agreement(pred_tag_seqs, gold_tag_seqs)
    golds = [tags_to_spans(t, where=f"gold sentence {i}") for i, t in enumerate(gold_tag_seqs)]
    preds = [tags_to_spans(t, where=f"predicted sentence {i}") for i, t in enumerate(pred_tag_seqs)]
    return golds, preds, correct, total


def conlleval_scores(gold_tag_seqs: TagSeqs, pred_tag_seqs: TagSeqs) -> dict[str, float]:
    """:func:`span_prf` over tag sequences (conlleval reading) plus token ``accuracy``."""
    golds, preds, correct, total = _decode(gold_tag_seqs, pred_tag_seqs)
    return {**span_prf(preds, golds), "accuracy": _ratio(correct, total)}


def conlleval_report(gold_tag_seqs: TagSeqs, pred_tag_seqs: TagSeqs) -> str:
    """The text ``conlleval.pl`` prints for these tag sequences (one list of tags per sentence).

    Example: gold ``[[B-PER, I-PER, O, B-LOC], [I-ORG]]``, predicted ``[[B-PER, I-PER, O, B-ORG], [I-ORG]]``::

        processed 5 tokens with 3 phrases; found: 3 phrases; correct: 2.
        accuracy:  80.00%; precision:  66.67%; recall:  66.67%; FB1:  66.67
                      LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  0
                      ORG: precision:  50.00%; recall: 100.00%; FB1:  66.67  2
                      PER: precision: 100.00%; recall: 100.00%; FB1: 100.00  1

    The last number of a type line is the number of *predicted* phrases of that type, as in conlleval.
    Precision is 0.00 for a type that was never predicted (``conlleval.pl``; the PyPI port prints 100.00).
    """
    golds, preds, correct, total = _decode(gold_tag_seqs, pred_tag_seqs)
    counts = span_counts(preds, golds)
    return _format(counts, total, "tokens", _ratio(correct, total))


def score_spans_report(gold_span_lists: SpanLists, pred_span_lists: SpanLists) -> str:
    """The conlleval layout for span lists (nested JSONL input), without the token accuracy."""
    golds = [list(g) for g in gold_span_lists]
    counts = span_counts(pred_span_lists, golds)
    return _format(counts, len(golds), "sentences", None)


def _format(counts: SpanCounts, n: int, unit: str, accuracy: Optional[float]) -> str:
    s = counts.scores()
    tp, found = sum(counts.tp), sum(counts.tp) + sum(counts.fp) + counts.unknown_fp
    lines = [f"processed {n} {unit} with {tp + sum(counts.fn)} phrases; found: {found} phrases; correct: {tp}."]
    overall = f"precision: {100 * s['precision']:6.2f}%; recall: {100 * s['recall']:6.2f}%; FB1: {100 * s['f1']:6.2f}"
    if accuracy is not None:
        overall = f"accuracy: {100 * accuracy:6.2f}%; " + overall
    if n > 0:  # conlleval.pl prints no overall line for empty input
        lines.append(overall)
    for name, t, f in zip(counts.names, counts.tp, counts.fp):
        lines.append(
            f"{name:>17s}: precision: {100 * s[f'precision/{name}']:6.2f}%; recall: {100 * s[f'recall/{name}']:6.2f}%; "
            f"FB1: {100 * s[f'f1/{name}']:6.2f}  {t + f}"
        )
    return "\n".join(lines) + "\n"


def breakdown_markdown(counts: SpanCounts, title: str = "bucket") -> str:
    """A markdown table of per-bucket precision, recall, F1 (percent), gold and predicted spans, with a micro row."""
    s = counts.scores()
    lines = [f"| {title} | precision | recall | F1 | gold | predicted |", "|---|---|---|---|---|---|"]
    for name, t, f, n in zip(counts.names, counts.tp, counts.fp, counts.fn):
        lines.append(f"| {name} | {100 * s[f'precision/{name}']:.2f} | {100 * s[f'recall/{name}']:.2f} | "
                     f"{100 * s[f'f1/{name}']:.2f} | {t + n} | {t + f} |")
    tp, fp, fn = sum(counts.tp), sum(counts.fp) + counts.unknown_fp, sum(counts.fn)
    lines.append(f"| all | {100 * s['precision']:.2f} | {100 * s['recall']:.2f} | {100 * s['f1']:.2f} | {tp + fn} | "
                 f"{tp + fp} |")
    return "\n".join(lines) + "\n"


def breakdown_json(counts: SpanCounts) -> dict:
    """Counts and scores per bucket (fractions), for a JSON file."""
    s = counts.scores()
    return {"buckets": {n: {"tp": t, "fp": f, "fn": m, "precision": s[f"precision/{n}"], "recall": s[f"recall/{n}"],
                            "f1": s[f"f1/{n}"]} for n, t, f, m in zip(counts.names, counts.tp, counts.fp, counts.fn)},
            "micro": {k: s[k] for k in ("precision", "recall", "f1")}}
