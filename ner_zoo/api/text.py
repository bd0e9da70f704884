"""Raw text -> sentences of tokens with character offsets into the input string.

Tokens come from the ``tokenizers`` pre-tokenizers (HF's Rust library, already a dependency through
``transformers``; offsets are counted in characters of the Python string): whitespace first, then one regular
expression that keeps URLs, e-mail addresses, abbreviations (``U.S.``, ``Dr.``), numbers (``3.5``, ``1,000``),
hyphenated and apostrophe words (``New-York``, ``O'Neil``) whole, splits a possessive ``'s`` / ``n't`` off
as CoNLL-2003 and OntoNotes do, and makes every other punctuation mark its own token. Sentences end at a
blank line (a paragraph break) or at ``.``/``!``/``?`` (closing quotes and brackets included) followed by a
token that starts with a capital, a digit or an opening quote; a single line break inside a paragraph is
treated as a space. Every token satisfies ``text[start:end] == token``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# ordered: the first alternative that matches at a position wins
_TOKEN = "|".join([
    r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>\"]+?(?=[.,;:!?)\]}'\"]*(?:\s|$))",  # URL, trailing punctuation left out
    r"www\.[^\s<>\"]+?(?=[.,;:!?)\]}'\"]*(?:\s|$))",
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # e-mail
    r"(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|Inc|Ltd|Co|Corp|Gen|Gov|Sen|Rep|vs|etc|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep"
    r"|Sept|Oct|Nov|Dec|No)\.(?=\s|$)",  # abbreviation with its period
    r"(?:\p{L}\.){2,}",  # U.S., e.g.
    r"\p{N}+(?:[.,:/]\p{N}+)*",  # 3.5, 1,000, 10:30, 1/2
    r"(?i:n['’]t)(?!\p{L})",  # n't
    r"['’][sSdDmM](?!\p{L})|['’](?:ll|re|ve|LL|RE|VE)(?!\p{L})",  # 's 'd 'm 'll 're 've
    r"[\p{L}\p{M}\p{N}_]+?(?=(?i:n['’]t)(?!\p{L}))",  # do|n't
    r"[\p{L}\p{M}\p{N}_]+(?:[-'’](?![sSdDmM](?!\p{L}))[\p{L}\p{M}\p{N}_]+)*",  # words, New-York, O'Neil
    r"\.\.\.|--",
    r"\S",  # any other character: its own token
])
_END = {".", "!", "?", "...", "?!", "!?"}
_CLOSERS = {'"', "'", "”", "’", ")", "]", "}", "»"}
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


@dataclass(frozen=True)
class Token:
    text: str
    start: int  # character offsets into the input string, end exclusive
    end: int


@lru_cache(maxsize=1)
def _pre_tokenizer():
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                    pre_tokenizers.Split(Regex(_TOKEN), behavior="isolated")])


def tokenize(text: str, offset: int = 0) -> list[Token]:
    """The tokens of ``text`` with offsets (plus ``offset``) into it."""
    return [Token(t, s + offset, e + offset) for t, (s, e) in _pre_tokenizer().pre_tokenize_str(text)]


def _starts_sentence(token: str) -> bool:
    c = token[0]
    uncased = c.isalpha() and c.lower() == c.upper()  # scripts without case (CJK, Arabic ...)
    return c.isupper() or uncased or c.isdigit() or c in "\"'“‘([«"


def split_sentences(tokens: list[Token]) -> list[list[Token]]:
    """Sentence boundaries inside one paragraph (see the module docstring)."""
    out, cur = [], []
    for i, tok in enumerate(tokens):
        cur.append(tok)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is None:
            break
        if tok.text in _CLOSERS and len(cur) >= 2 and cur[-2].text in _END:
            end = True
        else:
            end = tok.text in _END and nxt.text not in _CLOSERS
        if end and _starts_sentence(nxt.text) and nxt.start > tok.end:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def sentences(text: str, split: bool = True) -> list[list[Token]]:
    """``text`` as sentences of tokens; paragraphs are split at blank lines, and (``split``) into sentences."""
    out, pos = [], 0
    for m in list(_BLANK_LINE.finditer(text)) + [None]:
        stop = m.start() if m is not None else len(text)
        toks = tokenize(text[pos:stop], pos)
        if toks:
            out.extend(split_sentences(toks) if split else [toks])
        if m is not None:
            pos = m.end()
    return out
