"""Arguments typed ``Literal[...]`` are checked from the annotation alone (``ner_zoo.ranges.check_choices``): the
Python API refuses a value outside the choices with one line, as jsonargparse does on the command line."""

from __future__ import annotations

from typing import Literal

import pytest

from ner_zoo.ranges import check_choices


def _f(mode: Literal["a", "b", "c"] = "a", maybe: Literal["x"] | None = None, n: int = 1) -> None:
    check_choices(_f, locals())


def test_values_outside_a_literal_are_one_line_errors():
    _f("b", "x", 5)
    _f(maybe=None)
    with pytest.raises(ValueError, match=r"^mode must be a, b or c, got 'd'$"):
        _f("d")
    with pytest.raises(ValueError, match=r"^maybe must be x or null, got 'y'$"):
        _f(maybe="y")


def test_model_and_loss_arguments_are_checked_from_their_annotations():
    from ner_zoo.data import SampleCorpus
    from ner_zoo.models import BiLSTMCRF
    from ner_zoo.modules.span_losses import SpanLoss
    from ner_zoo.training.words import Words

    vocabs = SampleCorpus(max_sentences=4).vocabs
    with pytest.raises(ValueError, match=r"^loss_reduction must be mean or sum, got 'max'$"):
        BiLSTMCRF(vocabs=vocabs, words=Words(dim=4), lstm_hidden=4, char_encoder=None, loss_reduction="max")
    with pytest.raises(ValueError, match=r"^reduction must be mean or sum, got 'none'$"):
        SpanLoss(reduction="none")


def test_the_models_annotations_are_the_lists():
    from ner_zoo.models.hcr import HCR
    from ner_zoo.models.locate_and_label import LocateAndLabel
    from ner_zoo.modules.transformer import TransformerEncoder

    for init, name, bad, message in (
            (HCR.__init__, "fusion", "sum", "fusion must be emission or state, got 'sum'"),
            (HCR.__init__, "memory_mode", "off", "memory_mode must be as_is, zero or train_only, got 'off'"),
            (LocateAndLabel.__init__, "crossing", "on", "crossing must be off, after_threshold or code, got 'on'"),
            (TransformerEncoder.__init__, "pooling", "last", "pooling must be first, mean or max, got 'last'")):
        with pytest.raises(ValueError, match=f"^{message}$"):
            check_choices(init, {name: bad})
