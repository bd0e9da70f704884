"""Hugging Face ``datasets`` token-classification data (hub id or local file/folder) as sentences."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ner_zoo.data.readers.common import SentenceList, gc_paused
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.tagging import OUTSIDE, TagScheme, detect_scheme, tags_to_spans
from ner_zoo.errors import DataFormatError

_BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".jsonlines": "json", ".csv": "csv",
             ".arrow": "arrow"}
_SAVED_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")


def load_hf(source: str | os.PathLike[str], split: str | None = None, name: str | None = None,
            data_files: dict[str, str] | None = None, cache_dir: str | None = None) -> Any:
    """A ``Dataset`` (``split`` given) or a ``DatasetDict`` (all splits) from a hub id (with its config
    ``name``), a ``save_to_disk`` folder, a data folder, a data file, or ``data_files`` (``{split: file}``;
    ``source`` is then the folder they are relative to, or ``None``)."""
    import datasets  # slow import: only when this reader is used

    p = Path(source) if source is not None else None
    try:
        if data_files:
            files = {k: str(p / v) if p is not None else str(v) for k, v in data_files.items()}
            suffixes = {Path(f).suffix.lower() for f in files.values()}
            builder = _BUILDERS.get(next(iter(suffixes))) if len(suffixes) == 1 else None
            if builder is None:
                raise DataFormatError(f"data_files must share one type of {sorted(_BUILDERS)}, got "
                                      f"{sorted(suffixes)}", source or next(iter(files.values())))
            ds = datasets.load_dataset(builder, data_files=files, cache_dir=cache_dir)
        elif p.is_dir() and any((p / m).exists() for m in _SAVED_MARKERS):
            ds = datasets.load_from_disk(str(p))
        elif p.is_file():
            builder = _BUILDERS.get(p.suffix.lower())
            if builder is None:
                raise DataFormatError(f"unsupported file type {p.suffix!r}; use one of {sorted(_BUILDERS)}", p)
            key = split or "train"
            ds = datasets.load_dataset(builder, data_files={key: str(p)}, cache_dir=cache_dir)
        else:  # a hub id, or a folder of data files (splits from the file names)
            ds = datasets.load_dataset(str(source), name, cache_dir=cache_dir)
    except DataFormatError:
        raise
    except (KeyError, ValueError, FileNotFoundError, ConnectionError, OSError) as e:
        raise DataFormatError(f"cannot load: {type(e).__name__}: {e}", source,
                              hint="a hub id needs network access (unset HF_DATASETS_OFFLINE) or a cached copy") from e
    if split is None:
        return ds
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise DataFormatError(f"no split {split!r} (splits: {sorted(ds)})", source)
        return ds[split]
    return ds


def _names(feature: Any) -> list[str] | None:
    """Class names of a ``List(ClassLabel)``/``Sequence(ClassLabel)`` feature, else ``None``."""
    inner = getattr(feature, "feature", None)
    names = getattr(inner, "names", None)
    return list(names) if names else None


def _outside(v: Any, n: int) -> str:
    note = "; -1 is Hugging Face's 'no label' value, which a tag column cannot hold" if v == -1 else ""
    return f"outside its {n} class names ({v!r}: expected 0..{n - 1}{note})"


def _strings(values: list, names: list[str] | None, field: str, where: str) -> list[list[str]]:
    """Each row's values as strings: ``ClassLabel`` ids mapped to their names (a negative or too large id, or a
    value that is not an integer, is a :class:`DataFormatError` naming the split and row; Python's negative
    indexing once read HF's ``-1`` as the last class name)."""
    if names is not None:
        n, out = len(names), []
        for i, row in enumerate(values):
            if not isinstance(row, (list, tuple)):
                raise DataFormatError(f"field {field!r} holds {type(row).__name__}, not a list of class ids",
                                      f"{where}#{i}")
            for v in row:
                if type(v) is not int:
                    raise DataFormatError(f"field {field!r} holds {v!r}, not an integer class id", f"{where}#{i}")
                if not 0 <= v < n:
                    raise DataFormatError(f"field {field!r} holds a value {_outside(v, n)}", f"{where}#{i}")
            out.append([names[v] for v in row])
        return out
    for i, row in enumerate(values):
        if not isinstance(row, (list, tuple)):
            raise DataFormatError(f"field {field!r} holds {type(row).__name__}, not a list of tags", f"{where}#{i}")
        if row and not isinstance(row[0], str):
            raise DataFormatError(f"field {field!r} holds {type(row[0]).__name__} values and has no ClassLabel "
                                  "names", where, hint="pass tag_names=[...] to map integers to tag strings")
        bad = next((v for v in row if not isinstance(v, str)), None)
        if bad is not None:
            raise DataFormatError(f"field {field!r} holds {bad!r} among its tag strings", f"{where}#{i}")
    return values


def _words(words: Any, field: str, source: str) -> list[str]:
    """One row's tokens: a list of non-empty strings (a string is not split into characters; an empty or blank
    token, a number or a null is a :class:`DataFormatError` naming the split and row)."""
    if isinstance(words, str) or not isinstance(words, (list, tuple)):
        raise DataFormatError(f"field {field!r} holds {type(words).__name__} {str(words)[:40]!r}, not a list of "
                              "tokens", source)
    for k, w in enumerate(words):
        if not isinstance(w, str):
            raise DataFormatError(f"field {field!r}: token {k} is {w!r}, not a string", source)
        if not w.strip():
            raise DataFormatError(f"field {field!r}: token {k} is empty or blank ({w!r})", source)
    return list(words)


def _span_list(value: Any, names: list[str] | None, where: str) -> list[Span]:
    """One row of a spans column: ``{start, end, label}`` records (or ``type`` for ``label``; ``end``
    exclusive) or ``[start, end, label]`` triples; a ``ClassLabel`` label is mapped to its name. Arrow may
    store the records as one ``{start: [...], end: [...], label: [...]}`` mapping: that is read too."""
    if isinstance(value, dict):  # a Sequence of structs, stored column-wise
        key = "label" if "label" in value else "type"
        value = [{"start": a, "end": b, "label": c} for a, b, c in zip(value["start"], value["end"], value[key])]
    out = []
    for item in value or []:
        try:
            if isinstance(item, dict):
                start, end, label = item["start"], item["end"], item["label"] if "label" in item else item["type"]
            else:
                start, end, label = item
        except (KeyError, TypeError, ValueError):
            raise DataFormatError(f"span {item!r} is not {{start, end, label}} nor [start, end, label]",
                                  where) from None
        if names is not None and not isinstance(label, str):
            if type(label) is not int or not 0 <= label < len(names):
                raise DataFormatError(f"span {item!r}: label {_outside(label, len(names))}", where)
            label = names[label]
        out.append(Span(int(start), int(end), str(label)))
    return out


def _span_label_names(feature: Any) -> list[str] | None:
    """``ClassLabel`` names of the label inside a spans feature (list of structs), else ``None``."""
    inner = getattr(feature, "feature", feature)
    inner = inner[0] if isinstance(inner, list) and inner else inner
    if isinstance(inner, dict):
        label = inner.get("label", inner.get("type"))
        label = getattr(label, "feature", label)  # Sequence(struct) stores each field as a sequence
        names = getattr(label, "names", None)
        return list(names) if names else None
    return None


def dataset_sentences(ds: Any, label: str, split: str, tokens_field: str = "tokens",
                      tags_field: str | None = "ner_tags", spans_field: str | None = None,
                      doc_id_field: str | None = None, scheme: str | TagScheme | None = None,
                      tag_names: Sequence[str] | None = None,
                      columns: dict[str, str] | None = None) -> SentenceList:
    """The sentences of one ``datasets.Dataset`` (see :func:`read_hf` for the arguments).

    Gold spans come from ``spans_field`` when given (nested allowed), else from ``tags_field``. With
    ``doc_id_field`` consecutive rows of one id form a document (``index`` counts within it); without it,
    each row is its own document ``"<label>:<row>"``.
    """
    where = f"{label}[{split}]"
    if spans_field:
        tags_field = None
    wanted = [tokens_field] + [f for f in (tags_field, spans_field, doc_id_field) if f] + list((columns or {}).values())
    for field in wanted:
        if field not in ds.column_names:
            raise DataFormatError(f"no field {field!r} (fields: {ds.column_names})", where)
    if len(ds) == 0:
        raise DataFormatError("the split is empty (no rows)", where)
    tokens = ds[tokens_field]
    tags = spans = None
    if tags_field:
        names = list(tag_names) if tag_names is not None else _names(ds.features[tags_field])
        tags = _strings(ds[tags_field], names, tags_field, where)
    if spans_field:
        span_names = list(tag_names) if tag_names is not None else _span_label_names(ds.features[spans_field])
        spans = ds[spans_field]
    doc_ids = ds[doc_id_field] if doc_id_field else None
    extra = {name: _strings(ds[f], _names(ds.features[f]), f, where) for name, f in (columns or {}).items()}
    out = SentenceList(path=label, notes={"split": split})
    tagged = []
    index, previous = 0, object()
    for i, words in enumerate(tokens):
        source = f"{where}#{i}"
        words = _words(words, tokens_field, source)
        gold = []
        if tags is not None:
            row = tags[i]
            if len(row) != len(words):
                raise DataFormatError(f"{len(row)} tags for {len(words)} tokens", source)
            if row.count(OUTSIDE) != len(row):
                gold = tags_to_spans(row, where=source)
                tagged.append(row)
        elif spans is not None:
            gold = _span_list(spans[i], span_names, source)
        if doc_ids is None:
            doc_id, index = f"{label}:{i}", 0
        else:
            doc_id = str(doc_ids[i])
            index = index + 1 if doc_id == previous else 0
            previous = doc_id
        cols = {name: list(v[i]) for name, v in extra.items()}
        out.append(Sentence(list(words), gold, cols, doc_id, index, source))
    if tags is not None:
        out.scheme = TagScheme.parse(scheme) if scheme is not None else detect_scheme(tagged)
    return out


@gc_paused
def read_hf(name_or_path: str | os.PathLike[str], split: str = "train", tokens_field: str = "tokens",
            tags_field: str | None = "ner_tags", scheme: str | TagScheme | None = None,
            tag_names: Sequence[str] | None = None, columns: dict[str, str] | None = None,
            cache_dir: str | None = None, name: str | None = None, spans_field: str | None = None,
            doc_id_field: str | None = None) -> SentenceList:
    """Read a token-classification split from the Hugging Face hub or a local file.

    Args:
        name_or_path: a hub id (needs network or the datasets cache), a folder written by
            ``save_to_disk``, a data folder, or a ``.parquet``/``.json(l)``/``.csv``/``.arrow`` file.
        split: the split to read (for a single local file, the name given to its only split).
        tokens_field: field holding the words.
        tags_field: field holding the tags (strings, or integers of a ``ClassLabel``); ``None`` for
            unlabelled text.
        scheme: tag scheme; ``None`` detects it over the split (as :func:`read_conll` does).
        tag_names: names for integer tags (or span labels) when the feature is not a ``ClassLabel``.
        columns: extra per-token fields to keep, ``{sentence column name: dataset field}``, e.g.
            ``{"pos": "pos_tags"}`` (``ClassLabel`` values are mapped to names).
        cache_dir: ``datasets`` cache folder (``None``: the library default).
        name: the dataset's configuration name on the hub (e.g. ``"en"``).
        spans_field: field holding gold spans instead of tags (nested allowed; see :func:`dataset_sentences`).
        doc_id_field: field holding document ids (consecutive rows of one id are one document).

    Returns:
        A :class:`SentenceList`; each row is its own document ``"<name>:<row>"`` unless ``doc_id_field``
        is given.

    Raises:
        DataFormatError: a missing field, a bad tag, or a dataset that cannot be loaded.
    """
    ds = load_hf(name_or_path, split, name=name, cache_dir=cache_dir)
    label = Path(name_or_path).name if Path(name_or_path).exists() else str(name_or_path)
    out = dataset_sentences(ds, label, split, tokens_field, tags_field, spans_field, doc_id_field, scheme,
                            tag_names, columns)
    out.path = name_or_path
    return out
