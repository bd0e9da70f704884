"""Robustness as a new user meets it (issue 18): every case drives the ``ner-zoo`` CLI in-process, the way a user
runs it, and checks the exit code, the one-line message and that nothing is lost or silently wrong.
The probe list this answers is ``tools/robustness_probes.py`` (verdicts in docs/reliability.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from ner_zoo.cli.main import main
from test_cli import MODEL

TRAIN = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\nsaid O\n\n"


def ner_zoo(capsys, *args: str) -> tuple[int, str, str]:
    """``ner-zoo ARGS`` in this process: (exit code, stdout, stderr)."""
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        rc = main([str(a) for a in args]) or 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    finally:
        sys.argv = argv
    out = capsys.readouterr()
    return rc, out.out, out.err


def config(tmp_path: Path, train: str = TRAIN, epochs: int = 1, **data) -> Path:
    (tmp_path / "train.conll").write_text(train)
    (tmp_path / "dev.conll").write_text(TRAIN)
    cfg = {"model": MODEL,
           "data": {"class_path": "ner_zoo.data.ColumnDataModule",
                    "init_args": {"data_dir": str(tmp_path), "train_file": "train.conll", "dev_file": "dev.conll",
                                  "test_file": "dev.conll", "batch_size": 2, **data}},
           "trainer": {"max_epochs": epochs, "accelerator": "cpu", "enable_progress_bar": False,
                       "enable_model_summary": False, "num_sanity_val_steps": 0, "log_every_n_steps": 1,
                       "default_root_dir": str(tmp_path / "runs"),
                       "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger",
                                  "init_args": {"save_dir": str(tmp_path / "runs"), "name": "csv"}}},
           "checkpoint": {"dirpath": str(tmp_path / "ckpt"), "filename": "best"}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def results(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "runs").rglob("results.json")
    return json.loads(path.read_text())


# --- 11: very long training sentences ----------------------------------------------------------------------------
def long_sentence(n: int) -> str:
    rows = [f"w{i} {'B-PER' if i % 10 == 3 else 'I-PER' if i % 10 == 4 else 'O'}" for i in range(n)]
    return TRAIN + "\n".join(rows) + "\n\n"


def test_max_train_length_splits_outside_spans_and_is_recorded(tmp_path, capsys):
    cfg = config(tmp_path, train=long_sentence(40))
    with pytest.warns(UserWarning, match=r"train\.conll: 1 training sentence\(s\) longer than max_train_length=9 "
                                         r"\(longest 40\) split into 5 pieces"):
        rc, _, _ = ner_zoo(capsys, "fit", "--config", cfg, "--data.init_args.max_train_length", "9")
    assert rc == 0
    notes = results(tmp_path)["data_notes"]
    assert notes["sentences_over_limit"] == 1 and notes["train_sentences_after"] == 2 + 5


def test_max_train_length_skip_and_split_keep_spans_whole():
    from ner_zoo.data.lengths import limit_train_lengths, split_sentence
    from ner_zoo.data.schema import Sentence, Span

    sent = Sentence([f"w{i}" for i in range(10)], [Span(2, 6, "ORG"), Span(7, 8, "PER")], {"pos": list("abcdefghij")})
    pieces = split_sentence(sent, 4)
    assert [p.tokens for p in pieces] == [sent.tokens[:2], sent.tokens[2:6], sent.tokens[6:10]]
    assert [p.spans for p in pieces] == [[], [Span(0, 4, "ORG")], [Span(1, 2, "PER")]]
    assert pieces[2].columns["pos"] == list("ghij")
    kept, notes = limit_train_lengths([sent, Sentence(["a"])], 4, "skip")
    assert [len(s) for s in kept] == [1] and notes["train_sentences_after"] == 1


def test_long_training_sentence_without_a_limit_warns(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("ner_zoo.data.lengths.WARN_TRAIN_LENGTH", 30)
    cfg = config(tmp_path, train=long_sentence(40))
    with pytest.warns(UserWarning, match=r"longer than 30 tokens \(longest 40\).*max_train_length"):
        rc, _, _ = ner_zoo(capsys, "fit", "--config", cfg)
    assert rc == 0 and results(tmp_path)["data_notes"] == {}
