"""Span F1, token accuracy and conlleval reports, checked against seqeval and the PyPI conlleval port."""

from __future__ import annotations

import copy
import math
import pickle
import random
import subprocess
import sys
import warnings
from pathlib import Path

import conlleval
import pytest
import torch
from conftest import corpus_dir
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

from ner_zoo.data.schema import Span
from ner_zoo.data.tagging import spans_to_tags, tags_to_spans
from ner_zoo.errors import DataFormatError, LabelError
from ner_zoo.metrics import (
    SpanF1,
    SpanF1ByLength,
    TokenAccuracy,
    conlleval_report,
    conlleval_scores,
    length_prf,
    score_spans_report,
    span_counts,
    span_prf,
    token_accuracy,
)

TOL = 1e-9


# ---------------------------------------------------------------- reference scorers

def _port(gold_seqs, pred_seqs) -> dict:
    """Run the PyPI conlleval port on ``token gold pred`` lines, sentences separated by blank lines."""
    lines = []
    for g, p in zip(gold_seqs, pred_seqs):
        lines += [f"w {a} {b}" for a, b in zip(g, p)] + [""]
    return conlleval.evaluate(lines)


def _port_text(gold_seqs, pred_seqs) -> str:
    return conlleval.report(_port(gold_seqs, pred_seqs))


def _types(gold_seqs, pred_seqs) -> list[str]:
    return sorted({t.split("-", 1)[1] for seqs in (gold_seqs, pred_seqs) for s in seqs for t in s if t != "O"})


def _assert_all_agree(gold_seqs, pred_seqs) -> dict:
    """ours (functional + class) == seqeval default mode == conlleval port, micro, macro and per type."""
    ours = conlleval_scores(gold_seqs, pred_seqs)
    types = _types(gold_seqs, pred_seqs)

    # seqeval, default (conlleval-like) mode
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert abs(ours["precision"] - precision_score(gold_seqs, pred_seqs, zero_division=0)) < TOL
        assert abs(ours["recall"] - recall_score(gold_seqs, pred_seqs, zero_division=0)) < TOL
        assert abs(ours["f1"] - f1_score(gold_seqs, pred_seqs, zero_division=0)) < TOL
        if types:
            rep = classification_report(gold_seqs, pred_seqs, output_dict=True, zero_division=0)
            assert sorted(k for k in rep if not k.endswith(" avg")) == types
            assert abs(ours["macro_f1"] - float(rep["macro avg"]["f1-score"])) < TOL
            for t in types:
                assert abs(ours[f"precision/{t}"] - float(rep[t]["precision"])) < TOL
                assert abs(ours[f"recall/{t}"] - float(rep[t]["recall"])) < TOL
                assert abs(ours[f"f1/{t}"] - float(rep[t]["f1-score"])) < TOL
                assert ours[f"support/{t}"] == int(rep[t]["support"])

    # conlleval port (it reports precision 1 when nothing was predicted; conlleval.pl and we report 0)
    port = _port(gold_seqs, pred_seqs)

    def check(ev, stats, suffix):
        expected_p = ev["prec"] if stats["pred"] > 0 else 0.0
        assert abs(ours[f"precision{suffix}"] - expected_p) < TOL
        assert abs(ours[f"recall{suffix}"] - ev["rec"]) < TOL
        assert abs(ours[f"f1{suffix}"] - ev["f1"]) < TOL

    check(port["overall"]["chunks"]["evals"], port["overall"]["chunks"]["stats"], "")
    tags = port["overall"]["tags"]["stats"]
    assert abs(ours["accuracy"] - tags["correct"] / tags["gold"]) < TOL
    assert sorted(port["slots"]["chunks"]) == types
    for t, slot in port["slots"]["chunks"].items():
        check(slot["evals"], slot["stats"], f"/{t}")
        assert ours[f"support/{t}"] == slot["stats"]["gold"]

    # the torchmetrics class gives the same numbers as the pure function
    if types:
        metric = SpanF1(types)
        golds = [tags_to_spans(g) for g in gold_seqs]
        preds = [tags_to_spans(p) for p in pred_seqs]
        half = len(golds) // 2
        metric.update(preds[:half], golds[:half])
        metric.update(preds[half:], golds[half:])
        got = SpanF1.to_floats(metric.compute())
        assert got == {k: v for k, v in ours.items() if k != "accuracy"}
    return ours


# ---------------------------------------------------------------- random tag sequences

TAGS = ["O", "O", "O"] + [f"{p}-{t}" for t in ("PER", "LOC", "ORG") for p in "BIES"]


@st.composite
def tag_pairs(draw):
    lengths = draw(st.lists(st.integers(1, 9), min_size=1, max_size=5))
    tag = st.sampled_from(TAGS)
    gold = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    pred = [draw(st.lists(tag, min_size=n, max_size=n)) for n in lengths]
    return gold, pred


@settings(max_examples=150, deadline=None)
@given(tag_pairs())
def test_random_invalid_sequences_agree_with_seqeval_and_conlleval(pair):
    _assert_all_agree(*pair)


def _corrupt(gold_seqs, types, rng: random.Random):
    """Deterministic prediction errors: retype, shift boundaries, drop, add, IOB1-style starts, tag noise."""
    preds = []
    for tags in gold_seqs:
        n, out = len(tags), []
        for s, e, lab in tags_to_spans(tags):
            r = rng.random()
            if r < 0.08:
                continue  # dropped entity
            if r < 0.16:
                lab = rng.choice([t for t in types if t != lab])
            elif r < 0.24:
                s = max(0, s + rng.choice((-1, 1)))
            elif r < 0.32:
                e = min(n, e + rng.choice((-1, 1)))
            if s < e:
                out.append(Span(s, e, lab))
        if rng.random() < 0.1:
            s = rng.randrange(n)
            out.append(Span(s, min(n, s + rng.randint(1, 3)), rng.choice(types)))
        flat, last_end = [], 0
        for sp in sorted(out):  # keep the prediction flat
            if sp.start >= last_end:
                flat.append(sp)
                last_end = sp.end
        pred = spans_to_tags(flat, n, rng.choice(("iob1", "iob2", "bioes")))  # IOB1 gives I- starts
        for i in range(n):
            if rng.random() < 0.02:
                pred[i] = rng.choice(TAGS)  # invalid transitions (I- after O, type changes)
        preds.append(pred)
    return preds


@pytest.mark.parametrize("seed", range(3))
def test_seeded_corpus_agrees(seed):
    rng = random.Random(seed)
    types = ["LOC", "MISC", "ORG", "PER"]
    gold = []
    for _ in range(120):
        n = rng.randint(1, 25)
        spans, i = [], 0
        while i < n:
            if rng.random() < 0.3:
                j = min(n, i + rng.randint(1, 4))
                spans.append(Span(i, j, rng.choice(types)))
                i = j
            i += 1
        gold.append(spans_to_tags(spans, n, rng.choice(("iob1", "iob2", "bioes"))))
    _assert_all_agree(gold, _corrupt(gold, types, rng))


# ---------------------------------------------------------------- CoNLL-2003 dev with corrupted predictions

def _read_last_column(path: Path) -> list[list[str]]:
    """Minimal CoNLL reader: sentences of last-column tags, -DOCSTART- blocks skipped."""
    sents, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        cols = line.split()
        if not cols:
            if cur:
                sents.append(cur)
            cur = []
        elif cols[0] != "-DOCSTART-":
            cur.append(cols[-1])
    if cur:
        sents.append(cur)
    return sents


@pytest.mark.corpus
def test_conll2003_dev_corrupted_predictions_agree():
    path = corpus_dir("conll2003") / "eng.testa"
    gold = _read_last_column(path)
    assert sum(len(tags_to_spans(t)) for t in gold) == 5942  # published dev entity count
    try:
        from ner_zoo.data.readers import read_conll
    except ImportError:
        read_conll = None
    if read_conll is not None:  # the project reader sees the same gold spans
        assert [s.spans for s in read_conll(path)] == [tags_to_spans(t) for t in gold]
    pred = _corrupt(gold, ["LOC", "MISC", "ORG", "PER"], random.Random(2003))
    ours = _assert_all_agree(gold, pred)
    assert 0.5 < ours["f1"] < 0.95  # the corruption really made errors
    assert conlleval_report(gold, pred) == _port_text(gold, pred)
    assert _assert_all_agree(gold, gold)["f1"] == 1.0


# ---------------------------------------------------------------- conlleval text report

def test_conlleval_report_text_matches_port():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC"], ["I-ORG", "I-ORG", "O", "B-MISC"]]
    pred = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["I-ORG", "B-ORG", "O", "I-MISC"]]
    text = conlleval_report(gold, pred)
    assert text == _port_text(gold, pred)
    assert text.splitlines()[0] == "processed 9 tokens with 4 phrases; found: 5 phrases; correct: 2."
    assert text.splitlines()[2] == "              LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  1"


def test_conlleval_report_type_never_predicted_prints_zero_precision():
    gold, pred = [["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]]
    ours, port = conlleval_report(gold, pred).splitlines(), _port_text(gold, pred).splitlines()
    assert ours[:2] == port[:2] and ours[3] == port[3]
    assert ours[2] == "              LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  0"
    assert port[2] == ours[2].replace("  0.00%; recall", "100.00%; recall")  # the port's documented quirk


def test_conlleval_report_empty_and_errors():
    assert conlleval_report([], []) == "processed 0 tokens with 0 phrases; found: 0 phrases; correct: 0.\n"
    assert "accuracy: 100.00%; precision:   0.00%" in conlleval_report([["O"]], [["O"]])
    with pytest.raises(ValueError, match="sentence 0"):
        conlleval_report([["O", "O"]], [["O"]])
    with pytest.raises(DataFormatError, match="predicted sentence 0"):
        conlleval_report([["O"]], [["X-PER"]])


def test_score_spans_report_nested():
    gold = [[(0, 5, "ORG"), (0, 2, "PER")], [[1, 2, "LOC"]]]  # JSON lists are fine too
    pred = [[Span(0, 5, "ORG"), Span(0, 2, "LOC")], []]
    text = score_spans_report(gold, pred).splitlines()
    assert text[0] == "processed 2 sentences with 3 phrases; found: 2 phrases; correct: 1."
    assert text[1] == "precision:  50.00%; recall:  33.33%; FB1:  40.00"
    assert text[2] == "              LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  1"
    assert len(text) == 5


# ---------------------------------------------------------------- nested sets and edge cases

NESTED_GOLD = [[Span(0, 5, "ORG"), Span(0, 2, "PER"), Span(3, 5, "LOC")], [Span(0, 1, "PER")]]
NESTED_PRED = [
    [Span(0, 5, "ORG"), Span(0, 2, "LOC"), Span(3, 5, "LOC"), Span(3, 5, "LOC"), Span(1, 2, "PER")],
    [Span(0, 2, "PER")],
]


def test_nested_exact_match_with_set_semantics():
    s = span_prf(NESTED_PRED, NESTED_GOLD)
    # tp: ORG(0,5), LOC(3,5); fp: LOC(0,2), PER(1,2), PER(0,2)@1; fn: PER(0,2), PER(0,1)@1
    assert s["precision"] == pytest.approx(2 / 5) and s["recall"] == pytest.approx(2 / 4)
    assert s["f1"] == pytest.approx(2 * 0.4 * 0.5 / 0.9)
    assert (s["f1/ORG"], s["f1/PER"]) == (1.0, 0.0)
    assert s["precision/LOC"] == 0.5 and s["recall/LOC"] == 1.0 and s["support/PER"] == 2.0
    assert s["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    m = SpanF1(["LOC", "ORG", "PER"])
    m.update(NESTED_PRED, NESTED_GOLD)
    assert SpanF1.to_floats(m.compute()) == s
    assert m.tp.tolist() == [1, 1, 0] and m.fp.tolist() == [1, 0, 2] and m.fn.tolist() == [0, 0, 2]
    assert int(m.n_sentences) == 2


def test_spans_only_match_inside_their_sentence_and_offsets_may_be_tensors():
    s = span_prf([[], [Span(0, 1, "PER")]], [[Span(0, 1, "PER")], []])
    assert s["f1"] == 0.0
    assert span_prf([[(torch.tensor(0), torch.tensor(2), "PER")]], [[Span(0, 2, "PER")]])["f1"] == 1.0
    assert span_counts(NESTED_PRED, NESTED_GOLD).rows()[0] == ["LOC", 0.5, 1.0, pytest.approx(2 / 3), 1]


@pytest.mark.parametrize(
    "preds,golds",
    [([[]], [[Span(0, 1, "PER")]]), ([[Span(0, 1, "PER")]], [[]]), ([[]], [[]]), ([], [])],
    ids=["no-preds", "no-golds", "both-empty", "no-sentences"],
)
def test_edge_cases_give_zero_not_nan(preds, golds):
    m = SpanF1(["PER"])
    m.update(preds, golds)
    out = m.compute()
    assert all(math.isfinite(float(v)) for v in out.values())
    assert float(out["precision"]) == float(out["recall"]) == float(out["f1"]) == float(out["macro_f1"]) == 0.0
    assert SpanF1.to_floats(out) == span_prf(preds, golds, labels=["PER"])


def test_unknown_predicted_label_is_a_false_positive():
    m = SpanF1(["PER"])
    m.update([[Span(0, 1, "FOO"), Span(1, 2, "PER")]], [[Span(1, 2, "PER")]])
    out = SpanF1.to_floats(m.compute())
    assert int(m.unknown_fp) == 1
    assert out["precision"] == 0.5 and out["recall"] == 1.0 and out["f1/PER"] == 1.0 and out["macro_f1"] == 1.0
    assert not any("FOO" in k for k in out)


def test_bad_input_raises():
    with pytest.raises(LabelError, match="'FOO'"):
        SpanF1(["PER"]).update([[]], [[Span(0, 1, "FOO")]])
    with pytest.raises(LabelError):
        span_prf([[Span(0, 1, "FOO")]], [[Span(0, 1, "FOO")]], labels=["PER"])
    with pytest.raises(ValueError, match="2 predicted sentences but 1 gold"):
        SpanF1(["PER"]).update([[], []], [[]])
    with pytest.raises(ValueError):
        SpanF1([])
    with pytest.raises(ValueError, match="duplicate"):
        SpanF1(["PER", "PER"])


def test_rows_forward_pickle_and_deepcopy():
    m = SpanF1(["LOC", "ORG", "PER"])
    batch = m(NESTED_PRED, NESTED_GOLD)  # forward: batch value, and accumulates
    assert float(batch["f1"]) == pytest.approx(span_prf(NESTED_PRED, NESTED_GOLD)["f1"])
    rows = m.per_type_rows(micro=True)
    assert [r[0] for r in rows] == ["LOC", "ORG", "PER", "micro"]
    assert rows[0] == ["LOC", 0.5, 1.0, pytest.approx(2 / 3), 1] and rows[-1][4] == 4
    assert SpanF1.to_floats(m.compute(), prefix="val/")["val/f1/ORG"] == 1.0
    for clone in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert SpanF1.to_floats(clone.compute()) == SpanF1.to_floats(m.compute())
    m.reset()
    assert m.tp.sum() == 0 and m.unknown_fp == 0


def test_random_nested_class_equals_function():
    rng = random.Random(7)
    labels = ["A", "B", "C"]

    def spans():
        starts = [rng.randrange(20) for _ in range(rng.randint(0, 6))]
        return [Span(s, s + rng.randint(1, 12), rng.choice(labels)) for s in starts]

    golds = [spans() for _ in range(200)]
    preds = [rng.sample(g, k=len(g) // 2) + spans() for g in golds]
    m, ml = SpanF1(labels), SpanF1ByLength()
    for i in range(0, 200, 30):
        m.update(preds[i : i + 30], golds[i : i + 30])
        ml.update(preds[i : i + 30], golds[i : i + 30])
    assert SpanF1.to_floats(m.compute()) == span_prf(preds, golds, labels)
    assert SpanF1.to_floats(ml.compute()) == length_prf(preds, golds)
    assert ml.tp.sum() == m.tp.sum() and ml.fp.sum() == m.fp.sum() and ml.fn.sum() == m.fn.sum()


def test_length_buckets():
    m = SpanF1ByLength()
    assert m.names == ["len=1", "len=2", "len=3", "len=4-5", "len=6-9", "len>=10"]
    gold = [[Span(0, 1, "A"), Span(0, 5, "A"), Span(0, 12, "B")]]
    pred = [[Span(0, 1, "A"), Span(0, 5, "B"), Span(0, 12, "B"), Span(2, 4, "A")]]
    m.update(pred, gold)
    out = SpanF1.to_floats(m.compute())
    assert out["f1/len=1"] == 1.0 and out["f1/len>=10"] == 1.0 and out["f1/len=4-5"] == 0.0
    assert out["support/len=4-5"] == 1.0 and out["precision/len=2"] == 0.0 and out["support/len=2"] == 0.0
    assert SpanF1ByLength(bounds=(1, 3)).names == ["len=1-2", "len>=3"]
    with pytest.raises(ValueError):
        SpanF1ByLength(bounds=(2, 3))
    with pytest.raises(ValueError, match="covers no tokens"):
        m.update([[Span(3, 3, "A")]], [[]])


# ---------------------------------------------------------------- token accuracy

def test_token_accuracy_strings_and_tensors():
    m = TokenAccuracy()
    m.update([["DT", "NN"], ["VB"]], [["DT", "VB"], ["VB"]])
    assert float(m.compute()) == pytest.approx(2 / 3)
    assert token_accuracy([["DT", "NN"], ["VB"]], [["DT", "VB"], ["VB"]]) == pytest.approx(2 / 3)
    golds = torch.tensor([[1, 2, 0], [3, 0, 0]])
    preds = torch.tensor([[1, 0, 0], [3, 1, 2]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    t = TokenAccuracy()
    t.update(preds, golds, mask)
    assert float(t.compute()) == pytest.approx(2 / 3)
    scores = torch.nn.functional.one_hot(preds, 4).float()  # [B, T, C] is arg-maxed
    t2 = TokenAccuracy(ignore_index=0)
    t2.update(scores, golds)
    assert float(t2.compute()) == pytest.approx(2 / 3)
    empty = TokenAccuracy()
    empty.update([], [])
    assert float(empty.compute()) == 0.0
    with pytest.raises(ValueError):
        TokenAccuracy().update([["A", "B"]], [["A"]])
    with pytest.raises(ValueError):
        TokenAccuracy().update(preds[:, :2], golds)


def test_import_is_light():
    """``import ner_zoo`` (and its errors and file helpers) loads no torch; that metrics import no Lightning is
    checked by ``test_import_contract.py``."""
    code = ("import sys; import ner_zoo, ner_zoo.errors, ner_zoo.io;"
            "assert not [k for k in sys.modules if k.split('.')[0] in ('torch', 'lightning')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
