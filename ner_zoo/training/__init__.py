"""Fitting a network: the task module (``base``), the network bases (``network``, ``tagger``, ``span_model``: plain
torch), optimisers, schedulers, checkpoints. The speed callbacks and schedulers are imported on first use, so
``ner_zoo.training.network`` and its kin load without Lightning."""

_NAMES = {"CompileModules": "speed", "HalfPrecisionLSTM": "speed", "InverseTimeDecay": "schedulers",
          "LinearWarmupDecay": "schedulers"}

__all__ = ["CompileModules", "HalfPrecisionLSTM", "InverseTimeDecay", "LinearWarmupDecay"]


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module 'ner_zoo.training' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"ner_zoo.training.{_NAMES[name]}"), name)
