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
from ner_zoo.dotted import resolve


ColumnPredictor = Callable[[Sequence[Sentence], "str | Path"], list[list[str]]]
#: the predictor a data module uses unless it is given another (``NERDataModule.column_predictor``): named, not
#: imported, since the data layer cannot import the layer that loads models; imported on first use
DEFAULT_PREDICTOR = "ner_zoo.training.inference.predicted_column"


def resolve_predictor(predictor: ColumnPredictor | str) -> ColumnPredictor:
    """``predictor`` itself, or the function its dotted name names."""
    if callable(predictor):
        return predictor
    return resolve(predictor)


def add_predicted_columns(sentences: Sequence[Sentence], columns: dict[str, str], where: object = None,
                          predictor: ColumnPredictor | str = DEFAULT_PREDICTOR) -> None:
    """Add each ``{name: checkpoint}`` column, predicted by ``predictor``, to ``sentences`` in place; a column
    the data already has is an error (it would be overwritten)."""
    predict = resolve_predictor(predictor)
    for name, ckpt in columns.items():
        clash = next((s for s in sentences if name in s.columns), None)
        if clash is not None:
            raise DataFormatError(f"predicted column {name!r} already exists in the data; rename it or drop it "
                                  "from predicted_columns", clash.source or where)
        for s, tags in zip(sentences, predict(sentences, ckpt)):
            s.columns[name] = tags
