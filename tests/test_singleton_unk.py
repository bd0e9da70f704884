"""``singleton_unk``: training singletons read as ``<unk>`` at a rate, per step, seeded, never in evaluation."""

import pytest
import torch

from ner_zoo.data.schema import Sentence
from ner_zoo.data.vocab import UNK_INDEX, Vocab
from ner_zoo.modules.embeddings import WordEmbedding
from ner_zoo.training.words import singleton_ids


def test_singletons_are_counted_by_vocabulary_key():
    train = [Sentence(["The", "cat", "sat"], []), Sentence(["the", "Dog", "sat", "42"], [])]
    vocab = Vocab.build_words(train, lower=True, pretrained_words=["zebra"])
    assert sorted(vocab.itos[i] for i in singleton_ids(vocab, train)) == ["42", "cat", "dog"]  # "the" x2, "sat" x2
    cased = Vocab.build_words(train)
    assert sorted(cased.itos[i] for i in singleton_ids(cased, train)) == ["42", "Dog", "The", "cat", "the"]


def test_only_singletons_are_replaced_at_the_rate_in_training_and_never_in_eval():
    emb = WordEmbedding(10, 4, singleton_unk=0.5)
    emb.set_singletons(torch.tensor([3, 4]))
    ids = torch.tensor([[2, 3, 4, 5]]).repeat(2000, 1)
    torch.manual_seed(0)
    out = emb.replace_singletons(ids)
    assert torch.equal(out[:, [0, 3]], ids[:, [0, 3]])  # other words untouched
    replaced = out[:, 1:3] == UNK_INDEX
    assert torch.all(replaced | (out[:, 1:3] == ids[:, 1:3]))
    assert 0.45 < replaced.float().mean() < 0.55
    torch.manual_seed(0)
    assert torch.equal(emb.replace_singletons(ids), out)  # seeded by the global generator, like dropout
    assert not torch.equal(emb.replace_singletons(ids), out)  # drawn anew at every step
    train_out = emb(ids)
    emb.eval()
    assert torch.equal(emb(ids), emb.embedding(ids))
    assert not torch.equal(train_out, emb.embedding(ids))


def test_off_by_default_and_rejects_non_probabilities():
    emb = WordEmbedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(emb(ids), emb.embedding(ids)) and "singletons" not in emb.state_dict()
    with pytest.raises(ValueError, match="probability"):
        WordEmbedding(10, 4, singleton_unk=1.5)


def test_fit_marks_the_training_singletons_of_the_sample_corpus(tmp_path):
    from battery import SAMPLE_DATA, build

    model = {"class_path": "ner_zoo.models.BiLSTMCRF",
             "init_args": {"words": {"dim": 8, "singleton_unk": 0.5}, "lstm_hidden": 8}}
    data = {**SAMPLE_DATA, "init_args": {"batch_size": 8, "max_sentences": 24}}
    cli = build(model, data, tmp_path, trainer={"max_epochs": 1, "limit_val_batches": 0}, subcommand="fit")
    words = cli.model.tokens.words
    expected = singleton_ids(cli.model.vocabs.words, cli.datamodule.sentences("train"))
    assert len(expected) and torch.equal(words.singletons.nonzero().squeeze(1), expected)
