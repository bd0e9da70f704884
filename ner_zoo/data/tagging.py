"""Tag schemes: spans <-> IOB1 / IOB2 / BIOES (BILOU) in one place.

Reading tags follows conlleval (extended with ``S``/``E`` as seqeval's default mode does): an ``I-X`` after
``O`` or after another type *opens* an entity, so IOB1 files and invalid predicted sequences are read the
way the CoNLL shared-task scorer reads them. ``strict=True`` instead drops every fragment that is not a
valid chunk of the declared scheme (seqeval's strict mode). Writing tags always produces valid sequences,
so ``spans -> tags -> spans`` is the identity for any set of non-overlapping spans, in every scheme.

Repair rule for predicted sequences (``repair_tags``): read with the conlleval rules, write back in the
scheme. The same rule is applied to gold and predictions wherever both are re-encoded.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Iterable, Sequence

from ner_zoo.data.schema import Span
from ner_zoo.errors import DataFormatError

if TYPE_CHECKING:
    import torch

OUTSIDE = "O"


class TagScheme(str, Enum):
    IOB1 = "iob1"
    IOB2 = "iob2"
    BIOES = "bioes"

    @classmethod
    def parse(cls, value: "str | TagScheme") -> "TagScheme":
        if isinstance(value, TagScheme):
            return value
        aliases = {"bio": "iob2", "iob": "iob2", "bilou": "bioes", "iobes": "bioes"}
        v = aliases.get(value.lower(), value.lower())
        try:
            return cls(v)
        except ValueError:
            raise ValueError(f"unknown tag scheme {value!r}; use one of iob1, iob2 (bio), bioes (bilou)") from None

    @property
    def prefixes(self) -> tuple[str, ...]:
        return ("B", "I", "E", "S") if self is TagScheme.BIOES else ("B", "I")


_BILOU = {"L": "E", "U": "S"}


def split_tag(tag: str, where: object = None, line: int | None = None) -> tuple[str, str | None]:
    """``"B-PER" -> ("B", "PER")``, ``"O" -> ("O", None)``; BILOU ``L``/``U`` become ``E``/``S``.

    Raises :class:`DataFormatError` for anything else (``"B-"``, ``"X-PER"``, ``"PER"``).
    """
    if tag == OUTSIDE:
        return OUTSIDE, None
    prefix, sep, label = tag.partition("-")
    prefix = _BILOU.get(prefix, prefix)
    if not sep or not label or prefix not in ("B", "I", "E", "S"):
        raise DataFormatError(
            f"invalid tag {tag!r}", where, line, "expected O or B-/I-/E-/S-/L-/U- followed by a type, e.g. B-PER"
        )
    return prefix, label


def _end_of_chunk(prev: str, tag: str, prev_type: str | None, type_: str | None) -> bool:
    if prev in ("E", "S"):
        return True
    if prev in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev != OUTSIDE and prev_type != type_


def _start_of_chunk(prev: str, tag: str, prev_type: str | None, type_: str | None) -> bool:
    if tag in ("B", "S"):
        return True
    if prev in ("E", "S", OUTSIDE) and tag in ("E", "I"):
        return True
    return tag != OUTSIDE and prev_type != type_


def tags_to_spans(tags: Sequence[str], scheme: "str | TagScheme | None" = None, strict: bool = False,
                  where: object = None) -> list[Span]:
    """Decode a tag sequence into spans.

    Args:
        tags: one tag per token.
        scheme: the declared scheme; only used with ``strict``. The default reading (conlleval's) handles
            every scheme at once.
        strict: keep only chunks that are valid in ``scheme`` (``B I* E | S`` for BIOES, ``B I*`` for IOB2,
            ``(B|I) I*`` for IOB1) and drop invalid fragments.
        where: file/record named in error messages.
    """
    parsed = [split_tag(t, where) for t in tags]
    if strict:
        return _strict_spans(parsed, TagScheme.parse(scheme or TagScheme.IOB2))
    spans: list[Span] = []
    start = None
    prev, prev_type = OUTSIDE, None
    for i, (p, typ) in enumerate(parsed):
        if start is not None and _end_of_chunk(prev, p, prev_type, typ):
            spans.append(Span(start, i, prev_type))
            start = None
        if _start_of_chunk(prev, p, prev_type, typ):
            start = i
        prev, prev_type = p, typ
    if start is not None:
        spans.append(Span(start, len(parsed), prev_type))
    return spans


def _strict_spans(parsed: list[tuple[str, str | None]], scheme: TagScheme) -> list[Span]:
    spans: list[Span] = []
    start, cur = None, None
    n = len(parsed)
    for i, (p, typ) in enumerate(parsed):
        if scheme is TagScheme.BIOES:
            if p == "S":
                spans.append(Span(i, i + 1, typ))
                start = None
            elif p == "B":
                start, cur = i, typ
            elif p == "I":
                if start is None or typ != cur:
                    start = None
            elif p == "E":
                if start is not None and typ == cur:
                    spans.append(Span(start, i + 1, typ))
                start = None
            else:
                start = None
            continue
        # IOB1 / IOB2: a chunk runs while I-<same type> follows
        if p in ("E", "S"):  # not part of these schemes: invalid fragment
            if start is not None:
                spans.append(Span(start, i, cur))
            start = None
            continue
        continues = p == "I" and start is not None and typ == cur
        if continues:
            continue
        if start is not None:
            spans.append(Span(start, i, cur))
            start = None
        if p == "B" or (p == "I" and scheme is TagScheme.IOB1):
            start, cur = i, typ
    if start is not None and scheme is not TagScheme.BIOES:  # a BIOES chunk needs its E- (seqeval strict)
        spans.append(Span(start, n, cur))
    return spans


def spans_to_tags(spans: Iterable[Span], length: int, scheme: "str | TagScheme" = TagScheme.IOB2,
                  where: object = None) -> list[str]:
    """Encode non-overlapping spans as a tag sequence of ``length`` tokens in ``scheme``."""
    scheme = TagScheme.parse(scheme)
    tags = [OUTSIDE] * length
    prev_end, prev_label = -1, None
    for sp in sorted(spans):
        if not (0 <= sp.start < sp.end <= length):
            raise DataFormatError(f"span {tuple(sp)} out of range for {length} tokens", where)
        if sp.start < prev_end:
            raise DataFormatError(f"span {tuple(sp)} overlaps another; tags can only encode flat spans", where)
        if scheme is TagScheme.BIOES:
            if len(sp) == 1:
                tags[sp.start] = f"S-{sp.label}"
            else:
                tags[sp.start] = f"B-{sp.label}"
                for i in range(sp.start + 1, sp.end - 1):
                    tags[i] = f"I-{sp.label}"
                tags[sp.end - 1] = f"E-{sp.label}"
        else:
            first = "I"
            if scheme is TagScheme.IOB2 or (prev_end == sp.start and prev_label == sp.label):
                first = "B"
            tags[sp.start] = f"{first}-{sp.label}"
            for i in range(sp.start + 1, sp.end):
                tags[i] = f"I-{sp.label}"
        prev_end, prev_label = sp.end, sp.label
    return tags


def convert_tags(tags: Sequence[str], target: "str | TagScheme") -> list[str]:
    """Re-encode a tag sequence (read with conlleval rules) in ``target``; invalid input gets repaired."""
    return spans_to_tags(tags_to_spans(tags), len(tags), target)


repair_tags = convert_tags


def detect_scheme(tag_sequences: Iterable[Sequence[str]]) -> TagScheme:
    """Guess the scheme of a corpus.

    BIOES/BILOU if any ``E-``/``S-``/``L-``/``U-`` tag occurs. Otherwise count entity openings: an ``I-``
    opening (at a sentence start, after ``O`` or after another type) is IOB1 evidence, a ``B-`` opening
    in the same places is IOB2 evidence; the majority wins, so one broken sentence in an IOB2 file (as in
    CoNLL-2002) does not flip the verdict. Ties (e.g. no entities) give IOB2.
    """
    i_openings = b_openings = 0
    for tags in tag_sequences:
        prev, prev_type = OUTSIDE, None
        for t in tags:
            p, typ = split_tag(t)
            if p in ("E", "S"):
                return TagScheme.BIOES
            if prev == OUTSIDE or prev_type != typ:
                i_openings += p == "I"
                b_openings += p == "B"
            prev, prev_type = p, typ
    return TagScheme.IOB1 if i_openings > b_openings else TagScheme.IOB2


def tag_names(labels: Sequence[str], scheme: "str | TagScheme") -> list[str]:
    """The tag vocabulary for entity types ``labels``: ``O`` first, then each type's prefixes."""
    scheme = TagScheme.parse(scheme)
    return [OUTSIDE] + [f"{p}-{lab}" for lab in labels for p in scheme.prefixes]


def allowed_transitions(tags: Sequence[str], scheme: "str | TagScheme") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean masks of valid tag bigrams for a CRF: ``(start[T], transitions[T_from, T_to], end[T])``."""
    import torch  # here: decoding tags (an ONNX model's too) needs no torch

    scheme = TagScheme.parse(scheme)
    parsed = [split_tag(t) for t in tags]
    n = len(tags)
    trans = torch.ones(n, n, dtype=torch.bool)
    start = torch.ones(n, dtype=torch.bool)
    end = torch.ones(n, dtype=torch.bool)
    for j, (pj, tj) in enumerate(parsed):
        if scheme is TagScheme.BIOES:
            start[j] = pj in (OUTSIDE, "B", "S")
            end[j] = pj in (OUTSIDE, "E", "S")
        elif scheme is TagScheme.IOB2:
            start[j] = pj != "I"
        else:
            start[j] = pj != "B"
        for i, (pi, ti) in enumerate(parsed):
            if scheme is TagScheme.BIOES:
                inside = pi in ("B", "I")
                ok = (pj in ("I", "E") and ti == tj) if inside else pj in (OUTSIDE, "B", "S")
            elif scheme is TagScheme.IOB2:
                ok = pj != "I" or (pi in ("B", "I") and ti == tj)
            else:  # IOB1: B-X only right after an X chunk
                ok = pj != "B" or (pi in ("B", "I") and ti == tj)
            trans[i, j] = ok
    return start, trans, end


def is_valid(tags: Sequence[str], scheme: "str | TagScheme") -> bool:
    """Whether a sequence obeys ``scheme`` (what constrained CRF decoding guarantees)."""
    scheme = TagScheme.parse(scheme)
    names = sorted(set(tags))
    index = {t: i for i, t in enumerate(names)}
    start, trans, end = allowed_transitions(names, scheme)
    if not tags:
        return True
    ids = [index[t] for t in tags]
    return bool(start[ids[0]] and end[ids[-1]] and all(trans[a, b] for a, b in zip(ids, ids[1:])))
