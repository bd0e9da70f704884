"""Tag schemes: conlleval reading, strict reading, encoding, detection, CRF constraints, vocabularies."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.tagging import (TagScheme, allowed_transitions, convert_tags, detect_scheme, is_valid, spans_to_tags,
                                  split_tag, tag_names, tags_to_spans)
from ner_zoo.data.vocab import Vocab
from ner_zoo.errors import DataFormatError, LabelError


@pytest.mark.parametrize("tags, expected", [
    (["I-PER", "I-PER", "O"], [(0, 2, "PER")]),                       # IOB1: I- opens an entity
    (["I-PER", "B-PER", "O"], [(0, 1, "PER"), (1, 2, "PER")]),        # IOB1: B- splits same-type neighbours
    (["B-PER", "I-LOC"], [(0, 1, "PER"), (1, 2, "LOC")]),             # type change opens a new entity
    (["O", "I-ORG", "I-ORG"], [(1, 3, "ORG")]),                       # invalid IOB2 read as conlleval does
    (["B-X", "E-X", "S-Y", "I-Z", "E-Z"], [(0, 2, "X"), (2, 3, "Y"), (3, 5, "Z")]),
    (["B-X", "I-X", "O", "E-X"], [(0, 2, "X"), (3, 4, "X")]),
    (["U-A", "B-B", "L-B"], [(0, 1, "A"), (1, 3, "B")]),              # BILOU
])
def test_conlleval_reading(tags, expected):
    assert tags_to_spans(tags) == [Span(*e) for e in expected]


def test_strict_reading_drops_invalid_fragments():
    assert tags_to_spans(["O", "I-X", "I-X", "B-Y"], "iob2", strict=True) == [Span(3, 4, "Y")]
    assert tags_to_spans(["B-X", "I-X", "O", "E-X", "S-Y"], "bioes", strict=True) == [Span(4, 5, "Y")]
    assert tags_to_spans(["I-X", "I-X", "B-X"], "iob1", strict=True) == [Span(0, 2, "X"), Span(2, 3, "X")]


def test_strict_bioes_drops_an_unfinished_chunk_at_the_end():
    assert tags_to_spans(["S-X", "B-Y"], "bioes", strict=True) == [Span(0, 1, "X")]
    assert tags_to_spans(["B-Y", "I-Y"], "bioes", strict=True) == []


any_tags = st.lists(st.sampled_from(["O"] + [f"{p}-{t}" for p in "BIES" for t in "XY"]), max_size=12)


@settings(max_examples=500, deadline=None)
@given(any_tags)
def test_strict_bioes_reading_equals_seqeval_strict(tags):
    from seqeval.scheme import IOBES, Entities

    expected = [Span(e.start, e.end, e.tag) for e in Entities([tags], IOBES).entities[0]] if tags else []
    assert tags_to_spans(tags, "bioes", strict=True) == sorted(expected)


@pytest.mark.parametrize("bad", ["B-", "X-PER", "PER", "-PER"])
def test_bad_tags_raise(bad):
    with pytest.raises(DataFormatError, match="invalid tag"):
        split_tag(bad, "f.conll", 7)
    with pytest.raises(DataFormatError, match="f.conll:7"):
        split_tag(bad, "f.conll", 7)


def test_detect_scheme_majority():
    assert detect_scheme([["I-PER", "O", "I-LOC", "B-LOC"]]) is TagScheme.IOB1
    assert detect_scheme([["B-PER", "O", "B-LOC"], ["I-X"]]) is TagScheme.IOB2
    assert detect_scheme([["B-PER", "E-PER"]]) is TagScheme.BIOES
    assert detect_scheme([["O", "O"]]) is TagScheme.IOB2


spans_strategy = st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 4), st.sampled_from("ABC")), max_size=8)))


@settings(max_examples=200, deadline=None)
@given(spans_strategy, st.sampled_from(list(TagScheme)))
def test_round_trip_and_validity(case, scheme):
    n, raw = case
    spans, last = [], 0
    for start, width, label in sorted(raw):
        if start >= last and start + width <= n:
            spans.append(Span(start, start + width, label))
            last = start + width
    tags = spans_to_tags(spans, n, scheme)
    assert tags_to_spans(tags) == spans
    assert tags_to_spans(tags, scheme, strict=True) == spans
    assert is_valid(tags, scheme)
    assert convert_tags(tags, scheme) == tags


def test_overlapping_spans_cannot_be_tags():
    with pytest.raises(DataFormatError, match="overlaps"):
        spans_to_tags([Span(0, 2, "A"), Span(1, 3, "B")], 4)


def test_allowed_transitions_bioes():
    names = tag_names(["PER"], "bioes")
    start, trans, end = allowed_transitions(names, "bioes")
    idx = {t: i for i, t in enumerate(names)}
    assert names == ["O", "B-PER", "I-PER", "E-PER", "S-PER"]
    assert not start[idx["I-PER"]] and not end[idx["B-PER"]]
    assert trans[idx["B-PER"], idx["E-PER"]] and not trans[idx["O"], idx["I-PER"]]
    assert not trans[idx["B-PER"], idx["O"]]


def test_repair_is_valid_in_target_scheme():
    tags = ["O", "I-X", "E-Y", "I-X"]
    for scheme in TagScheme:
        assert is_valid(convert_tags(tags, scheme), scheme)


def test_vocab_options_and_serialisation():
    sents = [Sentence(["The", "EU", "in", "2024"]), Sentence(["the", "eu"])]
    v = Vocab.build_words(sents, lower=True, normalize_digits=True, min_freq=2, pretrained_words=["Paris"])
    assert v.itos[:2] == ["<pad>", "<unk>"] and "the" in v and "eu" in v and "paris" in v
    assert v.index("2025") == 1  # "0000" seen once < min_freq
    assert Vocab.from_state(v.state_dict()) == v
    labels = Vocab.labels(["O", "B-PER"])
    with pytest.raises(LabelError, match="B-LOC"):
        labels.index("B-LOC")
