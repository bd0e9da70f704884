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

from typing import Any

import torch
from torch import nn

from ner_zoo.data.batching import Batch
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.ranges import PositiveFloat, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.tagger import SequenceTagger


class TransformerTaggerNet(SequenceTagger):
    """Pretrained transformer -> word states (+ casing embedding) -> dropout -> linear -> CRF (or softmax).

    Args:
        vocabs: linked from the data module.
        encoder: the transformer (:class:`~ner_zoo.modules.transformer.TransformerEncoder`, ``class_path``/
            ``init_args``: ``model`` (Hugging Face id such as ``bert-base-cased``, online only, or local
            directory), ``pooling`` (``first`` in Devlin et al.), ``max_subwords_per_word``, ``layers``,
            ``window_stride``, ``context`` (neighbouring sentences per side, FLERT-style), ``freeze``,
            ``casing_dim``); ``None``: its defaults (the offline MiniLM-L6 package, uncased, with casing).
        dropout: dropout on the word features before the output layer.
        pretrained_lr: learning rate of the transformer (the ``optimizer``'s lr applies to the new layers);
            ``None``: one learning rate for all.
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler``.
    """

    def __init__(self, vocabs: dict | None = None, encoder: TransformerEncoder | None = None, dropout: Probability = 0.1,
                 pretrained_lr: PositiveFloat | None = 2e-5, **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)  # pretrained_lr: read by the task module (its default here)
        self.encoder = encoder if encoder is not None else TransformerEncoder()
        self.dropout = nn.Dropout(dropout)
        self.projection = nn.Linear(self.encoder.output_dim, self.num_tags)

    def bucket_lengths(self, sentences) -> list[int]:
        """Sub-words per sentence, by which the data module and the Python API sort batches: a step costs
        sub-words (CoNLL-2003, MiniLM, batch 32: buckets by words ran 1.48x the real sub-word positions, by
        sub-words 1.03x; docs/benchmarks.md)."""
        return self.encoder.subword_lengths([s.tokens for s in sentences])

    # model -----------------------------------------------------------------------------------------------
    def emissions(self, batch: Batch) -> torch.Tensor:
        x = self.encoder.encode_sentences(batch.sentences, batch.mask.device, hidden_states=False).word_states
        return self.projection(self.dropout(x))


__getattr__ = hosts(TransformerTaggerNet)  # TransformerTagger: the LightningModule that fits TransformerTaggerNet (ner_zoo.training.base)
