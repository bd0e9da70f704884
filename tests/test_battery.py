"""The model battery itself: its overfit check fails on a model that cannot learn (a check that cannot fail
asserts nothing), and passes on the same model unbroken."""

from __future__ import annotations

import pytest
import torch

from battery import ModelBattery, overfit
from ner_zoo.testing.tiny import tiny_model


class BiLSTMCRFBattery(ModelBattery):
    model = tiny_model("bilstm_crf")


def _blind(module, inputs, output):
    """The BiLSTM's output replaced by zeros: the emissions see no token, only the CRF's transitions and the
    projection's bias can learn, which cannot tag four different sentences right."""
    out, *rest = output if isinstance(output, tuple) else (output,)
    return (torch.zeros_like(out), *rest) if isinstance(output, tuple) else torch.zeros_like(out)


def test_overfit_reaches_f1_1_on_a_model_that_learns(tmp_path):
    model, batch = BiLSTMCRFBattery()._overfit_setup(tmp_path)
    result = overfit(model, batch, lr=0.03, max_steps=300)
    assert result.fitted_at is not None and result.loss < 0.5 * result.before


def test_overfit_check_fails_on_a_model_that_cannot_learn(tmp_path, monkeypatch):
    battery = BiLSTMCRFBattery()
    setup = battery._overfit_setup

    def broken_setup(path):
        model, batch = setup(path)
        model.lstm.register_forward_hook(_blind)
        return model, batch

    monkeypatch.setattr(battery, "_overfit_setup", broken_setup)
    with pytest.raises(AssertionError, match="F1 < 1 on the 4 training sentences after 300 steps"):
        battery.test_overfits_four_sentences(tmp_path)


def test_overfit_check_fails_when_nothing_is_trained(tmp_path, monkeypatch):
    """lr 0: the loss does not move, which the battery reports as not learning."""
    battery = BiLSTMCRFBattery()
    battery.overfit_lr = 0.0
    battery.overfit_max_steps = 20
    with pytest.raises(AssertionError, match="not learning"):
        battery.test_overfits_four_sentences(tmp_path)
