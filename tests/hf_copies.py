"""Copies of native corpora as Hugging Face ``DatasetDict`` s, for the HFCorpus tests (and docs/own_data.md's).

Tags are IOB2 ``ClassLabel`` ids (as on the hub), or the spans themselves for nested corpora (a list of
``{start, end, label}`` per row); the native document ids travel in a ``doc_id`` column.
"""

from __future__ import annotations

from pathlib import Path

from ner_zoo.data.tagging import spans_to_tags

HF_SPLIT = {"train": "train", "dev": "validation", "test": "test"}


def to_dataset_dict(splits: dict, nested: bool = False):
    """``{train|dev|test: [Sentence]}`` as a ``DatasetDict`` with ``tokens``, ``ner_tags`` (or ``spans``),
    ``doc_id``; ``dev`` is named ``validation``, as on the hub."""
    import datasets

    if nested:
        span = {"start": datasets.Value("int32"), "end": datasets.Value("int32"), "label": datasets.Value("string")}
        features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                      "spans": [span], "doc_id": datasets.Value("string")})
        rows = {k: {"tokens": [s.tokens for s in v], "doc_id": [s.doc_id for s in v],
                    "spans": [[{"start": a, "end": b, "label": c} for a, b, c in s.spans] for s in v]}
                for k, v in splits.items()}
    else:
        tags = {k: [spans_to_tags(s.spans, len(s), "iob2") for s in v] for k, v in splits.items()}
        names = sorted({t for rows in tags.values() for row in rows for t in row}, key=lambda t: (t != "O", t))
        features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                      "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names)),
                                      "doc_id": datasets.Value("string")})
        rows = {k: {"tokens": [s.tokens for s in v], "doc_id": [s.doc_id for s in v],
                    "ner_tags": [[names.index(t) for t in row] for row in tags[k]]} for k, v in splits.items()}
    return datasets.DatasetDict({HF_SPLIT[k]: datasets.Dataset.from_dict(r, features=features) for k, r in rows.items()})


def save_copies(splits: dict, folder: Path, nested: bool = False) -> tuple[Path, Path]:
    """Write the copy twice under ``folder``: ``saved/`` (``save_to_disk``) and ``parquet/<split>.parquet``."""
    dd = to_dataset_dict(splits, nested)
    saved, parquet = folder / "saved", folder / "parquet"
    dd.save_to_disk(str(saved))
    parquet.mkdir(parents=True, exist_ok=True)
    for name, ds in dd.items():
        ds.to_parquet(str(parquet / f"{name}.parquet"))
    return saved, parquet


def key(sentences) -> list[tuple]:
    """What must match between a native reader and HFCorpus: tokens, spans, document and position in it."""
    return [(s.tokens, sorted(s.spans), s.doc_id, s.index) for s in sentences]
