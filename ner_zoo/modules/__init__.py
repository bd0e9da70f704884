"""Shared, tested neural building blocks (taggers, span models, encoders).

Names are imported on first use, so that the torch-free modules here (:mod:`ner_zoo.modules.subwords`,
:mod:`ner_zoo.modules.casing`: what an ONNX tagger runs without torch) can be imported without torch.
"""

import importlib

_WHERE = {
    "Biaffine": "biaffine",
    "CharBiLSTM": "char_encoders", "CharCNN": "char_encoders",
    "LinearChainCRF": "crf", "paths_to_lists": "crf",
    "CasingEmbedding": "embeddings", "CharEncoderFactory": "embeddings", "FeatureEmbedding": "embeddings",
    "PretrainedStats": "embeddings", "WordEmbedding": "embeddings", "casing_ids": "embeddings",
    "pretrained_matrix": "embeddings",
    "autocast_off": "precision", "fp32": "precision", "to_fp32": "precision",
    "IntNet": "intnet",
    "KeyValueTokenMemory": "memory",
    "BiLSTMEncoder": "rnn",
    "TokenEncoder": "token_encoder",
    "DocumentContext": "transformer", "EncoderOutput": "transformer", "ScalarMix": "transformer",
    "TransformerEncoder": "transformer", "set_dropout": "transformer",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"ner_zoo.modules.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ner_zoo.modules' has no attribute {name!r}")
