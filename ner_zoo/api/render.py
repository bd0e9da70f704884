"""Entities as a picture: a self-contained HTML page (``Tagger.render(text)``, ``ner-zoo predict --output_format
html``), each entity marked in its text with its label and score, in the manner of spaCy's displaCy.

The page has no script, font or stylesheet from elsewhere (it opens offline, and as a file attachment); colours
are fixed per label (the same label, the same colour, on every page). Nested entities: the outermost of
overlapping ones is marked (the rest are listed under the text)."""

from __future__ import annotations

import hashlib
import html
from typing import Sequence

#: pastel backgrounds, dark text readable on each (chosen per label by a stable hash)
PALETTE = ("#7aecec", "#bfeeb7", "#feca74", "#ff9561", "#aa9cfc", "#c887fb", "#9cc9cc", "#ffeb80", "#ff8197",
           "#e4e7d2", "#bfe1d9", "#f0c4e5")
STYLE = """body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em;line-height:2.6;color:#222}
.text{white-space:pre-wrap;margin-bottom:1.5em;font-size:18px}
mark.ent{padding:0.2em 0.35em;margin:0 0.15em;border-radius:0.35em;line-height:1;box-decoration-break:clone}
mark.ent .label{font-size:0.62em;font-weight:bold;text-transform:uppercase;margin-left:0.45em;vertical-align:middle}
mark.ent .score{font-size:0.58em;margin-left:0.3em;vertical-align:middle;opacity:0.75}
.nested{font-size:13px;color:#555;line-height:1.4}
h1{font-size:20px}"""


def colour(label: str) -> str:
    return PALETTE[int(hashlib.sha1(label.encode()).hexdigest(), 16) % len(PALETTE)]


def mark(text: str, entities: Sequence) -> str:
    """``text`` as HTML with each (outermost) entity in a ``<mark>`` carrying its label and score."""
    out, pos, nested = [], 0, []
    for e in sorted(entities, key=lambda e: (e.start, -e.end)):
        if e.start < pos:  # inside (or across) one already marked
            nested.append(e)
            continue
        score = "" if e.score is None else f'<span class="score">{e.score:.2f}</span>'
        out += [html.escape(text[pos:e.start]),
                f'<mark class="ent" data-label="{html.escape(e.label)}" style="background:{colour(e.label)}">'
                f'{html.escape(text[e.start:e.end])}<span class="label">{html.escape(e.label)}</span>{score}</mark>']
        pos = e.end
    out.append(html.escape(text[pos:]))
    body = f'<div class="text">{"".join(out)}</div>'
    if nested:
        body += '<div class="nested">also inside: ' + "; ".join(
            f"{html.escape(e.text)} ({html.escape(e.label)}{'' if e.score is None else f', {e.score:.2f}'})"
            for e in nested) + "</div>"
    return body


def page(texts: Sequence[str], entities: Sequence[Sequence], title: str = "ner-zoo entities") -> str:
    """A whole HTML document: each text with its entities marked (:func:`mark`)."""
    parts = "\n".join(mark(t, ents) for t, ents in zip(texts, entities))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n{parts}\n</body></html>\n")
