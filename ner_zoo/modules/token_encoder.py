"""The token inputs of a model as one component: word vectors, a character encoder, extra per-token features
(data columns such as POS, casing) and an optional pretrained transformer, concatenated per word.

Every model that reads words composes a :class:`TokenEncoder` (as ``self.tokens``) instead of building the
pieces by hand; a model on a transformer alone keeps the :class:`~ner_zoo.modules.transformer.TransformerEncoder`
as ``self.encoder`` (the roles table of ``docs/architecture.md``). The transformer is read through one entry point,
:meth:`~ner_zoo.modules.transformer.TransformerEncoder.encode_sentences`, so every model gets document context
(``encoder.init_args.context``) the same way.

Output layout (``output_dim``, in this order): ``[word | chars | features... | casing | transformer]``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Mapping, Sequence

import torch
from torch import nn

from ner_zoo.modules.embeddings import CasingEmbedding, CharEncoderFactory, WordEmbedding, Words, pretrained_matrix

#: ``source -> (words, vectors [N, D])``: how :meth:`TokenEncoder.prepare` reads pretrained vectors (the data
#: layer's :func:`ner_zoo.data.vectors.read_vectors`, passed in by the training layer)
VectorReader = Callable[[str], tuple[Sequence[str], Any]]


def singleton_ids(vocab, train: Sequence) -> torch.Tensor:
    """Ids of the words seen exactly once in ``train`` (sentences with ``tokens``), counted by vocabulary key
    (after the vocabulary's lower-casing and digit normalisation, as the ids are looked up)."""
    counts = Counter(vocab.key(t) for s in train for t in s.tokens)
    return torch.tensor(sorted(vocab.stoi[w] for w, c in counts.items() if c == 1 and w in vocab.stoi),
                        dtype=torch.long)


class TokenEncoder(nn.Module):
    """Per-word input states ``[B, L, output_dim]`` of a batch: ``[w; c; f...; casing] -> dropout``, then the
    transformer's word states (with its own dropout) appended.

    Args:
        vocabs: the model's vocabularies (``words``, ``chars``, ``features``: :class:`ner_zoo.data.vocab.Vocabularies`).
        words: the word table (:class:`~ner_zoo.modules.embeddings.Words`: ``vectors``, ``dim``, ``freeze``,
            ``singleton_unk``); ``None``: no word vectors.
        char_encoder: factory ``num_chars -> module`` mapping char ids ``[B, L, C]`` to ``[B, L, D]``
            (``ner_zoo.modules.CharBiLSTM``, ``CharCNN``, ``IntNet``), or ``None``.
        encoder: a pretrained transformer (:class:`~ner_zoo.modules.transformer.TransformerEncoder`), or ``None``.
        features: data columns embedded per token, ``{column: dim}`` (e.g. ``{"pos": 25}``; the column must be
            in ``vocabs.features``), in this order.
        casing_dim: size of a casing-class embedding of each word (:class:`~ner_zoo.modules.embeddings.CasingEmbedding`,
            the one casing component); 0: none. Refused beside an ``encoder`` that embeds casing itself (an uncased
            transformer does by default): one casing per model.
        dropout: dropout on ``[w; c; f; casing]`` (the transformer states included when ``encoder_dropout`` is
            ``None``: one dropout over the whole concatenation).
        encoder_dropout: dropout on the transformer states alone; ``None``: ``dropout`` over everything.
    """

    def __init__(self, vocabs, words: Words | None = Words(), char_encoder: CharEncoderFactory | None = None,
                 encoder: nn.Module | None = None, features: Mapping[str, int] | None = None, casing_dim: int = 0,
                 dropout: float = 0.0, encoder_dropout: float | None = None):
        super().__init__()
        self.vocab = vocabs.words  # not saved: the model's hyper-parameters hold the vocabularies
        self.table = words
        self.words = (WordEmbedding(len(vocabs.words), words.dim, freeze=words.freeze,
                                    singleton_unk=words.singleton_unk) if words is not None else None)
        self.chars = char_encoder(len(vocabs.chars)) if char_encoder is not None else None
        self.feature_names = list(features or {})
        self.features = nn.ModuleList(nn.Embedding(len(vocabs.features[name]), dim)
                                      for name, dim in (features or {}).items())
        if casing_dim > 0 and getattr(encoder, "casing", None) is not None:
            raise ValueError(f"casing twice: the encoder already embeds casing (its casing_dim "
                             f"{encoder.casing_dim}); set casing_dim 0 here or encoder.init_args.casing_dim 0")
        self.casing = CasingEmbedding(casing_dim) if casing_dim > 0 else None
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.encoder_dropout = nn.Dropout(encoder_dropout) if encoder_dropout is not None else None
        dims = [words.dim if words is not None else 0, self.chars.output_dim if self.chars is not None else 0,
                sum((features or {}).values()), casing_dim, encoder.output_dim if encoder is not None else 0]
        #: size of the word vectors at the front of the output (``forward(batch)[..., :word_dim]``)
        self.word_dim = dims[0]
        self.output_dim = sum(dims)
        if self.output_dim == 0:
            raise ValueError("a TokenEncoder needs words, a char encoder, features, casing or a transformer")

    # set-up before training ------------------------------------------------------------------------------------
    def prepare(self, train: Sequence, read_vectors: VectorReader | None = None) -> list[str]:
        """Data-dependent set-up (``NERModule.prepare`` calls it for every TokenEncoder of a model before
        training; a checkpoint restores trained weights over it): the pretrained ``words.vectors`` (read with
        ``read_vectors``) into the word table, and the training singletons of ``train`` (sentences with
        ``tokens``) for ``words.singleton_unk``. Returns lines to log."""
        if self.words is None:
            return []
        log = []
        if self.table.vectors is not None:
            if read_vectors is None:
                raise ValueError(f"words.vectors is {self.table.vectors!r} but no vector reader was given")
            log.append(self.load_vectors(self.table.vectors, *read_vectors(self.table.vectors)))
        if self.words.singleton_unk > 0:
            ids = singleton_ids(self.vocab, train)
            self.words.set_singletons(ids)
            log.append(f"singleton_unk {self.words.singleton_unk}: {len(ids)} training singletons read as <unk> "
                       "at that rate in training")
        return log

    def load_vectors(self, source: str, words: Sequence[str], vectors) -> str:
        """Fill the word table (rows = the word vocabulary) from ``(words, vectors)`` read from ``source``:
        exact, lower-cased, then digit-normalised matches (:func:`pretrained_matrix`); returns the hit counts."""
        dim = self.words.embedding.weight.shape[1]
        if vectors.shape[1] != dim:
            raise ValueError(f"{source} has {vectors.shape[1]}-d vectors but words.dim is {dim}; "
                             f"set model.init_args.words.dim: {vectors.shape[1]}")
        matrix, stats = pretrained_matrix(self.vocab.itos, words, vectors, normalize_digits=self.vocab.normalize_digits)
        with torch.no_grad():
            self.words.embedding.weight.copy_(matrix)
        self.words.stats = stats  # hit counts (PretrainedStats)
        return f"word embeddings from {source}: {stats}"

    # forward ---------------------------------------------------------------------------------------------------
    def forward(self, batch) -> torch.Tensor:
        """``[B, L, output_dim]`` from a batch's ``words [B, L]``, ``chars [B, L, C]``, ``features[column]
        [B, L]``, ``sentences`` (casing, transformer) and ``mask [B, L]`` (its device)."""
        parts = []
        if self.words is not None:
            parts.append(self.words(batch.words))
        if self.chars is not None:
            parts.append(self.chars(batch.chars))
        parts += [emb(batch.features[name]) for name, emb in zip(self.feature_names, self.features)]
        if self.casing is not None:  # zero on padding, as the embedding's padding row
            casing = self.casing.words([s.tokens for s in batch.sentences], batch.mask.device)
            parts.append(casing.new_zeros(*batch.mask.shape, casing.shape[-1]).masked_scatter(
                batch.mask.unsqueeze(-1), casing))
        if self.encoder is not None:
            states = self.encoder.encode_sentences(batch.sentences, batch.mask.device, hidden_states=False).word_states
            if self.encoder_dropout is not None:  # dropped apart from the embeddings
                x = self.dropout(self._cat(parts)) if parts else None
                states = self.encoder_dropout(states.to(x.dtype if x is not None else states.dtype))
                return torch.cat([x, states], -1) if x is not None else states
            parts.append(states)
        return self.dropout(self._cat(parts))

    @staticmethod
    def _cat(parts: list[torch.Tensor]) -> torch.Tensor:
        dtype = parts[0].dtype  # the first part's dtype (autocast: the word table's)
        return torch.cat([p.to(dtype) for p in parts], -1) if len(parts) > 1 else parts[0]
