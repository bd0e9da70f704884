"""Corpus statistics per split (what ``ner-zoo data stats`` prints and PROVENANCE files list)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ner_zoo.data.schema import Sentence, Span, documents


def _nesting(spans: Sequence[Span]) -> tuple[int, int, int]:
    """``(nested, inner, crossing_pairs)`` for one sentence.

    ``nested``: entities that contain or lie inside another; ``inner``: entities strictly inside another
    (different boundaries); ``crossing_pairs``: pairs that overlap without nesting.
    """
    if len(spans) < 2:
        return 0, 0, 0
    order = sorted(range(len(spans)), key=lambda i: (spans[i].start, -spans[i].end))
    nested: set[int] = set()
    inner: set[int] = set()
    crossing = 0
    for k, i in enumerate(order):
        a = spans[i]
        for j in order[k + 1:]:
            b = spans[j]
            if b.start >= a.end:  # starts only grow from here: no more overlaps with a
                break
            if b.end > a.end:
                crossing += 1
            else:  # b inside a (same start implies b.end <= a.end by the sort)
                nested.update((i, j))
                if (b.start, b.end) != (a.start, a.end):
                    inner.add(j)
    return len(nested), len(inner), crossing


def split_stats(sentences: Sequence[Sentence]) -> dict:
    """Statistics of one split.

    Returns:
        ``{"sentences", "tokens", "documents", "entities", "entities_per_type": {type: n},
        "nested_entities", "inner_entities", "nested_ratio", "crossing_pairs", "longest_entity",
        "max_sentence_length"}``. ``nested_entities`` counts entities contained in or containing another
        (``nested_ratio`` = that / entities); ``inner_entities`` those strictly inside another.
    """
    types: Counter[str] = Counter()
    nested = inner = crossing = longest = tokens = max_len = 0
    for s in sentences:
        n = len(s.tokens)
        tokens += n
        max_len = max(max_len, n)
        for sp in s.spans:
            types[sp.label] += 1
            longest = max(longest, sp.end - sp.start)
        a, b, c = _nesting(s.spans)
        nested, inner, crossing = nested + a, inner + b, crossing + c
    entities = sum(types.values())
    return {
        "sentences": len(sentences),
        "tokens": tokens,
        "documents": len(documents(sentences)),
        "entities": entities,
        "entities_per_type": dict(sorted(types.items())),
        "nested_entities": nested,
        "inner_entities": inner,
        "nested_ratio": nested / entities if entities else 0.0,
        "crossing_pairs": crossing,
        "longest_entity": longest,
        "max_sentence_length": max_len,
    }


def corpus_stats(splits: Mapping[str, Sequence[Sentence]]) -> dict[str, dict]:
    """:func:`split_stats` for every split, e.g. ``corpus_stats({"train": ..., "dev": ..., "test": ...})``."""
    return {name: split_stats(sents) for name, sents in splits.items()}


def format_stats(stats: Mapping[str, Mapping]) -> str:
    """Two markdown tables: the totals per split, then entities per type per split."""
    names = list(stats)
    cols = [("sentences", "sentences"), ("tokens", "tokens"), ("documents", "documents"),
            ("entities", "entities"), ("nested_ratio", "nested %"), ("inner_entities", "inside another"),
            ("crossing_pairs", "crossing pairs"), ("longest_entity", "longest entity"),
            ("max_sentence_length", "longest sentence")]
    lines = ["| split | " + " | ".join(h for _, h in cols) + " |", "|---|" + "---:|" * len(cols)]
    for name in names:
        cells = []
        for key, _ in cols:
            v = stats[name][key]
            cells.append(f"{100 * v:.1f}" if key == "nested_ratio" else f"{v:,}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    types = sorted({t for name in names for t in stats[name]["entities_per_type"]})
    if types:
        lines += ["", "| type | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for t in types:
            lines.append(f"| {t} | " + " | ".join(f"{stats[n]['entities_per_type'].get(t, 0):,}" for n in names) + " |")
    return "\n".join(lines) + "\n"
