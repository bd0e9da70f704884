"""Data layer: sentences and spans, readers, tag schemes, vocabularies and the DataModule family.

Names are imported on first use: readers, writers, the schema and the corpora (``Corpus``,
:mod:`ner_zoo.data.corpora`) never load Lightning (the fast commands ``score``, ``data stats`` and ``predict`` read
data); the DataModules load it when first named.
"""

import importlib

_CORPORA = ("ACE2004", "ACE2005", "CORPORA", "GENIA", "JNLPBA", "KBP2017", "WNUT2017", "WSJPOS", "CoNLL2000",
            "CoNLL2002Dutch", "CoNLL2002Spanish", "CoNLL2003", "ColumnDataModule", "JsonDataModule", "OntoNotes5",
            "SampleCorpus")
_WHERE = {**{name: "corpora" for name in _CORPORA}, "HFCorpus": "hf_corpus", "NERDataModule": "datamodule", "Corpus": "corpus",
          "Vocabularies": "batching", "Sentence": "schema", "Span": "schema"}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"ner_zoo.data.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ner_zoo.data' has no attribute {name!r}")
