"""Shared, tested neural building blocks (taggers, span models, encoders)."""

from ner_zoo.modules.biaffine import Biaffine
from ner_zoo.modules.char_encoders import CharBiLSTM, CharCNN
from ner_zoo.modules.crf import LinearChainCRF, paths_to_lists
from ner_zoo.modules.embeddings import (
    CasingEmbedding,
    CharEncoderFactory,
    FeatureEmbedding,
    PretrainedStats,
    WordEmbedding,
    casing_ids,
    pretrained_matrix,
)
from ner_zoo.modules.precision import autocast_off, fp32, to_fp32
from ner_zoo.modules.intnet import IntNet
from ner_zoo.modules.memory import KeyValueTokenMemory
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.modules.transformer import DocumentContext, EncoderOutput, ScalarMix, TransformerEncoder, set_dropout

__all__ = [
    "Biaffine",
    "DocumentContext",
    "EncoderOutput",
    "IntNet",
    "KeyValueTokenMemory",
    "ScalarMix",
    "TransformerEncoder",
    "BiLSTMEncoder",
    "CasingEmbedding",
    "CharBiLSTM",
    "CharCNN",
    "FeatureEmbedding",
    "LinearChainCRF",
    "PretrainedStats",
    "TokenEncoder",
    "WordEmbedding",
    "CharEncoderFactory",
    "set_dropout",
    "autocast_off",
    "casing_ids",
    "fp32",
    "paths_to_lists",
    "pretrained_matrix",
    "to_fp32",
]
