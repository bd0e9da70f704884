"""``ner-zoo fit`` as a run: interrupts and signals, OS errors, checkpointing switched off, a bare-bones config, a
diverging loss."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import torch
from cli_cases import TRAIN, T, config, ner_zoo, no_tmp, one_error_line, results, write


@pytest.mark.parametrize("signum, code", [(15, 143), (2, 130)])
def test_interrupt_exits_nonzero_with_a_record_and_a_resumable_checkpoint(tmp_path, capsys, signum, code):
    import signal


    cfg = config(tmp_path, train=TRAIN * 4, epochs=4)  # 4 steps per epoch
    callback = json.dumps({"class_path": "cli_cases.SignalAt", "init_args": {"step": 6, "signum": signum}})
    sigint = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job inherits SIGINT ignored
    started = time.perf_counter()
    try:
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.callbacks+", callback)
    finally:
        signal.signal(signal.SIGINT, sigint)  # Lightning ignores further Ctrl-C after one
    assert rc == code, err
    record = results(tmp_path)
    assert record["status"] == "interrupted" and record["error"].startswith(("SIGTERMException", "KeyboardInterrupt"))
    last = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True, map_location="cpu")
    assert last["global_step"] == 6  # the interrupt, not the last improvement
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--ckpt_path", "last")
    assert rc == 0, err
    resumed = json.loads(sorted((tmp_path / "runs").rglob("results.json"))[-1].read_text())
    last = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True, map_location="cpu")
    assert resumed["status"] == "completed" and (last["global_step"], last["epoch"]) == (16, 3)
    # the epoch cut by the interrupt is timed over both processes, from this process's clock (not from 0)
    assert len(resumed["epoch_seconds"]) == 4 and 0 < resumed["fit_seconds"] <= time.perf_counter() - started


def test_last_checkpoint_is_the_latest_epoch_not_the_last_improvement(tmp_path, capsys):

    cfg = config(tmp_path, epochs=3)  # learning rate 0: val/f1 never improves after epoch 0
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model.init_args.optimizer.init_args.lr", "0")
    assert rc == 0, err
    best = torch.load(tmp_path / "ckpt" / "best.ckpt", weights_only=True, map_location="cpu")
    last = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True, map_location="cpu")
    assert (best["epoch"], last["epoch"]) == (0, 2)


def test_fit_with_checkpointing_off_writes_no_checkpoint_and_tests_the_final_weights(tmp_path, capsys):
    """``--trainer.enable_checkpointing false`` was a Lightning traceback (a ModelCheckpoint beside it); now the run
    keeps no checkpoint, records none, and ``test_after_fit`` tests the weights the fit ended with."""
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.enable_checkpointing", "false",
                         "--test_after_fit", "true")
    assert rc == 0, err[-2000:]
    assert not list(tmp_path.rglob("*.ckpt"))
    record = results(tmp_path)
    assert record["status"] == "completed" and record["best_checkpoint"] is None and "f1" in record["test"]


def test_barebones_fit_runs_and_what_it_refuses_is_one_line(tmp_path, capsys):
    """``--trainer.barebones true`` was a Lightning traceback (the configs' logger, the CLI's checkpoints); now the
    settings it turns off yield to it, with a warning; what it refuses beside it is one line."""
    cfg = config(tmp_path)
    with pytest.warns(UserWarning, match=r"trainer.barebones: .*logger.* turned off"):
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.barebones", "true")
    assert rc == 0, err[-2000:]
    assert not list(tmp_path.rglob("*.ckpt"))
    with pytest.warns(UserWarning, match="barebones"):
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.barebones", "true",
                             "--trainer.fast_dev_run", "true")
    assert rc == 2 and err.strip().splitlines()[-1].startswith("ner-zoo: error: --trainer settings Lightning refuses: "
                                                               "`Trainer(barebones=True, "
                                                               "fast_dev_run=True)` was passed"), err[-2000:]


def test_diverging_loss_is_one_line(tmp_path, capsys):  # C-lrhuge
    cfg = config(tmp_path, train=TRAIN * 4, epochs=2)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model.init_args.optimizer.init_args.lr", "1e30",
                         "--trainer.gradient_clip_val", "0")
    assert rc == 2 and "loss became nan" in one_error_line(err)


# --- signals -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_outside_training_is_one_line(tmp_path, capsys, monkeypatch, signum, code):  # X-onto-sigint
    from ner_zoo.data import stats

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)
        raise AssertionError("the signal did not interrupt")

    monkeypatch.setattr(stats, "corpus_stats", interrupted)
    f = write(tmp_path / "lf.conll", T)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job inherits it ignored
    try:
        rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert rc == code and err.strip().startswith("ner-zoo: interrupted") and "Traceback" not in err


def test_fit_os_error_names_the_checkpoint(tmp_path, capsys):  # F-efbig
    import resource

    cfg = config(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))  # the checkpoint is larger; logs and records are not
    try:
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    line = one_error_line(err)
    assert rc == 2 and f"{tmp_path / 'ckpt'}" in line and "File too large" in line
    assert not list((tmp_path / "ckpt").glob("*.ckpt")) and no_tmp(tmp_path)
