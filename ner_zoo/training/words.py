"""Pretrained word vectors and training singletons into a model's word tables: the one loading path.

:meth:`Network.prepare <ner_zoo.training.network.Network.prepare>` calls :func:`prepare_tokens` (so when fitting
starts, never when a checkpoint is loaded): every :class:`~ner_zoo.modules.token_encoder.TokenEncoder` of the model
reads its ``words.vectors`` (through the data layer's cached :func:`ner_zoo.data.vectors.read_vectors`) and marks
its training singletons. :func:`prepare_words` does the same for a bare word embedding.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Iterable

from torch import nn

from ner_zoo.data.schema import Sentence
from ner_zoo.data.vectors import read_vectors
from ner_zoo.data.vocab import Vocab
from ner_zoo.modules.embeddings import WordEmbedding, Words, pretrained_matrix
from ner_zoo.modules.token_encoder import TokenEncoder, singleton_ids

__all__ = ["prepare_tokens", "prepare_words", "singleton_ids"]

log = logging.getLogger("ner_zoo")


def prepare_tokens(model: nn.Module, train: Iterable[Sentence]) -> None:
    """:meth:`TokenEncoder.prepare` of every TokenEncoder inside ``model``, with the vectors read by the data
    layer; logs what each did."""
    train = list(train)
    for module in model.modules():
        if isinstance(module, TokenEncoder):
            for line in module.prepare(train, partial(read_vectors, key="model.init_args.words.vectors")):
                log.info(line)


def prepare_words(embedding: WordEmbedding, vocab: Vocab, words: Words, train: Iterable[Sentence]) -> None:
    """For a word embedding outside a TokenEncoder: the pretrained ``words.vectors`` (when set) and the training
    singletons (when ``singleton_unk`` > 0). A checkpoint restores trained weights over these."""
    if words.vectors is not None:
        source = words.vectors
        found, vectors = read_vectors(source, key="model.init_args.words.vectors")
        dim = embedding.embedding.weight.shape[1]
        if vectors.shape[1] != dim:
            raise ValueError(f"{source} has {vectors.shape[1]}-d vectors but words.dim is {dim}; "
                             f"set model.init_args.words.dim: {vectors.shape[1]}")
        matrix, stats = pretrained_matrix(vocab.itos, found, vectors, normalize_digits=vocab.normalize_digits)
        embedding.embedding.weight.data.copy_(matrix)
        log.info(f"word embeddings from {source}: {stats}")
    if embedding.singleton_unk > 0:
        embedding.set_singletons(singleton_ids(vocab, train))
