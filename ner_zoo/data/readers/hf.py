"""Hugging Face ``datasets`` token-classification data (hub id or local file/folder) as sentences."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ner_zoo.data.readers.common import SentenceList, gc_paused
from ner_zoo.data.schema import Sentence
from ner_zoo.data.tagging import OUTSIDE, TagScheme, detect_scheme, tags_to_spans
from ner_zoo.errors import DataFormatError

_BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".jsonlines": "json", ".csv": "csv",
             ".arrow": "arrow"}
_SAVED_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")


def _load(name_or_path: str | os.PathLike[str], split: str, cache_dir: str | None) -> Any:
    import datasets  # slow import: only when this reader is used

    p = Path(name_or_path)
    try:
        if p.is_dir() and any((p / m).exists() for m in _SAVED_MARKERS):
            ds = datasets.load_from_disk(str(p))
            return ds[split] if isinstance(ds, datasets.DatasetDict) else ds
        if p.is_file():
            builder = _BUILDERS.get(p.suffix.lower())
            if builder is None:
                raise DataFormatError(f"unsupported file type {p.suffix!r}; use one of {sorted(_BUILDERS)}", p)
            return datasets.load_dataset(builder, data_files={split: str(p)}, split=split, cache_dir=cache_dir)
        return datasets.load_dataset(str(name_or_path), split=split, cache_dir=cache_dir)
    except DataFormatError:
        raise
    except (KeyError, ValueError, FileNotFoundError, ConnectionError, OSError) as e:
        raise DataFormatError(f"cannot load split {split!r}: {type(e).__name__}: {e}", name_or_path,
                              hint="a hub id needs network access (unset HF_DATASETS_OFFLINE) or a cached copy") from e


def _names(feature: Any) -> list[str] | None:
    """Class names of a ``List(ClassLabel)``/``Sequence(ClassLabel)`` feature, else ``None``."""
    inner = getattr(feature, "feature", None)
    names = getattr(inner, "names", None)
    return list(names) if names else None


def _strings(values: list, names: list[str] | None, field: str, where: str) -> list[list[str]]:
    if names is not None:
        try:
            return [[names[v] for v in row] for row in values]
        except (IndexError, TypeError):
            raise DataFormatError(f"field {field!r} holds a value outside its {len(names)} class names",
                                  where) from None
    for row in values:
        if row and not isinstance(row[0], str):
            raise DataFormatError(f"field {field!r} holds {type(row[0]).__name__} values and has no ClassLabel "
                                  "names", where, hint="pass tag_names=[...] to map integers to tag strings")
    return values


@gc_paused
def read_hf(name_or_path: str | os.PathLike[str], split: str = "train", tokens_field: str = "tokens",
            tags_field: str | None = "ner_tags", scheme: str | TagScheme | None = None,
            tag_names: Sequence[str] | None = None, columns: dict[str, str] | None = None,
            cache_dir: str | None = None) -> SentenceList:
    """Read a token-classification split from the Hugging Face hub or a local file.

    Args:
        name_or_path: a hub id (needs network or the datasets cache), a folder written by
            ``save_to_disk``, a data folder, or a ``.parquet``/``.json(l)``/``.csv``/``.arrow`` file.
        split: the split to read (for a single local file, the name given to its only split).
        tokens_field: field holding the words.
        tags_field: field holding the tags (strings, or integers of a ``ClassLabel``); ``None`` for
            unlabelled text.
        scheme: tag scheme; ``None`` detects it over the split (as :func:`read_conll` does).
        tag_names: names for integer tags when the feature is not a ``ClassLabel``.
        columns: extra per-token fields to keep, ``{sentence column name: dataset field}``, e.g.
            ``{"pos": "pos_tags"}`` (``ClassLabel`` values are mapped to names).
        cache_dir: ``datasets`` cache folder (``None``: the library default).

    Returns:
        A :class:`SentenceList`; each row is its own document ``"<name>:<row>"``.

    Raises:
        DataFormatError: a missing field, a bad tag, or a dataset that cannot be loaded.
    """
    ds = _load(name_or_path, split, cache_dir)
    label = Path(name_or_path).name if Path(name_or_path).exists() else str(name_or_path)
    where = f"{label}[{split}]"
    wanted = [tokens_field] + ([tags_field] if tags_field else []) + list((columns or {}).values())
    for field in wanted:
        if field not in ds.column_names:
            raise DataFormatError(f"no field {field!r} (fields: {ds.column_names})", where)
    tokens = ds[tokens_field]
    tags = None
    if tags_field:
        names = list(tag_names) if tag_names is not None else _names(ds.features[tags_field])
        tags = _strings(ds[tags_field], names, tags_field, where)
    extra = {name: _strings(ds[f], _names(ds.features[f]), f, where) for name, f in (columns or {}).items()}
    out = SentenceList(path=name_or_path, notes={"split": split})
    tagged = []
    for i, words in enumerate(tokens):
        source = f"{where}#{i}"
        spans = []
        if tags is not None:
            row = tags[i]
            if len(row) != len(words):
                raise DataFormatError(f"{len(row)} tags for {len(words)} tokens", source)
            if row.count(OUTSIDE) != len(row):
                spans = tags_to_spans(row, where=source)
                tagged.append(row)
        cols = {name: list(v[i]) for name, v in extra.items()}
        out.append(Sentence(list(words), spans, cols, f"{label}:{i}", 0, source))
    if tags is not None:
        out.scheme = TagScheme.parse(scheme) if scheme is not None else detect_scheme(tagged)
    return out
