"""Lazy row updates of a word embedding under SGD with momentum (:mod:`ner_zoo.training.lazy_rows`) take the
same steps as the dense update, up to rounding: in isolation, over fits with validation, a learning-rate
schedule, clipping and singleton replacement, and across a checkpoint-resume."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch import nn

import ner_zoo.training.base as base
from battery import SAMPLE_DATA, build
from ner_zoo.training.lazy_rows import LazyRows, lazy_rows_apply

SGD_MODEL = {"class_path": "ner_zoo.models.BiLSTMCRF",
             "init_args": {"words": {"dim": 8, "singleton_unk": 0.5}, "lstm_hidden": 8,
                           "char_encoder": {"class_path": "ner_zoo.modules.CharBiLSTM",
                                            "init_args": {"char_dim": 4, "hidden": 4}},
                           "optimizer": {"class_path": "torch.optim.SGD",
                                         "init_args": {"lr": 0.5, "momentum": 0.9}},
                           "lr_scheduler": {"class_path": "ner_zoo.training.InverseTimeDecay",
                                            "init_args": {"decay": 0.5}}}}
TOL = {"rtol": 1e-5, "atol": 1e-5}  # float32 rounding of summation order over 12 momentum steps (up to ~3e-6)
TOL64 = {"rtol": 1e-12, "atol": 1e-12}


def test_lazy_rows_equal_dense_sgd_steps():
    torch.manual_seed(0)  # float64: the closed form's rounding (one product instead of k) stays far below TOL
    dense, lazy = nn.Embedding(50, 4, padding_idx=0).double(), nn.Embedding(50, 4, padding_idx=0).double()
    lazy.load_state_dict(dense.state_dict())
    opt_d = torch.optim.SGD(dense.parameters(), lr=0.3, momentum=0.9)
    opt_l = torch.optim.SGD(lazy.parameters(), lr=0.3, momentum=0.9)
    rows = LazyRows(lazy.weight, opt_l)
    for step in range(40):
        if step == 20:
            for o in (opt_d, opt_l):
                o.param_groups[0]["lr"] = 0.1  # a schedule: pending steps keep their old rate
        opt_d.zero_grad(), opt_l.zero_grad()
        if step % 7 != 3:  # some steps look nothing up: SGD leaves the weight alone then
            ids = torch.randint(0, 12 if step < 10 else 50, (3, 5))
            target = torch.randn(3, 5, 4, dtype=torch.float64)
            ((dense(ids) - target) ** 2).sum().backward()
            ((rows.lookup(ids, 0) - target) ** 2).sum().backward()
            if step % 5 == 1:  # a second lookup in the same step, overlapping the first
                again = ids[:2].flip(1)
                (dense(again) ** 3).sum().backward()
                (rows.lookup(again, 0) ** 3).sum().backward()
        opt_d.step(), opt_l.step()
        if step % 9 == 0:
            rows.flush()
            torch.testing.assert_close(lazy.weight, dense.weight, **TOL64)
    assert lazy.weight.grad is None  # the dense update never ran on it
    state = opt_l.state_dict()["state"][0]["momentum_buffer"]  # state_dict flushes first
    torch.testing.assert_close(lazy.weight, dense.weight, **TOL64)
    torch.testing.assert_close(state, opt_d.state[dense.weight]["momentum_buffer"], **TOL64)
    assert torch.equal(lazy.weight[0], dense.weight[0])  # the padding row never moves


def _fit(tmp: Path, lazy: bool, monkeypatch, epochs: int = 2, **trainer):
    monkeypatch.setattr(base, "lazy_rows_apply", lazy_rows_apply if lazy else lambda *a: False)
    cli = build(copy.deepcopy(SGD_MODEL), SAMPLE_DATA, tmp, trainer={"max_epochs": epochs, "gradient_clip_val": 0.5,
                                                                     "deterministic": True, **trainer})
    steps = []
    real = LazyRows.after_step
    monkeypatch.setattr(LazyRows, "after_step", lambda self: steps.append(1) or real(self))
    return cli, steps


def _assert_close(a, b) -> None:
    wa, wb = a.model.state_dict(), b.model.state_dict()
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], **TOL, msg=k)
    oa, ob = a.trainer.optimizers[0].state_dict()["state"], b.trainer.optimizers[0].state_dict()["state"]
    assert oa.keys() == ob.keys()
    for k in oa:
        torch.testing.assert_close(oa[k]["momentum_buffer"], ob[k]["momentum_buffer"], **TOL, msg=str(k))


def test_a_fit_with_lazy_rows_takes_the_dense_steps(tmp_path, monkeypatch):
    fits = []
    for lazy in (True, False):
        cli, steps = _fit(tmp_path / str(lazy), lazy, monkeypatch)
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
        assert len(steps) == (12 if lazy else 0)  # 48 sentences in batches of 8, two epochs
        assert cli.model.tokens.words.lazy is None  # training over: stopped, weights up to date
        fits.append(cli)
    _assert_close(*fits)
    f1 = [float(c.trainer.callback_metrics["val/f1"]) for c in fits]
    assert f1[0] == pytest.approx(f1[1], abs=1e-6)


def test_lazy_rows_resumed_mid_epoch_take_the_dense_steps(tmp_path, monkeypatch):
    dense, _ = _fit(tmp_path / "dense", False, monkeypatch)
    dense.trainer.fit(dense.model, datamodule=dense.datamodule)
    callbacks = [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                  "init_args": {"dirpath": str(tmp_path / "steps"), "every_n_train_steps": 8, "save_top_k": -1,
                                "filename": "step{step}"}}]
    first, steps = _fit(tmp_path / "killed", True, monkeypatch, max_steps=8, callbacks=callbacks)
    first.trainer.fit(first.model, datamodule=first.datamodule)
    assert len(steps) == 8
    (ckpt,) = (tmp_path / "steps").glob("*step=8.ckpt")
    second, steps = _fit(tmp_path / "resumed", True, monkeypatch)
    second.trainer.fit(second.model, datamodule=second.datamodule, ckpt_path=str(ckpt))
    assert len(steps) == 4 and second.trainer.global_step == 12
    _assert_close(dense, second)


def test_lazy_rows_stay_off_where_they_would_not_be_exact(tmp_path, monkeypatch):
    model = copy.deepcopy(SGD_MODEL)
    model["init_args"]["optimizer"]["init_args"]["nesterov"] = True
    cli = build(model, SAMPLE_DATA, tmp_path, trainer={"max_epochs": 1, "gradient_clip_val": 0.5})
    seen = []
    monkeypatch.setattr(LazyRows, "__init__", lambda *a: seen.append(1) or pytest.fail("lazy rows on"))
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    assert not seen


def test_lazy_rows_stay_off_under_ddp_even_with_one_process():
    """A DDP wrapper of one process (e.g. a one-task SLURM job) needs the table's own gradient: no lazy rows."""
    import lightning.pytorch as pl

    table = nn.Embedding(10, 4)
    optimizer = torch.optim.SGD(table.parameters(), lr=0.1, momentum=0.9)
    single = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False)
    ddp = pl.Trainer(accelerator="cpu", devices=1, strategy="ddp", logger=False, enable_checkpointing=False)
    module = pl.LightningModule()
    assert ddp.world_size == 1
    assert lazy_rows_apply(single, module, optimizer, table.weight, table)
    assert not lazy_rows_apply(ddp, module, optimizer, table.weight, table)


def test_a_fit_after_an_interrupted_one_keeps_the_pending_steps(tmp_path, monkeypatch):
    """A fit that raised mid-epoch leaves its rows pending; the next fit of the same model applies them first."""
    import lightning.pytorch as pl

    class Boom(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if batch_idx == 3:
                raise RuntimeError("boom")

    fits = []
    for lazy in (True, False):
        cli, _ = _fit(tmp_path / str(lazy), lazy, monkeypatch, epochs=1)
        cli.trainer.callbacks.append(Boom())
        with pytest.raises(RuntimeError, match="boom"):
            cli.trainer.fit(cli.model, datamodule=cli.datamodule)
        again, _ = _fit(tmp_path / f"again{lazy}", lazy, monkeypatch, epochs=1)
        again.trainer.fit(cli.model, datamodule=again.datamodule)  # the same model object, a new trainer
        fits.append(cli.model.state_dict())
    for k in fits[0]:
        torch.testing.assert_close(fits[0][k], fits[1][k], **TOL, msg=k)
