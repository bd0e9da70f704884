"""Session fixture ``tiny_bert_dir``: the tiny offline BERT of :mod:`ner_zoo.testing.tiny_bert`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ner_zoo.testing.tiny_bert import MAX_POSITIONS, build_tiny_bert, sample_words

__all__ = ["MAX_POSITIONS", "build_tiny_bert", "sample_words", "tiny_bert_dir"]


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))
