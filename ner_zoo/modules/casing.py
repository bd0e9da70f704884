"""Casing classes of tokens (torch-free: the casing embedding's ids, computed by the PyTorch models and by
the ONNX runtime alike; :class:`ner_zoo.modules.embeddings.CasingEmbedding` embeds them)."""

from __future__ import annotations

from typing import Sequence

CASING_NAMES = ("<pad>", "allcaps", "initcap", "lower", "mixed", "numeric", "hasdigit", "other")
CASING_PAD, ALLCAPS, INITCAP, LOWER, MIXED, NUMERIC, HASDIGIT, OTHER = range(len(CASING_NAMES))


def casing_id(token: str) -> int:
    """Casing class of one token (see :data:`CASING_NAMES`).

    ``EU``/``NASA`` allcaps, ``John``/``I`` initcap, ``the`` lower, ``iPhone``/``McDonald`` mixed, ``1984``/
    ``3.5``/``-2`` numeric (digits, no letters), ``A4``/``2nd`` hasdigit (digits and letters), ``,``/``--`` other.
    """
    has_digit = any(c.isdigit() for c in token)
    letters = [c for c in token if c.isalpha()]
    if has_digit:
        return HASDIGIT if letters else NUMERIC
    if not letters:
        return OTHER
    word = "".join(letters)
    if word.isupper():
        return ALLCAPS if len(letters) > 1 else INITCAP
    if word.islower():
        return LOWER
    if word[0].isupper() and word[1:].islower():
        return INITCAP
    return MIXED


def casing_ids(tokens: Sequence[str]) -> list[int]:
    """Casing class ids of a token sequence (``CASING_PAD`` = 0 is left for padding)."""
    return [casing_id(t) for t in tokens]
