r"""Raw text -> sentences of tokens with character offsets into the input string.

Tokens come from one regular expression of the ``regex`` module (kept by its author since 2010, the engine
proposed for Python's ``re``; already installed with ``transformers``), chosen for what ``re`` lacks: Unicode
properties (``\p{L}``) and ``\X``, the extended grapheme cluster of Unicode's UAX #29, so that an emoji sequence
(a flag, a skin tone, a ZWJ family) or a letter with its combining marks is never cut. Whitespace and the
invisible separators (zero-width space U+200B, word joiner U+2060, BOM U+FEFF) separate tokens and are never
part of one. The expression keeps URLs, e-mail addresses, abbreviations (``U.K.``, ``Dr.``), numbers (``3.5``,
``1,000``), hyphenated and apostrophe words (``New-York``, ``O'Neil``, ``45-year-old``) whole, splits a
possessive ``'s`` / ``n't`` off as CoNLL-2003 and OntoNotes do, and makes every other punctuation mark (or
other grapheme) its own token. Sentences end at a blank line (a paragraph break) or at ``.``/``!``/``?``
(closing quotes and brackets included) followed by a token that starts with a capital, a digit or an opening
quote; a single line break inside a paragraph is treated as a space. Every token satisfies
``text[start:end] == token``.
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
    r"\p{N}+(?:[.,]\p{N}+)*(?:-[\p{L}\p{M}][\p{L}\p{M}\p{N}_]*)+",  # 45-year-old, 3-D
    r"\p{N}+(?:[.,:/]\p{N}+)*",  # 3.5, 1,000, 10:30, 1/2
    r"(?i:n['’]t)(?!\p{L})",  # n't
    r"['’][sSdDmM](?!\p{L})|['’](?:ll|re|ve|LL|RE|VE)(?!\p{L})",  # 's 'd 'm 'll 're 've
    r"[\p{L}\p{M}\p{N}_]+?(?=(?i:n['’]t)(?!\p{L}))",  # do|n't
    r"[\p{L}\p{M}\p{N}_]+(?:[-'’](?![sSdDmM](?!\p{L}))[\p{L}\p{M}\p{N}_]+)*",  # words, New-York, O'Neil
    r"\.\.\.|--",
    r"\X",  # any other grapheme cluster (an emoji sequence, a mark with its base): its own token
])
#: what separates tokens: whitespace and the invisible separators (never inside a token)
_SEPARATORS = "\\s\u200b\u2060\ufeff"
_END = {".", "!", "?", "...", "?!", "!?"}
_CLOSERS = {'"', "'", "”", "’", ")", "]", "}", "»"}
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


@dataclass(frozen=True)
class Token:
    text: str
    start: int  # character offsets into the input string, end exclusive
    end: int


@lru_cache(maxsize=1)
def _patterns():
    import regex

    return regex.compile(f"[^{_SEPARATORS}]+"), regex.compile(_TOKEN), regex.compile(r"\X")


def tokenize(text: str, offset: int = 0) -> list[Token]:
    """The tokens of ``text`` with offsets (plus ``offset``) into it."""
    chunks, token, grapheme = _patterns()
    out = []
    for chunk in chunks.finditer(text):
        piece, base = chunk.group(), chunk.start() + offset
        ends = {m.end() for m in grapheme.finditer(piece)}  # a token never ends inside a grapheme cluster
        start = None
        for m in token.finditer(piece):
            start = m.start() if start is None else start
            if m.end() in ends:
                out.append(Token(piece[start:m.end()], base + start, base + m.end()))
                start = None
        if start is not None:
            out.append(Token(piece[start:], base + start, base + len(piece)))
    return out


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
