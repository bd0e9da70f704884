"""Columns predicted by a zoo checkpoint, for corpora that lack them (e.g. POS tags for ACE from the WSJ
POS tagger, which Locate-and-Label's encoder reads as ``x^pos``).

A POS/tagging checkpoint gives its tags; a span model gives its predicted spans as IOB2 tags. The column
is computed from the tokens alone (no gold, no other column), so it is the same at training and test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ner_zoo.data.schema import Sentence
from ner_zoo.errors import DataFormatError


def predicted_column(sentences: Sequence[Sentence], ckpt_path: str | Path, batch_size: int = 64) -> list[list[str]]:
    """One predicted tag per token of every sentence, from the model stored in ``ckpt_path``."""
    from ner_zoo.cli.predict import load_model, predict
    from ner_zoo.data.tagging import spans_to_tags

    model = load_model(ckpt_path).eval()
    bare = [Sentence(list(s.tokens), source=s.source) for s in sentences]
    preds = predict(model, bare, batch_size=batch_size, accelerator="auto") if bare else []
    if model.is_pos:
        return [list(p) for p in preds]
    return [spans_to_tags(p, len(s), "iob2", where=s.source) for s, p in zip(bare, preds)]


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
