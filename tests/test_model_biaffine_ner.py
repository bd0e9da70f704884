"""BiaffineNER (Yu et al. 2020 + boundary smoothing) through the generic battery with a tiny random BERT
(nested fixture; flat sample corpus with cross-entropy and no BiLSTM), plus the span-score layout."""

from __future__ import annotations


import pytest
import torch

from battery import NESTED_DATA, ModelBattery, build
from ner_zoo.testing.tiny import tiny_model
from ner_zoo.data.schema import Sentence
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)



def tiny(model_dir, **extra) -> dict:
    return tiny_model("biaffine_ner", model_dir, **extra)


class TestBiaffineNER(ModelBattery):
    data = NESTED_DATA

    # open: with the tiny random BERT the loss falls to 2-20 % in 40 Adam steps, but F1 = 1 on the 4 sentences
    # is not reached in 300 steps at lr 0.03, 0.01 or 0.001 (at 0.003 the nested biaffine model got there at
    # step 250, too close to any budget to assert), so only the loss is asserted
    overfit_f1 = False
    overfit_max_steps = 40

    @pytest.fixture(autouse=True)
    def _model(self, tiny_bert_dir):  # noqa: F811
        self.model = tiny(tiny_bert_dir)


class TestBiaffineNERFlat(ModelBattery):
    """Flat sample corpus: flat decoding, plain cross-entropy, no BiLSTM, every span width."""

    # F1 = 1 at step 90 at lr 0.003 (AVX2 kernels; it passes under the SSE4.1 set too), at 230 at 0.01, and not in
    # 300 steps at 0.03
    overfit_lr = 0.003

    @pytest.fixture(autouse=True)
    def _model(self, tiny_bert_dir):  # noqa: F811
        self.model = tiny(tiny_bert_dir, lstm_hidden=0, max_width=None,
                          loss={"class_path": "ner_zoo.modules.span_losses.CrossEntropySpanLoss"})


    def test_flat_predictions_do_not_overlap(self, tmp_path):
        cli = self.cli_for(tmp_path)
        model = cli.model.eval()
        assert not model.nested
        for pred in model.decode(self.batch_for(cli)):
            for a, b in zip(pred, pred[1:]):
                assert a.end <= b.start


def test_span_logits_are_biaffine_scores(tiny_bert_dir, tmp_path):  # noqa: F811
    model = build(tiny(tiny_bert_dir, max_width=2), NESTED_DATA, tmp_path).model.eval()
    batch = model.collate(list(enumerate([Sentence(["cells", "express", "high"]), Sentence(["of"])])))
    with torch.no_grad():
        grid, logits = model.span_logits(batch)
        enc = model.encoder.encode_sentences(batch.sentences, hidden_states=False)
        h = model.lstm(enc.word_states, enc.word_mask)
        full = model.biaffine(model.start_ffn(h), model.end_ffn(h))
    assert grid.spans[0].tolist() == [[0, 1], [1, 2], [2, 3], [0, 2], [1, 3]]
    assert grid.mask.tolist() == [[True] * 5, [True, False, False, False, False]]
    torch.testing.assert_close(logits[0, 3], full[0, 0, 1])  # span (0, 2): start 0, last word 1
    torch.testing.assert_close(logits[1, 0], full[1, 0, 0])
