"""Vocabularies for words, characters and labels, serialisable into a checkpoint as plain Python."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from ner_zoo.data.schema import Sentence
from ner_zoo.errors import LabelError

PAD, UNK = "<pad>", "<unk>"
PAD_INDEX, UNK_INDEX = 0, 1
_DIGITS = re.compile(r"\d")


def normalize_word(word: str, lower: bool = False, normalize_digits: bool = False) -> str:
    """The vocabulary key of a word: optionally lower-cased and with every digit replaced by ``0``."""
    if lower:
        word = word.lower()
    if normalize_digits:
        word = _DIGITS.sub("0", word)
    return word


class Vocab:
    """A string <-> index map.

    Args:
        tokens: entries in index order (after the specials).
        specials: prepend ``<pad>`` (index 0) and ``<unk>`` (index 1); unknown strings map to ``<unk>``.
            Label vocabularies have no specials and raise :class:`LabelError` on unknown strings.
        lower: lower-case before lookup (word vocabularies).
        normalize_digits: map digits to ``0`` before lookup.
        name: what the vocabulary holds, for error messages.
    """

    def __init__(self, tokens: Iterable[str], specials: bool = True, lower: bool = False,
                 normalize_digits: bool = False, name: str = "vocab"):
        self.specials, self.lower, self.normalize_digits, self.name = specials, lower, normalize_digits, name
        self.itos: list[str] = [PAD, UNK] if specials else []
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(self.itos)}
        for tok in tokens:
            if tok not in self.stoi:
                self.stoi[tok] = len(self.itos)
                self.itos.append(tok)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return self.key(token) in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.state_dict() == other.state_dict()

    def __repr__(self) -> str:
        return f"Vocab({self.name}, size={len(self)})"

    def key(self, token: str) -> str:
        return normalize_word(token, self.lower, self.normalize_digits)

    def index(self, token: str) -> int:
        idx = self.stoi.get(self.key(token))
        if idx is None:
            if not self.specials:
                raise LabelError(
                    f"{token!r} is not in the {self.name} vocabulary ({len(self)} entries: "
                    f"{', '.join(self.itos[:12])}{', ...' if len(self) > 12 else ''})"
                )
            return UNK_INDEX
        return idx

    def lookup_indices(self, tokens: Sequence[str]) -> list[int]:
        if self.lower or self.normalize_digits:
            return [self.index(t) for t in tokens]
        get = self.stoi.get
        if self.specials:
            return [get(t, UNK_INDEX) for t in tokens]
        return [self.index(t) for t in tokens]

    # construction -------------------------------------------------------------------------------------
    @classmethod
    def build_words(cls, sentences: Iterable[Sentence], lower: bool = False, normalize_digits: bool = False,
                    min_freq: int = 1, pretrained_words: Iterable[str] | None = None) -> "Vocab":
        """Words of ``sentences`` seen at least ``min_freq`` times, plus (union) ``pretrained_words``.

        Pretrained words are added after normalisation, so an embedding's whole vocabulary is reachable at
        test time (the usual practice with GloVe: OOV words of dev/test still get their vectors).
        """
        counts = Counter(normalize_word(t, lower, normalize_digits) for s in sentences for t in s.tokens)
        words = [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_freq]
        if pretrained_words is not None:
            seen = set(words)
            for w in pretrained_words:
                w = normalize_word(w, lower, normalize_digits)
                if w not in seen:
                    seen.add(w)
                    words.append(w)
        return cls(words, specials=True, lower=lower, normalize_digits=normalize_digits, name="word")

    @classmethod
    def build_chars(cls, sentences: Iterable[Sentence], min_freq: int = 1) -> "Vocab":
        counts = Counter(c for s in sentences for t in s.tokens for c in t)
        chars = [c for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= min_freq]
        return cls(chars, specials=True, name="char")

    @classmethod
    def labels(cls, names: Iterable[str], name: str = "label") -> "Vocab":
        return cls(names, specials=False, name=name)

    # serialisation -------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        start = 2 if self.specials else 0
        return {"tokens": self.itos[start:], "specials": self.specials, "lower": self.lower,
                "normalize_digits": self.normalize_digits, "name": self.name}

    @classmethod
    def from_state(cls, state: dict) -> "Vocab":
        return cls(state["tokens"], specials=state["specials"], lower=state["lower"],
                   normalize_digits=state["normalize_digits"], name=state.get("name", "vocab"))
