"""The one data model: a sentence is its tokens, extra columns, gold spans and its place in a document.

Spans are half-open ``(start, end_exclusive, label)`` triples over token indices. They are the only
interchange type between readers, models, decoders, metrics and writers; tag sequences are derived from
them (see :mod:`ner_zoo.data.tagging`) and never the other way round inside models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence

from ner_zoo.errors import DataFormatError


class Span(NamedTuple):
    """A labelled half-open token range ``tokens[start:end]``."""

    start: int
    end: int
    label: str

    def __len__(self) -> int:  # number of tokens covered
        return self.end - self.start

    def overlaps(self, other: "Span") -> bool:
        return self.start < other.end and other.start < self.end

    def crosses(self, other: "Span") -> bool:
        """Overlap without nesting (neither contains the other)."""
        return self.overlaps(other) and not (
            (self.start <= other.start and other.end <= self.end)
            or (other.start <= self.start and self.end <= other.end)
        )


@dataclass
class Sentence:
    """One sentence of a corpus.

    Attributes:
        tokens: the words.
        spans: gold spans (nested allowed); empty for unlabelled text.
        columns: extra per-token columns by name (e.g. ``pos``, ``chunk``), each as long as ``tokens``.
        doc_id: identifier of the enclosing document (``None`` when the corpus has no documents).
        index: position of the sentence inside its document (0-based).
        source: where it came from, ``"file:line"`` or ``"file#record"``, for error messages.
        split: the data module's split (``train``/``dev``/``test``) it was read for; ``None`` outside one.
            Document context is looked up within a split only (see :class:`DocumentContext`).
    """

    tokens: list[str]
    spans: list[Span] = field(default_factory=list)
    columns: dict[str, list[str]] = field(default_factory=dict)
    doc_id: str | None = None
    index: int = 0
    source: str | None = None
    split: str | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    def validate(self, flat: bool = False) -> None:
        """Raise :class:`DataFormatError` on out-of-range, empty, duplicate or (if ``flat``) overlapping spans."""
        n = len(self.tokens)
        if n == 0:
            raise DataFormatError("empty sentence (no tokens)", self.source)
        for name, col in self.columns.items():
            if len(col) != n:
                raise DataFormatError(f"column {name!r} has {len(col)} values for {n} tokens", self.source)
        seen = set()
        for sp in self.spans:
            if not (0 <= sp.start < sp.end <= n):
                raise DataFormatError(
                    f"span {tuple(sp)} is out of range or inverted for a sentence of {n} tokens", self.source
                )
            if not sp.label:
                raise DataFormatError(f"span {tuple(sp)} has an empty label", self.source)
            if sp in seen:
                raise DataFormatError(f"duplicate span {tuple(sp)}", self.source)
            seen.add(sp)
        if flat:
            ordered = sorted(self.spans)
            for a, b in zip(ordered, ordered[1:]):
                if a.overlaps(b):
                    raise DataFormatError(
                        f"overlapping spans {tuple(a)} and {tuple(b)} in a corpus declared flat", self.source
                    )

    @property
    def is_nested(self) -> bool:
        ordered = sorted(self.spans)
        return any(a.overlaps(b) for i, a in enumerate(ordered) for b in ordered[i + 1 :] if b.start < a.end)


def label_set(sentences: Iterable[Sentence]) -> list[str]:
    """Sorted entity types occurring in ``sentences``."""
    return sorted({sp.label for s in sentences for sp in s.spans})


def documents(sentences: Sequence[Sentence]) -> list[list[Sentence]]:
    """Group consecutive sentences by ``doc_id`` (a sentence without one is its own document)."""
    docs: list[list[Sentence]] = []
    for s in sentences:
        if docs and s.doc_id is not None and docs[-1][0].doc_id == s.doc_id:
            docs[-1].append(s)
        else:
            docs.append([s])
    return docs
