"""Every model with a transformer reads document context when its encoder has ``context > 0``: the encoder
is given, for each sentence, exactly the neighbours of its document (HCR and MIN once silently read none), and
the encoder refuses token lists without context once documents are indexed."""

from __future__ import annotations

import copy

import pytest
import torch

from battery import SAMPLE_DATA, build, setup_for_fit
from ner_zoo.data.schema import Sentence
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.testing.tiny import TINY, TRANSFORMER_MODELS, takes_encoder, tiny_model
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

#: the registry's models that take an optional transformer (those in TRANSFORMER_MODELS always have one)
OPTIONAL = [name for name in TINY if name not in TRANSFORMER_MODELS and takes_encoder(name)]
NAMES = OPTIONAL + list(TRANSFORMER_MODELS)


def _config(name: str, bert: str) -> dict:
    if name in TRANSFORMER_MODELS:
        return tiny_model(name, bert, encoder={"context": 1})
    encoder = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
               "init_args": {"model": bert, "context": 1}}
    return tiny_model(name, encoder=encoder)


def test_every_model_with_an_optional_transformer_is_listed():
    assert {"hcr", "min", "span_classifier", "locate_and_label"} <= set(OPTIONAL)  # read from the signatures
    assert not {"bilstm_crf", "psa"} & set(NAMES)  # the models without a transformer


@pytest.mark.parametrize("name", NAMES)
def test_transformer_reads_document_neighbours(name, tiny_bert_dir, tmp_path):  # noqa: F811
    cli = build(_config(name, str(tiny_bert_dir)), copy.deepcopy(SAMPLE_DATA), tmp_path)
    setup_for_fit(cli)
    model, dm = cli.model, cli.datamodule
    (encoder,) = model.context_encoders()
    assert len(encoder.documents) > 0
    calls = []
    encode = encoder.encode

    def spy(sentences, device=None, left=None, right=None, **kw):
        calls.append((sentences, left, right))
        return encode(sentences, device, left, right, **kw)

    encoder.encode = spy
    for batch, mode in ((next(iter(dm.train_dataloader())), "train"), (next(iter(dm.val_dataloader())), "eval")):
        calls.clear()
        with torch.no_grad():
            getattr(model, mode)()
            model.compute_loss(batch) if mode == "train" else model.decode(batch)
        assert calls, f"{name} never called its transformer"
        want_left, want_right = encoder.documents.get(batch.sentences, 1)
        for tokens, left, right in calls:
            assert tokens == [s.tokens for s in batch.sentences]
            assert left == want_left and right == want_right, f"{name} ({mode}) lost its document context"
        assert any(want_left) and any(want_right)  # the sample corpus has neighbours to lose


def test_token_lists_without_context_are_refused_once_documents_are_indexed(tiny_bert_dir):  # noqa: F811
    enc = TransformerEncoder(str(tiny_bert_dir), context=1).eval()
    doc = [Sentence(["a", "b"], doc_id="d", index=0), Sentence(["c"], doc_id="d", index=1)]
    plain, _ = enc([s.tokens for s in doc])  # nothing indexed yet: nothing to lose
    enc.add_documents(doc)
    with pytest.raises(ValueError, match="encode_sentences"):
        enc([s.tokens for s in doc])
    with pytest.raises(ValueError, match="encode_sentences"):
        enc.encode([s.tokens for s in doc])
    words, _ = enc(doc)  # sentences: the neighbours come with them
    torch.testing.assert_close(words, enc.encode_sentences(doc).word_states)
    assert not torch.allclose(words, plain)
    left, right = enc.neighbours(doc)
    torch.testing.assert_close(enc([s.tokens for s in doc], left=left, right=right)[0], words)
    torch.testing.assert_close(enc([s.tokens for s in doc], left=[[], []], right=[[], []])[0], plain)
    assert TransformerEncoder(str(tiny_bert_dir)).eval()([s.tokens for s in doc])[0].shape == plain.shape
