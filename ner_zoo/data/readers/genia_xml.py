"""GENIA 3.02 term corpus XML (GPML) -> sentences with nested spans, and the Finkel & Manning split.

The split of Finkel & Manning (2009), used by Lu & Roth (2015), Locate-and-Label and DSpERT: the 18,546
sentences of the 2,000 articles in corpus order, the first 90 % for train and dev (8.1 : 0.9), the last 10 %
for test: 15,023 / 1,669 / 1,854 sentences, the counts DSpERT's Table 6 and Locate-and-Label's Table 5
(16,692 train+dev) publish. The cut falls inside an article, as in those papers' files. Entity types as in
those papers: ``G#DNA_*`` -> DNA, ``G#RNA_*`` -> RNA, ``G#protein_*`` -> protein, ``G#cell_line``,
``G#cell_type``; every other ``sem`` (including coordinated ``(AND ...)`` values) is dropped; exact
duplicate spans are kept once.

Tokens: whitespace, split at every ``<cons>`` boundary (``PHA-activated`` -> ``PHA`` ``-activated`` when only
PHA is a term), then leading ``( [ { " '`` and trailing ``. , ; : ) ] } " ' ? !`` and ``%`` peeled off. This
approximates the GENIA tokenisation; entity boundaries always fall on token boundaries.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

from ner_zoo.data.schema import Sentence, Span

TYPES = (("G#DNA_", "DNA"), ("G#RNA_", "RNA"), ("G#protein_", "protein"), ("G#cell_line", "cell_line"),
         ("G#cell_type", "cell_type"))
LEADING, TRAILING = "([{\"'", ".,;:)]}\"'?!%"


def entity_type(sem: str | None) -> str | None:
    for prefix, label in TYPES:
        if sem and sem.startswith(prefix):
            return label
    return None


def _flatten(elem: ET.Element, text: list[str], terms: list[tuple[int, int, str | None]]) -> None:
    """Append ``elem``'s text to ``text`` and every ``<cons>`` inside it to ``terms`` as char offsets with its
    entity type (None when untyped)."""
    start = sum(map(len, text))
    text.append(elem.text or "")
    for child in elem:
        _flatten(child, text, terms)
        text.append(child.tail or "")
    if elem.tag == "cons":
        terms.append((start, sum(map(len, text)), entity_type(elem.get("sem"))))


def _pieces(chunk: str, offset: int, cuts: set[int]) -> list[tuple[int, int]]:
    """Char ranges of the tokens of one whitespace-free chunk."""
    bounds = sorted({offset, offset + len(chunk)} | {c for c in cuts if offset < c < offset + len(chunk)})
    out = []
    for a, b in zip(bounds, bounds[1:]):
        lead = []
        while b - a > 1 and chunk[a - offset] in LEADING:
            lead.append((a, a + 1))
            a += 1
        trail = []
        while b - a > 1 and chunk[b - 1 - offset] in TRAILING:
            trail.insert(0, (b - 1, b))
            b -= 1
        out += lead + [(a, b)] + trail
    return out


def sentence_from_xml(elem: ET.Element, doc_id: str, index: int, source: str) -> Sentence:
    text, terms = [], []
    _flatten(elem, text, terms)
    raw = "".join(text)
    # a term's own surrounding spaces are not part of it
    terms = [(s + len(raw[s:e]) - len(raw[s:e].lstrip()), e - len(raw[s:e]) + len(raw[s:e].rstrip()), t)
             for s, e, t in terms if raw[s:e].strip()]
    cuts = {c for s, e, _ in terms for c in (s, e)}  # every term boundary, typed or not
    ranges = [r for m in re.finditer(r"\S+", raw) for r in _pieces(m.group(), m.start(), cuts)]
    starts = {a: i for i, (a, _) in enumerate(ranges)}
    ends = {b: i + 1 for i, (_, b) in enumerate(ranges)}
    spans = sorted({Span(starts[s], ends[e], t) for s, e, t in terms if t})
    return Sentence([raw[a:b] for a, b in ranges], spans, doc_id=doc_id, index=index, source=source)


def read_genia_xml(path: str | Path) -> list[list[Sentence]]:
    """The articles of the corpus in order, each as its sentences (title first, then the abstract)."""
    path = Path(path)
    articles, seen = [], {}
    for n, article in enumerate(ET.parse(path).getroot().iter("article")):
        doc = (article.findtext("articleinfo/bibliomisc") or f"article-{n}").strip()
        seen[doc] = seen.get(doc, 0) + 1
        doc_id = doc if seen[doc] == 1 else f"{doc}#{seen[doc]}"  # MEDLINE:97218353 appears twice
        articles.append([sentence_from_xml(s, doc_id, i, f"{path.name}#{doc_id}/{i}")
                         for i, s in enumerate(article.iter("sentence"))])
    return articles


@lru_cache(maxsize=2)
def _finkel_manning(path: str, mtime: float) -> dict[str, list[Sentence]]:
    sents = [s for doc in read_genia_xml(path) for s in doc]
    n_train_dev = len(sents) - len(sents) // 10
    n_train = round(0.9 * n_train_dev)
    return {"train": sents[:n_train], "dev": sents[n_train:n_train_dev], "test": sents[n_train_dev:]}


def finkel_manning_split(path: str | Path, split: str) -> list[Sentence]:
    """Sentences of ``split`` (``train``/``dev``/``test``) of the Finkel & Manning split of the GENIA XML."""
    path = Path(path)
    import copy

    return copy.deepcopy(_finkel_manning(str(path), path.stat().st_mtime)[split])
