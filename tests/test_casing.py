"""Casing for every transformer-based model (review M5): an uncased encoder (the offline MiniLM, the tiny
test BERT) gets a casing embedding by default, so "Apple" and "apple" no longer look the same."""

from __future__ import annotations

import copy

import pytest
import torch

from battery import SAMPLE_DATA, build
from ner_zoo.data.schema import Sentence
from ner_zoo.modules.transformer import TransformerEncoder
from test_long_documents import NAMES, _models
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

WITH_WORDS = ("span_classifier", "locate_and_label")  # word and char inputs beside the transformer


def _build(name: str, bert, tmp_path, casing_dim: int | None = None):
    config = copy.deepcopy(_models(str(bert))[name])
    init = config["init_args"]
    target = init["encoder"]["init_args"]
    target.pop("casing_dim", None)
    if casing_dim is not None:
        target["casing_dim"] = casing_dim
    model = build(config, copy.deepcopy(SAMPLE_DATA), tmp_path).model.eval()
    (encoder,) = [m for m in model.modules() if isinstance(m, TransformerEncoder)]
    return model, encoder


def _loss(model, tokens: list[str]) -> torch.Tensor:
    collate = model.collate
    with torch.no_grad():
        return model.compute_loss(collate([(0, Sentence(tokens))]))


@pytest.mark.parametrize("name", NAMES)
def test_uncased_encoder_gets_casing_by_default(name, tiny_bert_dir, tmp_path):  # noqa: F811
    model, encoder = _build(name, tiny_bert_dir, tmp_path)
    assert encoder.uncased and encoder.casing_dim == 8
    if name not in WITH_WORDS:  # (their GloVe/char inputs see case anyway)
        torch.manual_seed(0)
        upper, lower = _loss(model, ["Peter", "is", "here"]), _loss(model, ["peter", "is", "here"])
        assert not torch.equal(upper, lower)


@pytest.mark.parametrize("name", ["dspert", "biaffine_ner"])
def test_without_casing_an_uncased_span_model_is_blind_to_case(name, tiny_bert_dir, tmp_path):  # noqa: F811
    model, encoder = _build(name, tiny_bert_dir, tmp_path, casing_dim=0)
    assert encoder.casing is None
    torch.testing.assert_close(_loss(model, ["Peter", "is", "here"]), _loss(model, ["peter", "is", "here"]))


def test_weights_saved_without_casing_give_one_line(tiny_bert_dir, tmp_path):  # noqa: F811
    """Weights from before the default casing embedding: a clear error naming the fix, not a key dump."""
    from ner_zoo.errors import CheckpointError

    old, _ = _build("dspert", tiny_bert_dir, tmp_path / "old", casing_dim=0)
    new, _ = _build("dspert", tiny_bert_dir, tmp_path / "new")
    with pytest.raises(CheckpointError, match="load them with casing_dim: 0"):
        new.load_state_dict(old.state_dict())
