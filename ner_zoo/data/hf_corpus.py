"""Any Hugging Face ``datasets`` corpus as a DataModule: a hub id, a ``save_to_disk`` folder, or data files.

``datasets`` is used (rather than a reader per format) because it already reads the hub, its cache (offline
use), Arrow folders and parquet/JSON/CSV files into one typed table, and its features carry the tag names
(``ClassLabel``) that integer tags need. Reading goes through :mod:`ner_zoo.data.readers.hf`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ner_zoo.data.datamodule import NERDataModule, Task
from ner_zoo.data.schema import Sentence

#: dataset split names tried for each of ours, in order (``validation`` is the hub's name for dev)
DEFAULT_SPLITS = {"train": ("train",), "dev": ("validation", "dev", "valid", "val"), "test": ("test",)}


class HFCorpus(NERDataModule):
    """A token-classification corpus read with Hugging Face ``datasets``.

    Args:
        source: a hub id (``conll2003``, ``tner/wnut2017``; needs network once, then the ``datasets`` cache,
            also with ``HF_DATASETS_OFFLINE=1``), a folder written by ``save_to_disk``, a folder of data files
            (splits from their names: ``train.parquet``, ``validation.parquet``...), or one data file (its only
            split is ``train``). Relative to ``data_dir`` when that is given.
        name: the hub dataset's configuration name (e.g. ``en``).
        data_files: ``{split: file}`` of ``.parquet``/``.json``/``.jsonl``/``.csv``/``.arrow`` files, relative
            to ``data_dir`` (or the working directory), instead of ``source``; split names as ``splits``.
        splits: ``{train|dev|test: dataset split}``; a split left out is found by name (train: ``train``;
            dev: ``validation``, ``dev``, ``valid``, ``val``; test: ``test``). No dev split: dev is carved from
            train (``dev_fraction``, ``split_seed``).
        tokens_column: column of the words.
        tags_column: column of the tags: strings, or integers with their names from the ``ClassLabel`` feature
            (or ``tag_names``). Any of IOB1, IOB2 (BIO), BIOES; detected.
        spans_column: column of gold spans instead of tags, for nested corpora: per row a list of
            ``{start, end, label}`` (``end`` exclusive; ``type`` is read as ``label``) or ``[start, end,
            label]``. Sets ``task`` to ``nested_ner`` unless given.
        doc_id_column: column of document ids (consecutive rows of one id are one document, for models that
            read document context). ``None``: each row is its own document.
        tag_names: names of integer tags (or span labels) when the feature has none.
        columns: extra per-token columns to keep, ``{name: dataset column}`` (e.g. ``{pos: pos_tags}``).
        task: ``ner`` (flat), ``nested_ner``, ``chunk``; ``None``: ``nested_ner`` with ``spans_column``, else
            ``ner``.
        cache_dir: the ``datasets`` cache folder (``None``: its default, ``~/.cache/huggingface``).
        **kwargs: see :class:`NERDataModule`.
    """

    def __init__(self, source: str | None = None, name: str | None = None, data_files: dict[str, str] | None = None,
                 splits: dict[str, str] | None = None, tokens_column: str = "tokens",
                 tags_column: str | None = "ner_tags", spans_column: str | None = None,
                 doc_id_column: str | None = None, tag_names: list[str] | None = None,
                 columns: dict[str, str] | None = None, task: Task | None = None, cache_dir: str | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if source is None and not data_files:
            raise ValueError("HFCorpus needs a source (hub id, folder or file) or data_files")
        unknown = set(splits or {}) - set(DEFAULT_SPLITS)
        if unknown:
            raise ValueError(f"splits keys must be train, dev, test (got {sorted(unknown)})")
        self.source, self.name, self.data_files = source, name, dict(data_files or {})
        self.split_map = dict(splits or {})
        self.tokens_column, self.tags_column, self.spans_column = tokens_column, tags_column, spans_column
        self.doc_id_column, self.tag_names, self.columns = doc_id_column, tag_names, dict(columns or {})
        self.task = task or ("nested_ner" if spans_column else "ner")
        self.cache_dir = cache_dir
        self._dataset: Any = None

    @property
    def location(self) -> str:
        """The source as given, under ``data_dir`` when that is set (a hub id is left alone if no such path)."""
        if self.data_dir is not None and self.source is not None and (Path(self.data_dir) / self.source).exists():
            return str(Path(self.data_dir) / self.source)
        return self.source if self.source is not None else (self.data_dir or ".")

    @property
    def label(self) -> str:
        if self.source is None:
            return Path(self.location).resolve().name
        return Path(self.location).name if Path(self.location).exists() else str(self.source)

    def dataset(self) -> Any:
        """The ``DatasetDict`` (loaded once)."""
        if self._dataset is None:
            import datasets

            from ner_zoo.data.readers.hf import load_hf

            if self.data_files:
                ds = load_hf(self.data_dir, data_files=self.data_files, cache_dir=self.cache_dir)
            else:
                ds = load_hf(self.location, name=self.name, cache_dir=self.cache_dir)
            self._dataset = ds if isinstance(ds, datasets.DatasetDict) else datasets.DatasetDict(train=ds)
            self.notes["hf_source"] = {"source": self.source, "name": self.name, "data_files": self.data_files or None,
                                       "splits": {k: v for k in DEFAULT_SPLITS if (v := self.dataset_split(k))}}
        return self._dataset

    def dataset_split(self, split: str) -> str | None:
        """The dataset's split read as ``split`` (``train``/``dev``/``test``), or ``None`` if it has none."""
        ds = self._dataset if self._dataset is not None else self.dataset()
        if split in self.split_map:
            if self.split_map[split] not in ds:
                from ner_zoo.errors import DataFormatError

                raise DataFormatError(f"no split {self.split_map[split]!r} (splits: {sorted(ds)})", self.location)
            return self.split_map[split]
        return next((name for name in DEFAULT_SPLITS[split] if name in ds), None)

    def split_path(self, split: str) -> Path | None:  # where errors point; None when the split is missing
        name = self.dataset_split(split)
        return None if name is None else Path(f"{self.label}[{name}]")

    def _read(self, split: str) -> list[Sentence]:
        from ner_zoo.data.readers.hf import dataset_sentences

        name = self.dataset_split(split)
        if name is None:
            raise FileNotFoundError(f"{self.label} has no {split} split (splits: {sorted(self.dataset())}); "
                                    "name it in data.init_args.splits")
        sents = dataset_sentences(self.dataset()[name], self.label, name, self.tokens_column, self.tags_column,
                                  self.spans_column, self.doc_id_column, None, self.tag_names, self.columns)
        return self._prepare(sents, self.split_path(split))
