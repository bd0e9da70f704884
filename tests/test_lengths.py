"""Long training sentences: ``max_train_length`` splits or skips them outside spans and is recorded
(ner_zoo/data/lengths.py)."""

from __future__ import annotations

import pytest
from cli_cases import config, long_sentence, ner_zoo, results


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
