"""Transformer tagger baseline: J. Devlin, M.-W. Chang, K. Lee, K. Toutanova. *BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding.* NAACL 2019 (Section 5.3, CoNLL-2003 NER).

This is the "BERT" row the papers of the zoo compare against: CoNLL-2003 test F1 92.80 (BERT-large, quoted
by HCR, Luo et al. 2020, and MIN, Li et al. 2021), and in MIN's table also WNUT-17 46.10 and JNLPBA 75.24.
Devlin et al. classify the first sub-word of each word with a softmax over the tags and fine-tune
everything; ``use_crf: true`` (the default of the zoo's taggers) adds a linear-chain CRF.

Map to code: ``h = TransformerEncoder(words)`` (word states pooled from sub-words,
:mod:`ner_zoo.modules.transformer`), optional casing embedding ``x = [h; c]`` (for uncased encoders such
as the offline MiniLM), emissions ``P = W dropout(x) + b``, then CRF or softmax
(:class:`~ner_zoo.training.tagger.SequenceTagger`). Pretrained weights take ``pretrained_lr``.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn

from ner_zoo.data.batching import Batch
from ner_zoo.modules.transformer import MINILM, LayerSpec, TransformerEncoder
from ner_zoo.training.tagger import SequenceTagger


class TransformerTagger(SequenceTagger):
    """Pretrained transformer -> word states (+ casing embedding) -> dropout -> linear -> CRF (or softmax).

    Args:
        vocabs: linked from the data module.
        model: Hugging Face id (e.g. ``bert-base-cased``, online only) or local directory; default the
            offline MiniLM-L6 (uncased) package.
        pooling: sub-words -> word: ``first`` (Devlin et al.), ``mean`` or ``max``.
        max_subwords_per_word: keep at most N sub-words of a word.
        layers: ``last``, a layer index, a list of indices (concatenated), ``mean_last4`` or ``scalar_mix``.
        window_stride: stride of the overlapping windows over sentences longer than the model maximum
            (``None``: half a window).
        context: neighbouring sentences of the same document on each side fed as context (FLERT-style;
            0: sentence only). Read from the data module's splits, or from :meth:`add_context`.
        freeze: keep the transformer fixed (feature extraction).
        casing_dim: size of the encoder's casing-class embedding concatenated to the word states (0: none;
            ``None``: 8 for an uncased model such as the offline MiniLM, 0 for a cased one).
        dropout: dropout on the word features before the output layer.
        pretrained_lr: learning rate of the transformer (the ``optimizer``'s lr applies to the new layers);
            ``None``: one learning rate for all.
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler``.
    """

    def __init__(self, vocabs: dict | None = None, model: str = MINILM,
                 pooling: Literal["first", "mean", "max"] = "first", max_subwords_per_word: int = 16,
                 layers: LayerSpec = "last", window_stride: int | None = None, context: int = 0,
                 freeze: bool = False, casing_dim: int | None = None, dropout: float = 0.1,
                 pretrained_lr: float | None = 2e-5, **kwargs: Any):
        super().__init__(vocabs=vocabs, pretrained_lr=pretrained_lr, **kwargs)
        self.save_hyperparameters(logger=False)
        self.encoder = TransformerEncoder(model, pooling=pooling, max_subwords_per_word=max_subwords_per_word,
                                          layers=layers, window_stride=window_stride, context=context,
                                          freeze=freeze, casing_dim=casing_dim)
        self.dropout = nn.Dropout(dropout)
        self.projection = nn.Linear(self.encoder.output_dim, self.num_tags)

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        super().on_load_checkpoint(checkpoint)  # checks the digest of the weights as stored
        state = checkpoint.get("state_dict", {})
        if "casing.embedding.weight" in state:  # saved before the casing embedding moved into the encoder
            state["encoder.casing.embedding.weight"] = state.pop("casing.embedding.weight")

    # model -----------------------------------------------------------------------------------------------
    def emissions(self, batch: Batch) -> torch.Tensor:
        x = self.encoder.encode_sentences(batch.sentences, batch.mask.device, hidden_states=False).word_states
        return self.projection(self.dropout(x))
