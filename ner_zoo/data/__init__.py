"""Data layer: sentences and spans, readers, tag schemes, vocabularies and the DataModule family.

Plain imports: ``import ner_zoo.data`` loads Lightning (for the DataModules). ``import ner_zoo`` stays light.
"""

from ner_zoo.data.corpora import (
    ACE2004,
    ACE2005,
    CORPORA,
    GENIA,
    JNLPBA,
    KBP2017,
    WNUT2017,
    WSJPOS,
    CoNLL2000,
    CoNLL2002Dutch,
    CoNLL2002Spanish,
    CoNLL2003,
    ColumnDataModule,
    JsonDataModule,
    OntoNotes5,
    SampleCorpus,
)
from ner_zoo.data.datamodule import NERDataModule, Vocabularies
from ner_zoo.data.hf_corpus import HFCorpus
from ner_zoo.data.schema import Sentence, Span

__all__ = ["ACE2004", "ACE2005", "CORPORA", "GENIA", "JNLPBA", "KBP2017", "WNUT2017", "WSJPOS", "CoNLL2000",
           "CoNLL2002Dutch", "CoNLL2002Spanish", "CoNLL2003", "ColumnDataModule", "HFCorpus", "JsonDataModule", "NERDataModule",
           "OntoNotes5", "SampleCorpus", "Sentence", "Span", "Vocabularies"]
