"""Data layer: sentences and spans, readers, tag schemes, vocabularies and the DataModule family.

The DataModules (which import Lightning) load on first use, so the readers, tag schemes and metrics
stay fast to import.
"""

from __future__ import annotations

import importlib

from ner_zoo.data.schema import Sentence, Span

_LAZY = {name: "ner_zoo.data.corpora" for name in (
    "ACE2004", "ACE2005", "CORPORA", "GENIA", "JNLPBA", "KBP2017", "WNUT2017", "WSJPOS", "CoNLL2000",
    "CoNLL2002Dutch", "CoNLL2002Spanish", "CoNLL2003", "ColumnDataModule", "JsonDataModule", "OntoNotes5",
    "SampleCorpus")}
_LAZY.update({"NERDataModule": "ner_zoo.data.datamodule", "Vocabularies": "ner_zoo.data.datamodule"})

__all__ = ["Sentence", "Span", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ner_zoo.data' has no attribute {name!r}")
