"""Raw text -> tokens with character offsets and sentences (``ner_zoo.api.text``): messy input keeps every offset."""

from __future__ import annotations

import pytest

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
