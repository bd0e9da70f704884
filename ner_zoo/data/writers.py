"""Prediction files: CoNLL columns (for conlleval) and JSON lines (for nested spans), written atomically.

Their readers (:func:`read_prediction_conll`, :func:`read_prediction_jsonl`) give back what ``score``
needs: gold and predicted tags or spans per sentence.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence

from ner_zoo.data.readers.common import DATA_ENCODING_OPTION, read_text
from ner_zoo.data.readers.conll import read_prediction_conll
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.tagging import TagScheme, spans_to_tags
from ner_zoo.errors import DataFormatError
from ner_zoo.io import atomic_write

__all__ = ["read_prediction_conll", "read_prediction_jsonl", "write_conll", "write_jsonl"]

DOCSTART = "-DOCSTART-"


def _check_lengths(sentences: Sequence[Sentence], predictions: Sequence) -> None:
    if len(sentences) != len(predictions):
        raise ValueError(f"{len(sentences)} sentences but {len(predictions)} prediction lists")


def write_conll(path: str | os.PathLike[str], sentences: Sequence[Sentence], predictions: Sequence[Sequence[Span]],
                scheme: str | TagScheme = TagScheme.IOB2, with_gold: bool | None = None,
                doc_separators: bool = False, overwrite: bool = False) -> None:
    """Write ``token [gold] predicted`` per line, a blank line after each sentence (conlleval's input). An
    existing ``path`` is replaced only with ``overwrite`` (:func:`ner_zoo.io.atomic_write`).

    Args:
        path: output file (written atomically).
        sentences: the sentences, with gold spans.
        predictions: predicted spans per sentence; they must not overlap (use :func:`write_jsonl` for
            nested output).
        scheme: tag scheme to write both tag columns in.
        with_gold: write the gold column; ``None`` writes it when any sentence has gold spans.
        doc_separators: write a ``-DOCSTART- O O`` line and a blank line whenever ``doc_id`` changes.

    Tokens containing whitespace (or empty tokens) cannot be columns: their whitespace is replaced by
    ``_`` with a warning; scoring reads only the tag columns.
    """
    _check_lengths(sentences, predictions)
    if with_gold is None:
        with_gold = any(s.spans for s in sentences)
    ncols = 3 if with_gold else 2
    separator = " ".join([DOCSTART] + ["O"] * (ncols - 1)) + "\n\n"
    replaced = 0
    prev_doc: object = object()
    with atomic_write(path, overwrite=overwrite) as f:
        for sent, pred in zip(sentences, predictions):
            if doc_separators and sent.doc_id != prev_doc:
                f.write(separator)
                prev_doc = sent.doc_id
            n = len(sent.tokens)
            where = sent.source or path
            pred_tags = spans_to_tags(pred, n, scheme, where)
            gold_tags = spans_to_tags(sent.spans, n, scheme, where) if with_gold else None
            lines = []
            for i, tok in enumerate(sent.tokens):
                if not tok or len(tok.split()) != 1 or tok.strip() != tok:
                    tok = "_".join(tok.split()) or "_"
                    replaced += 1
                if with_gold:
                    lines.append(f"{tok} {gold_tags[i]} {pred_tags[i]}\n")
                else:
                    lines.append(f"{tok} {pred_tags[i]}\n")
            lines.append("\n")
            f.write("".join(lines))
    if replaced:
        warnings.warn(f"{path}: {replaced} tokens contained whitespace or were empty; written with '_'",
                      stacklevel=2)


def write_jsonl(path: str | os.PathLike[str], sentences: Sequence[Sentence], predictions: Sequence[Sequence[Span]],
                scores: Sequence[Sequence[float]] | None = None, overwrite: bool = False) -> None:
    """Write one JSON object per sentence (nested spans allowed); an existing ``path`` is replaced only with
    ``overwrite``.

    Each line: ``{"tokens", "gold_spans": [[start, end, label]], "pred_spans": [[start, end, label]],
    "pred_scores"?: [float] (one per predicted span), "doc_id", "index", "source"}``; ends are exclusive;
    ``source`` is where the sentence was read (``file:line`` or ``file#record``), to map output back to input.

    Args:
        path: output file (written atomically).
        sentences: the sentences, with gold spans (empty lists for unlabelled text).
        predictions: predicted spans per sentence.
        scores: optional confidence per predicted span.
    """
    _check_lengths(sentences, predictions)
    if scores is not None:
        _check_lengths(sentences, scores)
    with atomic_write(path, overwrite=overwrite) as f:
        for i, (sent, pred) in enumerate(zip(sentences, predictions)):
            obj = {"tokens": list(sent.tokens),
                   "gold_spans": [[s.start, s.end, s.label] for s in sent.spans],
                   "pred_spans": [[s.start, s.end, s.label] for s in pred]}
            if scores is not None:
                if len(scores[i]) != len(pred):
                    raise ValueError(f"sentence {i}: {len(scores[i])} scores for {len(pred)} predicted spans")
                obj["pred_scores"] = [float(x) for x in scores[i]]
            obj["doc_id"] = sent.doc_id
            obj["index"] = sent.index
            obj["source"] = sent.source
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _spans(value: object, n: int, where: str, key: str) -> list[Span]:
    if not isinstance(value, list):
        raise DataFormatError(f"{key!r} must be a list of [start, end, label]", where)
    out = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3 and type(item[0]) is int and type(item[1]) is int
                and isinstance(item[2], str)):  # `type is int`: a JSON true/false is not an offset
            raise DataFormatError(f"{key!r} item {item!r} is not [start, end, label] (two integers and a label)",
                                  where)
        if not item[2].strip():
            raise DataFormatError(f"{key!r} item {item!r} has an empty label", where)
        if not 0 <= item[0] < item[1] <= n:
            raise DataFormatError(f"{key!r} item {item!r} is out of range for {n} tokens", where)
        out.append(Span(item[0], item[1], item[2]))
    return out


def read_prediction_jsonl(path: str | os.PathLike[str], with_tokens: bool = False, encoding: str | None = None,
                          encoding_option: str = DATA_ENCODING_OPTION) -> tuple[list, ...]:
    """Read a :func:`write_jsonl` file back as ``(gold_spans_per_sentence, predicted_spans_per_sentence)``
    (and the tokens per sentence as a third item, ``with_tokens``).

    Raises:
        DataFormatError: naming file and line for invalid JSON, a missing key or a malformed span.
    """
    text, _ = read_text(path, encoding, encoding_option=encoding_option)
    gold: list[list[Span]] = []
    pred: list[list[Span]] = []
    tokens: list[list[str]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"invalid JSON ({e.msg})", path, lineno) from None
        where = f"{path}:{lineno}"
        for key in ("tokens", "gold_spans", "pred_spans"):
            if not isinstance(obj, dict) or key not in obj:
                raise DataFormatError(f"missing key {key!r}", path, lineno)
        if not isinstance(obj["tokens"], list):
            raise DataFormatError(f"'tokens' must be a list, got {type(obj['tokens']).__name__}", path, lineno)
        n = len(obj["tokens"])
        gold.append(_spans(obj["gold_spans"], n, where, "gold_spans"))
        pred.append(_spans(obj["pred_spans"], n, where, "pred_spans"))
        tokens.append([str(t) for t in obj["tokens"]])
    return (gold, pred, tokens) if with_tokens else (gold, pred)
