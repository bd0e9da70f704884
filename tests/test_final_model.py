"""``data.init_args.train_on: train+dev``: trains on both splits, runs no validation and selects no model on dev,
and says so in the run record."""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr
from pathlib import Path

import yaml

from ner_zoo.cli.main import main
from ner_zoo.data import SampleCorpus

ARGS = ["fit", "--config", "quickstart", "--trainer.max_epochs", "2", "--trainer.limit_train_batches", "2",
        "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
        "--data.init_args.train_on", "train+dev"]


def test_train_on_train_and_dev_trains_on_both():
    dm = SampleCorpus(train_on="train+dev")
    train, dev = SampleCorpus().sentences("train"), SampleCorpus().sentences("dev")
    assert len(dm.train_sentences()) == len(train) + len(dev)
    dev_only = {t for s in dev for t in s.tokens} - {t for s in train for t in s.tokens}
    assert dev_only and dev_only <= set(dm.vocabularies.words.itos)
    assert "train+dev" in dm.notes["train_on"]


def test_fit_final_model_no_validation_no_selection(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])
    assert main(ARGS) in (0, None)
    record = json.loads(next(tmp_path.rglob("results.json")).read_text())
    assert record["status"] == "completed" and record["epochs"] == 2
    assert "no model selection on dev" in record["data_notes"]["train_on"]
    assert record["best_val_f1"] is None
    assert Path(record["best_checkpoint"]).name == "final.ckpt"  # the last epoch's, not a "best" on dev
    metrics = (next(tmp_path.rglob("metrics.csv"))).read_text()
    assert "val/f1" not in metrics and "test/f1" in metrics  # no validation ever ran; test did (test_after_fit)
    assert "on sentences it has never seen:\n  " in capsys.readouterr().out  # the quickstart's TagExamples


def test_early_stopping_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])
    (tmp_path / "es.yaml").write_text(yaml.safe_dump({"trainer": {"callbacks": [
        {"class_path": "lightning.pytorch.callbacks.EarlyStopping", "init_args": {"monitor": "val/f1"}}]}}))
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(ARGS + ["--config", "es.yaml"]) == 2
    assert "no dev split to stop early on" in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
