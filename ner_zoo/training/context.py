"""The splits a model's :meth:`~ner_zoo.training.base.NERModule.prepare` and document context read, the
callback that offers each later stage's sentences as document context (:class:`StageContext`), and the batches
an evaluation will score (:func:`evaluation_batches`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from lightning.pytorch.callbacks import Callback

from ner_zoo.data.schema import Sentence
from ner_zoo.training.prediction import index_context

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


class StageContext(Callback):
    """Document context of the stages after fitting (``NERModule.configure_callbacks`` adds it; fitting indexes
    train and dev in ``prepare``): validate/test index their splits (:data:`CONTEXT_SPLITS`), prediction its
    loaders' sentences, through the one writer :func:`~ner_zoo.training.prediction.index_context`. Lazy: a model
    without document context reads no split."""

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage != "fit" and pl_module.context_encoders():
            from ner_zoo.data.datamodule import NERDataModule

            dm = trainer.datamodule
            splits = SplitSentences(dm if isinstance(dm, NERDataModule) else None)
            index_context(pl_module, itertools.chain.from_iterable(splits[n] for n in CONTEXT_SPLITS.get(stage, ())))

    def on_predict_start(self, trainer: Any, pl_module: Any) -> None:
        if pl_module.context_encoders():  # the sentences to predict are their own document context
            loaders = trainer.predict_dataloaders
            for loader in loaders if isinstance(loaders, (list, tuple)) else [loaders]:
                index_context(pl_module, getattr(loader.dataset, "sentences", ()))


def evaluation_batches(strategy: Any, loaders: Any, limits: Any) -> Callable[[], Iterable[Any]]:
    """The batches an evaluation loop will score, no more, on the strategy's device (what
    ``Network.start_evaluation`` is handed)."""
    def batches() -> Iterable[Any]:
        for loader, limit in zip(loaders if isinstance(loaders, (list, tuple)) else [loaders], limits):
            for batch in itertools.islice(loader, int(limit) if math.isfinite(limit) else None):
                yield strategy.batch_to_device(batch)
    return batches
