"""Long inputs through the transformer and span models (issue 10): a 1,000-token sentence (over the tiny
BERT's 64-position maximum, so windows are used) and a document of 2,000 sentences read as context.

Models come from the tiny registry (``ner_zoo/testing/tiny.py``); its plain taggers (no required transformer:
BiLSTM-CRF, PSA, HCR, MIN) get the 1,000-token sentence in tests/test_reliability.py, every other model here.
"""

from __future__ import annotations

import copy

import pytest
import torch

from battery import SAMPLE_DATA, build
from ner_zoo.training.inference import predict
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.training.span_model import SpanBatch
from ner_zoo.testing.tiny import TINY, TRANSFORMER_MODELS, plain_taggers, takes_encoder, tiny_model
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)


#: every registry model but the plain taggers (those: tests/test_reliability.py)
NAMES = [name for name in TINY if name not in plain_taggers()]
CONTEXT = {"dspert": 2, "biaffine_ner": 2}  # neighbouring sentences per side (default 1)
EXTRA = {"locate_and_label": {"score_threshold": 0.0}}  # keep every proposal, so decoding sees long spans


def _models(bert: str) -> dict[str, dict]:
    """The tiny registry's configs, each with its transformer reading document context."""
    features = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                "init_args": {"model": bert, "pooling": "max", "context": 1}}
    configs = {}
    for name in NAMES:
        if name in TRANSFORMER_MODELS:
            configs[name] = tiny_model(name, bert, encoder={"context": CONTEXT.get(name, 1)}, **EXTRA.get(name, {}))
        else:  # an optional transformer (or none: a span model on words alone)
            encoder = copy.deepcopy(features) if takes_encoder(name) else None
            configs[name] = tiny_model(name, encoder=encoder, **EXTRA.get(name, {}))
    return configs


def _model(name: str, bert, tmp_path):
    cli = build(copy.deepcopy(_models(str(bert))[name]), copy.deepcopy(SAMPLE_DATA), tmp_path)
    return cli.model.eval(), cli.datamodule


def _check(pred, sentence: Sentence) -> None:
    if pred and isinstance(pred[0], str):  # tags
        assert len(pred) == len(sentence)
    else:
        assert all(0 <= sp.start < sp.end <= len(sentence) for sp in pred)


@pytest.mark.parametrize("name", NAMES)
def test_1000_token_sentence(name, tiny_bert_dir, tmp_path):  # noqa: F811
    model, dm = _model(name, tiny_bert_dir, tmp_path)
    words = [t for s in dm.sentences("train") for t in s.tokens]
    label = model.vocabs.labels[0]
    gold = [Span(0, 2, label), Span(500, 503, label), Span(997, 1000, label)]
    long = Sentence((words * 1000)[:1000], gold, source="long:1")
    collate = model.collate
    batch = collate([(0, long)])
    if isinstance(batch, SpanBatch):
        assert int(batch.gold_mask.sum()) == 3  # no gold span dropped
    else:
        assert batch.tags.shape[1] == 1000 and int(batch.mask.sum()) == 1000
    with torch.no_grad():
        loss = model.train().compute_loss(batch)  # the training path takes it too
    assert torch.isfinite(loss)
    (pred,) = predict(model.eval(), [long], accelerator="cpu")
    _check(pred, long)
    if isinstance(pred, list) and pred and isinstance(pred[0], str):
        assert len(pred) == 1000  # a tag for every token


@pytest.mark.parametrize("name", ["locate_and_label", "dspert"])
def test_document_of_2000_sentences_read_as_context(name, tiny_bert_dir, tmp_path):  # noqa: F811
    """Every sentence of a 2,000-sentence document gets a prediction, with its neighbours as context."""
    model, dm = _model(name, tiny_bert_dir, tmp_path)
    train = dm.sentences("train")
    doc = [Sentence(list(train[i % len(train)].tokens), doc_id="long-doc", index=i, source=f"doc:{i}")
           for i in range(2000)]
    preds = predict(model, doc, batch_size=64, accelerator="cpu")
    assert len(preds) == 2000
    for p, s in zip(preds, doc):
        _check(p, s)
    encoder = model.context_encoders()[0]
    assert len(encoder.documents) >= 2000
    left, right = encoder.neighbours(doc[1000:1002])
    assert left[0] and right[0]  # both neighbours found inside the long document
