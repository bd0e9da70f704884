"""Shared, tested neural building blocks for the taggers."""

from ner_zoo.modules.char_encoders import CharBiLSTM, CharCNN
from ner_zoo.modules.crf import LinearChainCRF, paths_to_lists
from ner_zoo.modules.embeddings import (
    CasingEmbedding,
    FeatureEmbedding,
    PretrainedStats,
    WordEmbedding,
    casing_ids,
    load_glove,
    pretrained_matrix,
)
from ner_zoo.modules.precision import autocast_off, fp32, to_fp32
from ner_zoo.modules.rnn import BiLSTMEncoder

__all__ = [
    "BiLSTMEncoder",
    "CasingEmbedding",
    "CharBiLSTM",
    "CharCNN",
    "FeatureEmbedding",
    "LinearChainCRF",
    "PretrainedStats",
    "WordEmbedding",
    "autocast_off",
    "casing_ids",
    "fp32",
    "load_glove",
    "paths_to_lists",
    "pretrained_matrix",
    "to_fp32",
]
