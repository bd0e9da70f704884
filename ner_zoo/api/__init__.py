"""Using a trained model: :func:`load` (a checkpoint or an exported folder) -> :class:`Tagger` on raw text or
tokens -> :class:`Entity` objects with character offsets and scores; export, ONNX and serving live beside it.
See ``docs/api.md``."""

from ner_zoo.api.loading import load
from ner_zoo.api.tagger import Entity, Tagger

__all__ = ["Entity", "Tagger", "load"]
