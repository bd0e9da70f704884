"""TokenEncoder: the token inputs of every word-reading model, as one component (layout, features, casing,
dropout, the transformer through encode_sentences, prepare), and the model attribute names of docs/architecture.md."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from battery import SAMPLE_DATA, build
from ner_zoo.data.datamodule import Vocabularies
from ner_zoo.data.schema import Sentence
from ner_zoo.data.vocab import Vocab
from ner_zoo.modules.char_encoders import CharCNN
from ner_zoo.modules.embeddings import Words, casing_ids
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.testing.tiny import TINY, TRANSFORMER_MODELS, tiny_model
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

SENTS = [Sentence(["The", "cat", "sat", "in", "Paris"], doc_id="d", index=0),
         Sentence(["A", "dog", "2nd", "cat"], doc_id="d", index=1)]


def _vocabs() -> Vocabularies:
    pos = Vocab(["DT", "NN", "VB", "IN", "NNP"], name="pos")
    return Vocabularies("ner", "bio", ["LOC"], Vocab.labels(["O", "B-LOC", "I-LOC"]), Vocab.build_words(SENTS),
                        Vocab.build_chars(SENTS), {"pos": pos})


def _batch(vocabs: Vocabularies):
    sents = copy.deepcopy(SENTS)
    for s in sents:
        s.columns["pos"] = ["DT", "NN", "VB", "IN", "NNP"][:len(s)]
    return vocabs.collator()(list(enumerate(sents)))


def test_layout_is_words_chars_features_casing_transformer(tiny_bert_dir):  # noqa: F811
    vocabs = _vocabs()
    bert = TransformerEncoder(str(tiny_bert_dir), casing_dim=0)
    enc = TokenEncoder(vocabs, Words(dim=6), lambda n: CharCNN(n, char_dim=4, filters=5), bert,
                       features={"pos": 3}, casing_dim=2).eval()
    assert enc.output_dim == 6 + 5 + 3 + 2 + bert.output_dim and enc.word_dim == 6
    batch = _batch(vocabs)
    with torch.no_grad():
        x = enc(batch)
        assert x.shape == (2, 5, enc.output_dim)
        torch.testing.assert_close(x[..., :6], enc.words(batch.words))
        torch.testing.assert_close(x[..., 6:11], enc.chars(batch.chars))
        torch.testing.assert_close(x[..., 11:14], enc.features[0](batch.features["pos"]))
        assert x[1, :4, 14:16].tolist() == enc.casing.embedding.weight[casing_ids(SENTS[1].tokens)].tolist()
        torch.testing.assert_close(x[..., 16:], bert.encode_sentences(batch.sentences).word_states)


def test_the_transformer_reads_document_context_through_encode_sentences(tiny_bert_dir):  # noqa: F811
    bert = TransformerEncoder(str(tiny_bert_dir), context=1).eval()
    bert.add_documents(SENTS)
    enc = TokenEncoder(_vocabs(), None, None, bert).eval()
    batch = _batch(_vocabs())
    with torch.no_grad():
        torch.testing.assert_close(enc(batch), bert.encode_sentences(batch.sentences).word_states)
        alone = bert.encode([s.tokens for s in SENTS], left=[[], []], right=[[], []]).word_states
    assert not torch.allclose(enc(batch), alone)  # the neighbours changed the states


def test_dropout_on_the_embeddings_and_apart_on_the_transformer(tiny_bert_dir):  # noqa: F811
    vocabs, batch = _vocabs(), _batch(_vocabs())
    bert = TransformerEncoder(str(tiny_bert_dir), casing_dim=0, freeze=True)
    enc = TokenEncoder(vocabs, Words(dim=64), None, bert, dropout=0.9, encoder_dropout=0.0).train()
    with torch.no_grad():
        x, ref = enc(batch), enc.eval()(batch)
    torch.testing.assert_close(x[..., 64:], ref[..., 64:])  # transformer states kept
    assert not torch.equal(x[..., :64], ref[..., :64])  # embeddings dropped
    one = TokenEncoder(vocabs, Words(dim=64), None, bert, dropout=0.9).train()  # one dropout over everything
    with torch.no_grad():
        assert (one(batch)[..., 64:] == 0).float().mean() > 0.5


def test_prepare_loads_vectors_and_marks_singletons():
    vocabs = _vocabs()
    enc = TokenEncoder(vocabs, Words(vectors="file.txt", dim=2, singleton_unk=0.5))
    vectors = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    log = enc.prepare(SENTS, lambda source: (["cat", "paris"], vectors) if source == "file.txt" else None)
    weight = enc.words.embedding.weight
    stoi = vocabs.words.stoi
    assert weight[stoi["cat"]].tolist() == [1.0, 2.0] and weight[stoi["Paris"]].tolist() == [3.0, 4.0]
    assert "file.txt" in log[0] and "7 training singletons" in log[1]
    singles = {vocabs.words.itos[i] for i in enc.words.singletons.nonzero().flatten().tolist()}
    assert singles == {"The", "sat", "in", "Paris", "A", "dog", "2nd"}  # "cat" twice
    with pytest.raises(ValueError, match="words.dim: 2"):
        TokenEncoder(vocabs, Words(vectors="f", dim=3)).prepare(SENTS, lambda s: (["cat"], vectors))


#: the models that compose a TokenEncoder (the others: a transformer alone, as self.encoder)
WITH_TOKENS = sorted(set(TINY) - set(TRANSFORMER_MODELS))


@pytest.mark.parametrize("name", list(TINY))
def test_one_name_per_role(name, tiny_bert_dir, tmp_path):  # noqa: F811
    """``self.tokens`` is the TokenEncoder, ``self.encoder`` only ever the transformer, BiLSTMs are ``*lstm``."""
    from ner_zoo.modules.rnn import BiLSTMEncoder

    model = build(tiny_model(name, tiny_bert_dir), copy.deepcopy(SAMPLE_DATA), tmp_path).model
    named = dict(model.net.named_children())  # the network the task module hosts
    assert isinstance(named.get("tokens"), TokenEncoder) == (name in WITH_TOKENS)
    assert isinstance(named.get("encoder"), TransformerEncoder) == (name in TRANSFORMER_MODELS)
    for key, child in named.items():
        if isinstance(child, BiLSTMEncoder):
            assert key.endswith("lstm"), f"{name}.{key} is a BiLSTM"
        if isinstance(child, TransformerEncoder):
            assert key == "encoder"


def test_one_casing_per_model(tiny_bert_dir):  # noqa: F811
    """One casing component (``CasingEmbedding``, read with ``words``): the TokenEncoder's own casing beside an
    encoder that embeds casing (an uncased transformer does by default) is refused, so no model gets it twice."""
    vocabs = _vocabs()
    bert = TransformerEncoder(str(tiny_bert_dir))
    assert bert.casing is not None  # uncased: casing by default
    with pytest.raises(ValueError, match="casing twice"):
        TokenEncoder(vocabs, Words(dim=4), encoder=bert, casing_dim=2)
    enc = TokenEncoder(vocabs, Words(dim=4), encoder=bert).eval()  # the encoder's casing alone
    assert enc.casing is None and enc.output_dim == 4 + bert.output_dim
    flat = bert.casing.words([s.tokens for s in SENTS])
    assert flat.shape == (sum(len(s) for s in SENTS), bert.casing_dim)
    assert flat[5:].tolist() == bert.casing.embedding.weight[casing_ids(SENTS[1].tokens)].tolist()
