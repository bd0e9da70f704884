"""Columns predicted by a zoo checkpoint, for corpora that lack them (e.g. POS tags for ACE from the WSJ
POS tagger, which Locate-and-Label's encoder reads as ``x^pos``).

A POS/tagging checkpoint gives its tags; a span model gives its predicted spans as IOB2 tags. The column
is computed from the tokens alone (no gold, no other column), so it is the same at training and test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from ner_zoo.data.schema import Sentence
from ner_zoo.errors import DataFormatError


ColumnPredictor = Callable[[Sequence[Sentence], "str | Path"], list[list[str]]]
#: predicts a column from a checkpoint: :func:`ner_zoo.training.inference.predicted_column`, set when
#: ``ner_zoo.training`` is imported (as it is wherever a model exists: the data layer cannot import models)
column_predictor: ColumnPredictor | None = None


def predicted_column(sentences: Sequence[Sentence], ckpt_path: str | Path) -> list[list[str]]:
    """One predicted tag per token of every sentence, from the model stored in ``ckpt_path``."""
    if column_predictor is None:
        raise DataFormatError("predicted_columns needs a model: import ner_zoo.training first", ckpt_path)
    return column_predictor(sentences, ckpt_path)


def add_predicted_columns(sentences: Sequence[Sentence], columns: dict[str, str], where: object = None) -> None:
    """Add each ``{name: checkpoint}`` column to ``sentences`` in place; a column the data already has is an
    error (it would be overwritten)."""
    for name, ckpt in columns.items():
        clash = next((s for s in sentences if name in s.columns), None)
        if clash is not None:
            raise DataFormatError(f"predicted column {name!r} already exists in the data; rename it or drop it "
                                  "from predicted_columns", clash.source or where)
        for s, tags in zip(sentences, predicted_column(sentences, ckpt)):
            s.columns[name] = tags
