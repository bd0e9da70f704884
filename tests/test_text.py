"""Raw text -> tokens with character offsets and sentences (``ner_zoo.api.text``): messy input keeps every offset."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ner_zoo.api.text import sentences, tokenize

MESSY = ('Dr. Anna Berg-Smith (of the U.S. Bank) said:  "It\'s great!"\tVisit https://ex.com/a?b=1, or mail '
         'a.b@x.org.\r\nI don\'t know...  The café in São Paulo costs 3.50 $ on Tuesday.\n\n\n'
         '  New para — “quoted” text?! Yes. 北京 is big 😀. Prices: 1,000 / 2.5%.\n')


def test_every_token_is_its_slice_of_the_input():
    toks = [t for s in sentences(MESSY) for t in s]
    assert all(MESSY[t.start:t.end] == t.text for t in toks)
    assert all(not any(c.isspace() for c in t.text) for t in toks)
    starts = [t.start for t in toks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    # no character lost: the tokens cover every non-space character
    assert "".join(t.text for t in toks) == "".join(MESSY.split())


@pytest.mark.parametrize("text, tokens", [
    ("Tuesday.", ["Tuesday", "."]),
    ("the U.S. and Dr. Who", ["the", "U.S.", "and", "Dr.", "Who"]),
    ("New-York's mayor", ["New-York", "'s", "mayor"]),
    ("I don't", ["I", "do", "n't"]),
    ("see https://a.org/x?y=1.", ["see", "https://a.org/x?y=1", "."]),
    ("mail a.b@c.org!", ["mail", "a.b@c.org", "!"]),
    ('"Hi," she said', ['"', "Hi", ",", '"', "she", "said"]),
    ("3.5 million (1,000)", ["3.5", "million", "(", "1,000", ")"]),
    ("O'Neil", ["O'Neil"]),
])
def test_punctuation_is_split_and_known_units_kept(text, tokens):
    assert [t.text for t in tokenize(text)] == tokens


def test_sentences_split_at_end_marks_and_paragraphs_only():
    got = [" ".join(t.text for t in s) for s in sentences(MESSY)]
    assert got[0].startswith("Dr. Anna") and got[0].endswith('great ! "')  # "Dr." and "U.S." end nothing
    assert got[1].startswith("Visit") and got[2] == "I do n't know ..."
    assert got[3].startswith("The café") and got[4].startswith("New para")  # blank lines: a paragraph break
    assert "Yes ." in got and got[-2] == "北京 is big 😀 ." and got[-1].startswith("Prices")
    assert [len(s) for s in sentences("one line\nwrapped here. Next")] == [5, 1]  # one newline is a space
    assert sentences("") == [] and sentences(" \n\n ") == []
    assert len(sentences("A. B. C.", split=False)) == 1


@pytest.mark.parametrize("text, tokens", [
    ("Angela \u200bMerkel met\u2060Macron\ufeff.", ["Angela", "Merkel", "met", "Macron", "."]),  # invisible separators
    ("Flags 🇩🇪🇫🇷 and 👍🏽 or 👨\u200d👩\u200d👧!", ["Flags", "🇩🇪", "🇫🇷", "and", "👍🏽", "or", "👨\u200d👩\u200d👧", "!"]),
    ("a 45-year-old and a 3-D film, 1990-1995", ["a", "45-year-old", "and", "a", "3-D", "film", ",", "1990", "-",
                                                 "1995"]),
    ("e\u0301cole (x\u0301)", ["e\u0301cole", "(", "x\u0301", ")"]),
])
def test_unicode_gaps_zero_width_emoji_sequences_hyphenated_numbers(text, tokens):
    from ner_zoo.api.text import tokenize

    got = tokenize(text)
    assert [t.text for t in got] == tokens
    assert all(text[t.start:t.end] == t.text for t in got)


_ALPHABET = list("aZé09 .,-'\"!?:/@\n\t") + ["\u0301", "\u200b", "\u200d", "\u2060", "\ufeff", "🇩", "🇪", "👍", "🏽",
                                             "👨", "\u00ad", "’", "ß", "中"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join))
def test_offsets_are_exact_and_tokens_cover_the_text_in_whole_graphemes(text):
    """Every token is its slice of the input; tokens are in order and never overlap; every character that is
    not whitespace or an invisible separator is in exactly one token; no token ends inside a grapheme cluster
    (``regex``'s ``\\X``, between separators: a combining mark after a space starts a token)."""
    import regex

    from ner_zoo.api.text import sentences, tokenize

    toks = tokenize(text)
    assert all(text[t.start:t.end] == t.text and t.text for t in toks)
    assert all(a.end <= b.start for a, b in zip(toks, toks[1:]))
    covered = {i for t in toks for i in range(t.start, t.end)}
    separators = {i for i, c in enumerate(text) if c.isspace() or c in "\u200b\u2060\ufeff"}
    assert covered == set(range(len(text))) - separators
    bounds = {m.start() + g.end() for m in regex.finditer(r"[^\s\u200b\u2060\ufeff]+", text)
              for g in regex.finditer(r"\X", m.group())} | {m.start() for m in regex.finditer(r"\S", text)}
    assert all(t.start in bounds and t.end in bounds for t in toks)
    assert [t for s in sentences(text) for t in s] == toks
