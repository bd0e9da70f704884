"""``ner-zoo predict --ckpt_path CKPT --input FILE``: predictions from a checkpoint alone.

The checkpoint carries the vocabularies, label set and tag scheme, so no training file or config is
needed. Input: a CoNLL file (first column tokens; the last column is read as gold tags when there are
two or more columns), a raw text file (one whitespace-tokenised sentence per line) or JSON lines with
``tokens``. Output: CoNLL (token, gold tag when known, predicted tag) or JSON lines with spans.
"""

from __future__ import annotations

import argparse
import importlib
import pickle
from pathlib import Path
from typing import Sequence

import torch
from torch.utils.data import DataLoader

from ner_zoo.data.batching import IndexedDataset
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import CheckpointError, DataFormatError


def read_raw_text(path: Path) -> list[Sentence]:
    """One sentence per non-empty line, split on whitespace."""
    sents = []
    with open(path, encoding="utf-8", errors="strict") as f:
        for n, line in enumerate(f, 1):
            tokens = line.split()
            if tokens:
                sents.append(Sentence(tokens=tokens, source=f"{path}:{n}"))
    if not sents:
        raise DataFormatError("no sentences (the file is empty or blank)", path)
    return sents


def read_input(path: Path, fmt: str) -> tuple[list[Sentence], bool]:
    """Sentences of ``path`` and whether they carry gold labels."""
    if fmt == "auto":
        fmt = {".txt": "text", ".jsonl": "jsonl", ".json": "jsonl", ".jsonlines": "jsonl"}.get(path.suffix, "conll")
    if fmt == "text":
        return read_raw_text(path), False
    if fmt == "jsonl":
        from ner_zoo.data.readers import read_nested_json

        return read_nested_json(path), True
    from ner_zoo.data.readers import read_conll

    with open(path, encoding="utf-8", errors="replace") as f:
        first = next((ln.split() for ln in f if ln.strip() and not ln.startswith("-DOCSTART-")), [])
    labelled = len(first) >= 2
    return read_conll(path, token_column=0, label_column=-1 if labelled else None), labelled


def load_model(ckpt_path: str | Path, map_location: str = "cpu", weights_only: bool = True):
    """Rebuild the model stored in ``ckpt_path`` (class recorded at save time).

    Args:
        ckpt_path: a checkpoint written by ``ner-zoo fit``.
        map_location: device for the weights.
        weights_only: refuse pickled objects (safe on files from others); our checkpoints hold only
            tensors and plain values. ``False`` only for a trusted file that needs it.
    """
    try:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=weights_only, mmap=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"{ckpt_path} holds pickled objects that safe loading refuses ({str(e)[:300]}); "
                              "if you trust the file, load it with weights_only=False") from None
    class_path = ckpt.get("ner_zoo_class") or ckpt.get("hyper_parameters", {}).get("_class_path")
    if class_path is None:
        raise CheckpointError(f"{ckpt_path} was not written by ner-zoo (no model class recorded)")
    module, _, name = class_path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    return cls.load_from_checkpoint(ckpt_path, map_location=map_location, weights_only=weights_only)


def predict(model, sentences: list[Sentence], batch_size: int = 64, accelerator: str = "auto",
            devices: str | int = 1, precision: str = "32-true") -> list:
    """Predictions (spans, or tags for POS) for ``sentences``, in input order."""
    import lightning.pytorch as pl

    loader = DataLoader(IndexedDataset(sentences), batch_size=batch_size,
                        collate_fn=getattr(model, "collate", None) or model.vocabs.collator())
    trainer = pl.Trainer(accelerator=accelerator, devices=devices, precision=precision, logger=False,
                         enable_progress_bar=False, enable_model_summary=False)
    records = [r for batch in trainer.predict(model, loader) for r in batch]
    records.sort(key=lambda r: r["index"])
    return [r["prediction"] for r in records]


def write_tags(path: Path, sentences: list[Sentence], tags: list[list[str]], gold_column: str | None) -> None:
    """POS output: ``token [gold] predicted`` per line (the gold column when the input had one)."""
    from ner_zoo.data.writers import atomic_write

    with atomic_write(path) as f:
        for sent, pred in zip(sentences, tags):
            gold = sent.columns.get(gold_column) if gold_column else None
            for i, (tok, tag) in enumerate(zip(sent.tokens, pred)):
                f.write(f"{tok} {gold[i]} {tag}\n" if gold else f"{tok} {tag}\n")
            f.write("\n")


def predict_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="ner-zoo predict", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt_path", required=True, help="checkpoint written by ner-zoo fit")
    p.add_argument("--input", required=True, type=Path, help="CoNLL, raw text or JSON-lines file")
    p.add_argument("--input_format", default="auto", choices=["auto", "conll", "text", "jsonl"])
    p.add_argument("--output", type=Path, help="output file (default: <input>.pred.<format>)")
    p.add_argument("--output_format", default="auto", choices=["auto", "conll", "jsonl"],
                   help="auto: jsonl for nested NER (tags cannot hold nested spans), else conll")
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--accelerator", default="auto")
    p.add_argument("--precision", default="32-true")
    a = p.parse_args(argv)
    model = load_model(a.ckpt_path)
    sentences, labelled = read_input(a.input, a.input_format)
    preds = predict(model, sentences, a.batch_size, a.accelerator, precision=a.precision)
    fmt = a.output_format
    if fmt == "auto":
        fmt = "jsonl" if model.task == "nested_ner" else "conll"
    out = a.output or a.input.with_suffix(f".pred.{fmt}")
    from ner_zoo.data import writers

    if model.task == "pos":
        write_tags(out, sentences, preds, model.vocabs.tag_column if labelled else None)
    elif fmt == "conll":
        writers.write_conll(out, sentences, preds, scheme=model.vocabs.scheme or "iob2", with_gold=labelled)
    else:
        writers.write_jsonl(out, sentences, preds)
    print(f"wrote {len(sentences)} sentences to {out}")
    return 0
