"""Corpus readers: every format becomes a list of :class:`~ner_zoo.data.schema.Sentence` with spans.

==================  ======================================================================
``read_conll``      CoNLL column files (IOB1/IOB2/BIOES tags, ``-DOCSTART-`` documents)
``read_nested_json``  span-annotated JSON: GENIA lines, DyGIE/PURE (ACE), Locate-and-Label
``read_ptb_mrg``    Penn Treebank trees, POS tags in ``columns["pos"]``
``read_ptb_pos``    Penn Treebank tagged text (``word/TAG``); ``read_ptb`` picks by suffix
``read_hf``         Hugging Face ``datasets`` (hub id or local file)
==================  ======================================================================

Each returns a :class:`SentenceList`: a plain list that also records ``scheme``, ``encoding`` and
reader ``notes``. :data:`READERS` maps a format name to its reader.
"""

from ner_zoo.data.readers.common import SentenceList
from ner_zoo.data.readers.conll import read_conll, read_conll_with_scheme, read_prediction_conll
from ner_zoo.data.readers.hf import read_hf
from ner_zoo.data.readers.nested_json import detect_shape, read_nested_json
from ner_zoo.data.readers.ptb import read_ptb, read_ptb_mrg, read_ptb_pos

READERS = {
    "conll": read_conll,
    "nested_json": read_nested_json,
    "ptb": read_ptb,
    "ptb_mrg": read_ptb_mrg,
    "ptb_pos": read_ptb_pos,
    "hf": read_hf,
}

__all__ = [
    "READERS",
    "SentenceList",
    "detect_shape",
    "read_conll",
    "read_conll_with_scheme",
    "read_hf",
    "read_nested_json",
    "read_prediction_conll",
    "read_ptb",
    "read_ptb_mrg",
    "read_ptb_pos",
]
