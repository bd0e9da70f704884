"""Learning-rate schedules: shapes, and the wall-clock-fitted variant of the linear schedule."""

import pickle

import pytest
import torch

from ner_zoo.training.schedulers import InverseTimeDecay, LinearWarmupDecay


def _optimizer(lr: float = 1.0) -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def _lrs(scheduler, steps: int) -> list[float]:
    out = []
    for _ in range(steps):
        out.append(scheduler.get_last_lr()[0])
        scheduler.optimizer.step()
        scheduler.step()
    return out


def test_inverse_time_decay():
    assert _lrs(InverseTimeDecay(_optimizer(), decay=0.05), 3) == pytest.approx([1.0, 1 / 1.05, 1 / 1.1])


def test_linear_warmup_then_decay_to_zero():
    s = LinearWarmupDecay(_optimizer(), warmup=0.2, total_steps=10)
    lrs = _lrs(s, 11)
    assert lrs[0] == pytest.approx(1 / 3) and lrs[1] == pytest.approx(2 / 3)
    assert max(lrs) == pytest.approx(1.0) and lrs[-1] == 0.0
    assert all(a >= b for a, b in zip(lrs[2:], lrs[3:]))


def test_fit_to_max_time_follows_the_clock_when_it_is_ahead():
    clock = {"fraction": 0.0}
    s = LinearWarmupDecay(_optimizer(), warmup=0.1, total_steps=1000, fit_to_max_time=True)
    s.set_time_fraction(lambda: clock["fraction"])
    clock["fraction"] = 0.55                       # step 1 of 1000, but 55% of the budget is spent
    s.step()
    assert s.get_last_lr()[0] == pytest.approx((1000 - 550) / 900)
    clock["fraction"] = 1.0
    s.step()
    assert s.get_last_lr()[0] == 0.0
    # the callable never reaches a checkpoint
    state = s.state_dict()
    assert "_time_fraction" not in state and pickle.loads(pickle.dumps(state))["total_steps"] == 1000


def test_time_fraction_ignored_unless_asked():
    s = LinearWarmupDecay(_optimizer(), warmup=0.0, total_steps=100)
    s.set_time_fraction(lambda: 1.0)
    s.step()
    assert s.get_last_lr()[0] == pytest.approx(0.99)
