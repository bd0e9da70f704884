"""The one inference path below the API: how sentences are cut into batches (:func:`batches`), the one writer of
document context (:func:`index_context`) and the loop that runs a model over sentences (:func:`run`).

Every entry point goes through it: :class:`ner_zoo.Tagger` and :class:`ner_zoo.api.onnx.OnnxTagger` (so
``ner-zoo predict`` and ``serve``, which tag through them) call :func:`run`; ``Trainer.predict``
(:func:`ner_zoo.training.inference.predict`) takes its batches from :func:`batches` and its context from
:func:`index_context`, as the task module's hooks do in training. Plain Python (no torch, no Lightning): the ONNX
runtime imports it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

#: ``(spans, scores)`` of one sentence (POS: ``(tags, None)``); ``scores`` is ``None`` for a model without any
Prediction = tuple[list, "list[float] | None"]


def costs(model: Any, sentences: Sequence) -> list[int]:
    """What each sentence costs in a batch: what the model says (``bucket_lengths``: a transformer's sub-words),
    else its words."""
    cost = getattr(model, "bucket_lengths", None)
    return list(cost(sentences)) if cost is not None else [len(s.tokens) for s in sentences]


def batches(lengths: Sequence[int], batch_size: int = 32, max_tokens: int | None = None) -> Iterator[list[int]]:
    """Indices into ``lengths`` (each sentence's cost, :func:`costs`) cut into batches, cheapest first (sorted, so
    a batch pads little): at most ``batch_size`` sentences and, with ``max_tokens``, at most that many padded
    positions (sentences x the batch's largest cost); a sentence over the token budget is a batch alone."""
    if batch_size < 1 or (max_tokens is not None and max_tokens < 1):
        raise ValueError(f"batch_size and max_tokens must be >= 1, got {batch_size} and {max_tokens}")
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batch: list[int] = []
    for i in order:
        over = max_tokens is not None and batch and (len(batch) + 1) * lengths[i] > max_tokens
        if len(batch) == batch_size or over:
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def context_sentences(model: Any) -> int:
    """Neighbouring sentences per side that ``model`` reads as document context (0: none)."""
    return max((e.context for e in model.context_encoders()), default=0)


def index_context(model: Any, sentences: Iterable, replace: bool = False) -> None:
    """The one writer of document context: index ``sentences`` (``tokens``, ``doc_id``, ``index``) for every
    encoder of ``model`` that reads neighbouring sentences (a network's :class:`TransformerEncoder` with
    ``context > 0``, an ONNX folder's sub-word inputs), in place of those indexed before when ``replace``. A no-op,
    reading nothing, for a model without such an encoder."""
    encoders = model.context_encoders()
    if encoders:
        sentences = list(sentences)
        for encoder in encoders:
            encoder.add_documents(sentences, replace=replace)


def run(model: Any, sentences: Sequence, decode: Callable[[list[tuple[int, Any]]], list[Prediction]],
        batch_size: int = 32, max_tokens: int | None = None, keep_context: bool = False,
        context: Sequence = ()) -> list[Prediction]:
    """``(spans, scores)`` per sentence of ``sentences``, in input order (an empty sentence gives no spans).

    Args:
        model: what is run (a network, an ONNX model): its ``context_encoders()``, optional ``bucket_lengths``.
        sentences: the sentences to tag.
        decode: one batch of ``(index, sentence)`` items -> a :data:`Prediction` per item (the runtime's part).
        batch_size, max_tokens: the budget of a batch (:func:`batches`).
        keep_context: the sentences are document context beside those of earlier calls (``ner-zoo predict``
            tags a file group by group); otherwise in place of them.
        context: more document context, read but not tagged (the rest of a file).
    """
    todo = [(i, s) for i, s in enumerate(sentences) if len(s.tokens)]
    out: list[Prediction] = [([], []) for _ in sentences]
    if not todo:
        return out
    index_context(model, [*(s for _, s in todo), *context], replace=not keep_context)
    for picked in batches(costs(model, [s for _, s in todo]), batch_size, max_tokens):
        chunk = [todo[k] for k in picked]
        for (i, _), got in zip(chunk, decode(chunk)):
            out[i] = got
    return out


def with_scores(pred: list) -> Prediction:
    """A network's prediction of one sentence (spans, maybe :class:`ScoredSpans`; POS: tags) as a
    :data:`Prediction`."""
    scores = getattr(pred, "scores", None)
    return list(pred), None if scores is None else [float(x) for x in scores]
