"""The splits a model's :meth:`~ner_zoo.training.base.NERModule.prepare` and document context read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ner_zoo.data.schema import Sentence

#: the splits whose sentences are document context in each stage
CONTEXT_SPLITS = {"fit": ("train", "dev"), "validate": ("dev",), "test": ("test",), "predict": ("test",)}


class SplitSentences(Mapping):
    """A data module's splits by name (``train``, ``dev``, ``test``), each read on first access; a split
    without a file reads as ``[]``. ``SplitSentences()`` (no data module) is empty."""

    def __init__(self, datamodule: Any = None):
        self.datamodule, self._read = datamodule, {}

    def __getitem__(self, split: str) -> list[Sentence]:
        if split not in self._read:
            try:
                self._read[split] = list(self.datamodule.sentences(split)) if self.datamodule is not None else []
            except FileNotFoundError:
                self._read[split] = []
        return self._read[split]

    def __iter__(self) -> Iterator[str]:
        return iter(("train", "dev", "test") if self.datamodule is not None else ())

    def __len__(self) -> int:
        return len(list(iter(self)))
