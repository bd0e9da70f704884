"""ner-zoo: a PyTorch Lightning model zoo for named entity recognition and sequence labeling.

``ner_zoo.load(path)`` gives a tagger for raw text (see ``docs/api.md``); ``import ner_zoo`` stays light (the
API is imported on first use).
"""

__version__ = "0.1.0"
__all__ = ["Entity", "Tagger", "load"]


def __getattr__(name: str):
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("ner_zoo.api"), name)
    raise AttributeError(f"module 'ner_zoo' has no attribute {name!r}")
