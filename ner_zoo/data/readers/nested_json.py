"""Span-annotated JSON corpora (nested NER), in the three shapes the public processed corpora come in.

* ``genia`` -- JSON lines, one sentence per record: ``{"tokens": [...], "entity_mentions": [{"start",
  "end", "entity_type"}], "doc_id", "sent_id"}`` with an *exclusive* ``end`` (Yan et al. 2022 GENIA).
* ``dygie`` -- one document per record: ``{"doc_key", "sentences": [[...]], "ner": [[[start, end, type],
  ...], ...]}`` with offsets counted over the whole document and an *inclusive* end (DyGIE/PURE ACE files).
  They are converted to sentence-local, end-exclusive spans.
* ``lal`` -- Locate-and-Label: a JSON list (or JSON lines) of ``{"tokens", "entities": [{"type", "start",
  "end"}], "ltokens", "rtokens", "pos"?}`` with an *exclusive* ``end``. ``ltokens``/``rtokens`` (context) are
  not stored; they are used only to tell whether a record continues the previous record's document.

Records are numbered from 1; in a JSON-lines file the record number is the line number. Errors name
``file#record``. Document ids are prefixed with the file name (``train.json:0``), so two files never share
one: the ACE files give every sentence of every split ``doc_key`` 0.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from ner_zoo.data.readers.common import DATA_ENCODING_OPTION, SentenceList, gc_paused, read_text
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.errors import DataFormatError

SHAPES = ("genia", "dygie", "lal")
_SHAPE_ALIASES = {"locate_and_label": "lal", "pure": "dygie", "ace": "dygie"}
DUPLICATE_POLICIES = ("drop", "raise", "keep")


def _records(text: str, path: object) -> list[tuple[int, Any]]:
    """Parse a JSON list, JSON lines, or a single (possibly multi-line) JSON object."""
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"invalid JSON ({e.msg})", path, e.lineno) from None
        return list(enumerate(data, 1))
    out: list[tuple[int, Any]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((lineno, json.loads(line)))
        except json.JSONDecodeError as e:
            if not out:  # maybe one pretty-printed object
                try:
                    return [(1, json.loads(text))]
                except json.JSONDecodeError:
                    pass
            raise DataFormatError(f"invalid JSON ({e.msg})", path, lineno) from None
    return out


def detect_shape(record: Any) -> str | None:
    """``"genia"``, ``"dygie"`` or ``"lal"`` from a record's keys; ``None`` if none fits."""
    if not isinstance(record, dict):
        return None
    if "sentences" in record and "ner" in record:
        return "dygie"
    if "entity_mentions" in record:
        return "genia"
    if "entities" in record and "tokens" in record:
        return "lal"
    return None


def _get(record: dict, key: str, where: str) -> Any:
    try:
        return record[key]
    except KeyError:
        raise DataFormatError(f"missing key {key!r} (keys: {sorted(record)})", where) from None
    except TypeError:
        raise DataFormatError(f"expected a JSON object, got {type(record).__name__}", where) from None


def _list(record: dict, key: str, where: str, optional: bool = False) -> list:
    """``record[key]``, which must be a JSON list (``[]`` for a missing optional key or ``null`` there)."""
    value = record.get(key) if optional and isinstance(record, dict) else _get(record, key, where)
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise DataFormatError(f"{key!r} must be a list, got {type(value).__name__} {str(value)[:40]!r}", where)
    return value


def _tokens(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise DataFormatError("tokens must be a list of strings", where)
    if not value:
        raise DataFormatError("empty sentence (no tokens)", where)
    return value


def _span(start: Any, end: Any, label: Any, n: int, where: str) -> Span:
    """Check an end-exclusive span against a sentence of ``n`` tokens."""
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool) or isinstance(end, bool):
        raise DataFormatError(f"span offsets must be integers, got {start!r}, {end!r}", where)
    if not isinstance(label, str) or not label:
        raise DataFormatError(f"span ({start}, {end}) has no label (got {label!r})", where)
    if end <= start:
        raise DataFormatError(f"span ({start}, {end}, {label!r}) ends before it starts (end is exclusive)", where)
    if start < 0 or end > n:
        raise DataFormatError(f"span ({start}, {end}, {label!r}) is out of range for {n} tokens", where)
    return Span(start, end, label)


class _Dedupe:
    """Applies the duplicate-span policy and counts what it drops."""

    def __init__(self, policy: str):
        if policy not in DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {policy!r}")
        self.policy, self.dropped = policy, 0

    def __call__(self, spans: list[Span], where: str) -> list[Span]:
        if self.policy == "keep" or len(set(spans)) == len(spans):
            return spans
        if self.policy == "raise":
            seen: set[Span] = set()
            dup = next(s for s in spans if s in seen or seen.add(s))
            raise DataFormatError(f"duplicate span {tuple(dup)}", where,
                                  hint="pass duplicates='drop' to keep one copy of each")
        unique = list(dict.fromkeys(spans))
        self.dropped += len(spans) - len(unique)
        return unique


def _genia(records, path, name, dedupe) -> list[Sentence]:
    out: list[Sentence] = []
    for rec_no, rec in records:
        where = f"{path}#{rec_no}"
        tokens = _tokens(_get(rec, "tokens", where), where)
        spans = []
        for m in _list(rec, "entity_mentions", where):
            spans.append(_span(_get(m, "start", where), _get(m, "end", where), _get(m, "entity_type", where),
                               len(tokens), where))
        doc_id = f"{name}:{rec['doc_id']}" if rec.get("doc_id") is not None else f"{name}:#{rec_no}"
        index = out[-1].index + 1 if out and out[-1].doc_id == doc_id else 0
        out.append(Sentence(tokens, dedupe(spans, where), {}, doc_id, index, where))
    return out


def _dygie(records, path, name, dedupe) -> list[Sentence]:
    out: list[Sentence] = []
    for rec_no, rec in records:
        where = f"{path}#{rec_no}"
        sentences, ner = _list(rec, "sentences", where), _list(rec, "ner", where)
        if len(sentences) != len(ner):
            raise DataFormatError(f"{len(sentences)} sentences but {len(ner)} 'ner' lists", where)
        doc_id = f"{name}:{rec['doc_key']}" if rec.get("doc_key") is not None else f"{name}:#{rec_no}"
        offset = 0
        for j, (toks, mentions) in enumerate(zip(sentences, ner)):
            swhere = f"{where}/{j}"
            tokens = _tokens(toks, swhere)
            if not isinstance(mentions, list):
                raise DataFormatError(f"'ner' of sentence {j} must be a list, got {type(mentions).__name__}", swhere)
            spans = []
            for m in mentions:
                if not isinstance(m, list) or len(m) < 3:
                    raise DataFormatError(f"mention {m!r} is not [start, end, type]", swhere)
                s, e, label = m[0], m[1], m[2]
                if not isinstance(s, int) or not isinstance(e, int):
                    raise DataFormatError(f"mention {m!r} has non-integer offsets", swhere)
                # document-global, inclusive -> sentence-local, exclusive
                spans.append(_span(s - offset, e - offset + 1, label, len(tokens),
                                   f"{swhere} (document offsets {s}..{e} inclusive, sentence starts at {offset})"))
            out.append(Sentence(tokens, dedupe(spans, swhere), {}, doc_id, j, swhere))
            offset += len(tokens)
    return out


def _lal(records, path, name, dedupe) -> list[Sentence]:
    out: list[Sentence] = []
    doc = -1
    for rec_no, rec in records:
        where = f"{path}#{rec_no}"
        tokens = _tokens(_get(rec, "tokens", where), where)
        spans = []
        for m in _list(rec, "entities", where):
            spans.append(_span(_get(m, "start", where), _get(m, "end", where), _get(m, "type", where),
                               len(tokens), where))
        columns = {}
        if rec.get("pos") is not None:
            pos = rec["pos"]
            if not isinstance(pos, list) or len(pos) != len(tokens):
                raise DataFormatError(f"'pos' has {len(pos) if isinstance(pos, list) else pos!r} values "
                                      f"for {len(tokens)} tokens", where)
            columns["pos"] = [str(p) for p in pos]
        # the record continues the previous document when its left context ends with the previous sentence
        left = _list(rec, "ltokens", where, optional=True)
        prev = out[-1].tokens if out else None
        continues = prev is not None and len(left) >= len(prev) and left[len(left) - len(prev):] == prev
        if continues:
            index = out[-1].index + 1
        else:
            doc, index = doc + 1, 0
        out.append(Sentence(tokens, dedupe(spans, where), columns, f"{name}:{doc}", index, where))
    return out


_READERS = {"genia": _genia, "dygie": _dygie, "lal": _lal}


@gc_paused
def read_nested_json(path: str | os.PathLike[str], shape: str | None = None, duplicates: str = "drop",
                     encoding: str | None = None, data: bytes | None = None,
                     encoding_option: str = DATA_ENCODING_OPTION) -> SentenceList:
    """Read a span-annotated JSON corpus (nested spans allowed).

    Args:
        path: a ``.json``/``.jsonl``/``.jsonlines`` file.
        shape: ``"genia"``, ``"dygie"`` (alias ``"pure"``) or ``"lal"`` (alias ``"locate_and_label"``), see
            the module docstring; ``None`` detects it from the first record's keys.
        duplicates: what to do with a span listed twice in a sentence (same start, end and label):
            ``"drop"`` keeps one copy and warns with the number dropped (also in ``.notes``); ``"raise"``
            raises; ``"keep"`` keeps the copies, reproducing raw mention counts, but such sentences fail
            :meth:`Sentence.validate`. The ACE 2005 files hold 119/16/12 exact duplicates (train/dev/test)
            and ACE 2004 train holds 2; their PROVENANCE counts include them.
        encoding, data, encoding_option: as in :func:`~ner_zoo.data.readers.conll.read_conll`.

    Returns:
        A :class:`SentenceList` with ``.notes = {"shape": ..., "duplicates_dropped": n}``.

    Raises:
        DataFormatError: naming ``file#record`` for invalid JSON, an unknown shape, a missing key, a span
            out of range or ending before it starts, or (``duplicates="raise"``) a duplicate span.
    """
    text, used = read_text(path, encoding, data, encoding_option)
    records = _records(text, path)
    if not records:
        raise DataFormatError("no records in file", path)
    if shape is None:
        shape = detect_shape(records[0][1])
        if shape is None:
            keys = sorted(records[0][1]) if isinstance(records[0][1], dict) else type(records[0][1]).__name__
            raise DataFormatError(f"unknown JSON shape (keys: {keys})", f"{path}#{records[0][0]}",
                                  hint="expected genia (tokens, entity_mentions), dygie (sentences, ner) "
                                       "or lal (tokens, entities)")
    shape = _SHAPE_ALIASES.get(shape, shape)
    if shape not in _READERS:
        raise DataFormatError(f"unknown shape {shape!r}; use one of {SHAPES}", path)
    dedupe = _Dedupe(duplicates)
    sentences = _READERS[shape](records, path, Path(path).name, dedupe)
    if dedupe.dropped:
        warnings.warn(f"{path}: dropped {dedupe.dropped} duplicate spans (duplicates='drop')", stacklevel=2)
    return SentenceList(sentences, path=path, encoding=used,
                        notes={"shape": shape, "duplicates_dropped": dedupe.dropped})
