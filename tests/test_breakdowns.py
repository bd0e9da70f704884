"""F1 breakdowns (entity length, nested vs flat, training frequency of the least frequent token): one bucketing
mechanism, hand-computed counts, and ``ner-zoo score --by`` in-process."""

from __future__ import annotations

import json

import pytest

from ner_zoo.cli.main import main
from ner_zoo.metrics import SpanF1, SpanF1ByNesting
from ner_zoo.metrics.functional import FrequencyBucketer, NestingBucketer, breakdown_counts

# sentence 1: ORG "New York Times" around LOC "New York"; sentence 2: two one-token persons
TOKENS = [["New", "York", "Times", "reported", "Bob"], ["Bob", "met", "Ann"]]
GOLD = [[(0, 3, "ORG"), (0, 2, "LOC"), (4, 5, "PER")], [(0, 1, "PER"), (2, 3, "PER")]]
PRED = [[(0, 3, "ORG"), (1, 2, "LOC"), (4, 5, "PER")], [(0, 1, "PER"), (2, 3, "LOC")]]
TRAIN_COUNTS = {"New": 1, "York": 3, "Bob": 2, "Ann": 7}  # "Times", "met", "reported": never


def _counts(c):
    return {n: (t, f, m) for n, t, f, m in zip(c.names, c.tp, c.fp, c.fn)}


def test_nesting_buckets_by_hand():
    c = breakdown_counts(PRED, GOLD, NestingBucketer(), TOKENS)
    # nested: gold (0,3) and (0,2) (one inside the other), the false positive (1,2) inside gold (0,3);
    # flat: the rest, including (2,3,LOC), whose boundaries equal a gold span's (not nesting)
    assert _counts(c) == {"flat": (2, 1, 1), "nested": (1, 1, 1)}
    s = c.scores()
    assert s["f1/nested"] == pytest.approx(0.5) and s["f1/flat"] == pytest.approx(2 / 3)


def test_nesting_metric_is_the_twin_of_the_function():
    m = SpanF1ByNesting()
    m.update(PRED[:1], GOLD[:1])
    m.update(PRED[1:], GOLD[1:])  # the gold spans of each sentence decide, whatever the batching
    assert SpanF1.to_floats(m.compute()) == breakdown_counts(PRED, GOLD, NestingBucketer()).scores()


def test_nesting_rule_edges():
    bucket = NestingBucketer().for_sentence(None, {(0, 3, "A"), (2, 5, "B"), (6, 7, "C"), (6, 7, "D")})
    assert bucket((0, 3, "A"), True) == 0  # crosses (2,5): neither inside nor around
    assert bucket((6, 7, "C"), True) == 0  # same boundaries, other label: not nesting
    assert bucket((2, 4, "X"), False) == 1  # a prediction inside a gold span
    assert bucket((0, 6, "X"), False) == 1  # a prediction around gold spans


def test_frequency_uses_the_least_frequent_token():
    c = breakdown_counts(PRED, GOLD, FrequencyBucketer(TRAIN_COUNTS), TOKENS)
    assert c.names == ["freq=0", "freq=1", "freq=2-5", "freq>5"]
    # (0,3) min(1, 3, 0) = 0; (0,2) min(1, 3) = 1; (1,2) York 3, (4,5) and (0,1) Bob 2; (2,3) Ann 7
    assert _counts(c) == {"freq=0": (1, 0, 0), "freq=1": (0, 0, 1), "freq=2-5": (2, 1, 0), "freq>5": (0, 1, 1)}
    assert c.scores()["f1/freq=2-5"] == pytest.approx(0.8)
    lower = FrequencyBucketer({"york": 3}, normalize=str.lower)
    assert lower.frequency(["York"]) == 3 and FrequencyBucketer({"york": 3}).frequency(["York"]) == 0
    with pytest.raises(ValueError, match="tokens"):
        breakdown_counts(PRED, GOLD, FrequencyBucketer(TRAIN_COUNTS))


def _write_jsonl(path):
    with path.open("w") as f:
        for tokens, gold, pred in zip(TOKENS, GOLD, PRED):
            f.write(json.dumps({"tokens": tokens, "gold_spans": [list(s) for s in gold],
                                "pred_spans": [list(s) for s in pred]}) + "\n")


def test_score_by_through_the_cli(tmp_path, capsys):
    pred = tmp_path / "test.pred.jsonl"
    _write_jsonl(pred)
    train = tmp_path / "train.conll"
    words = [w for w, n in TRAIN_COUNTS.items() for _ in range(n)]
    train.write_text("\n".join(f"{w} O" for w in words) + "\n")
    out = tmp_path / "report"
    assert main(["score", str(pred), "--by", "train_frequency", "--train", str(train), "--output", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| freq=2-5 | 66.67 | 100.00 | 80.00 | 2 | 3 |" in table
    assert (out / "breakdown_train_frequency.md").read_text() == table
    data = json.loads((out / "breakdown_train_frequency.json").read_text())
    assert data["buckets"]["freq=1"] == {"tp": 0, "fp": 0, "fn": 1, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert main(["score", str(pred), "--by", "nesting"]) == 0
    assert "| nested | 50.00 | 50.00 | 50.00 | 2 | 2 |" in capsys.readouterr().out
    # nothing is overwritten: a second run into the same folder is refused with one line
    assert main(["score", str(pred), "--by", "train_frequency", "--train", str(train), "--output", str(out)]) == 2
    assert "breakdown_train_frequency.md: exists; pass --overwrite" in capsys.readouterr().err


def test_score_by_length_of_a_conll_file(tmp_path, capsys):
    f = tmp_path / "p.conll"
    f.write_text("Ann B-PER B-PER\nLee I-PER I-PER\nin O O\nRome B-LOC O\n")
    assert main(["score", str(f), "--by", "length"]) == 0
    out = capsys.readouterr().out
    assert "| len=2 | 100.00 | 100.00 | 100.00 | 1 | 1 |" in out and "| len=1 | 0.00 | 0.00 | 0.00 | 1 | 0 |" in out


def test_score_by_train_frequency_needs_train(tmp_path, capsys):
    pred = tmp_path / "p.jsonl"
    _write_jsonl(pred)
    assert main(["score", str(pred), "--by", "train_frequency"]) == 2  # one ner-zoo: error: line
    assert "needs --train" in capsys.readouterr().err
