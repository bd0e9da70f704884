"""``ner-zoo predict --ckpt_path CKPT --input FILE``: predictions from a checkpoint alone.

The checkpoint carries the vocabularies, label set and tag scheme, so no training file or config is
needed. Input: a CoNLL file (first column tokens; the last column is read as gold tags when there are
two or more columns), a raw text file (one whitespace-tokenised sentence per line) or JSON lines with
``tokens``. Output: CoNLL (token, gold tag when known, predicted tag) or JSON lines with spans.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path
from typing import Sequence

from ner_zoo.cli.args import (ACCELERATORS, PRECISIONS, ArgumentParser, add_encoding, add_overwrite,
                              check_accelerator, positive_int)
from ner_zoo.data.readers.common import read_bytes, read_text
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import DataFormatError
from ner_zoo.io import atomic_write, check_output, is_stream
from ner_zoo.training.inference import load_model, predict


def read_raw_text(path: Path, data: bytes | None = None, encoding: str | None = None) -> list[Sentence]:
    """One sentence per non-empty line, split on whitespace; decoded as corpora are (UTF-8, BOM dropped,
    Latin-1 fallback with a warning). ``source`` keeps the line number."""
    text, _ = read_text(path, encoding, data=data)
    sents = [Sentence(tokens=line.split(), source=f"{path}:{n}")
             for n, line in enumerate(text.split("\n"), 1) if line.split()]
    if not sents:
        raise DataFormatError("no sentences (the file is empty or blank)", path)
    return sents


_TAG = re.compile(r"^(O|[BIESLU]-\S+)$")


def looks_like_conll(text: str) -> bool:
    """Every non-blank line has the same number (>= 2) of columns and ends in a tag (``O``, ``B-PER`` ...)."""
    rows = [ln.split() for ln in text.split("\n") if ln.strip() and not ln.startswith("-DOCSTART-")]
    return bool(rows) and len({len(r) for r in rows}) == 1 and len(rows[0]) >= 2 and all(_TAG.match(r[-1]) for r in rows)


def sniff_format(path: Path, text: str) -> str:
    """``conll``, ``text`` or ``jsonl`` from the suffix and the content (a ``.txt`` file in CoNLL columns is
    CoNLL; a file without a known suffix, e.g. a pipe, is JSON lines, CoNLL, or raw text)."""
    suffix = {".txt": "text", ".jsonl": "jsonl", ".json": "jsonl", ".jsonlines": "jsonl"}.get(path.suffix)
    if suffix == "jsonl":
        return suffix
    if looks_like_conll(text):
        return "conll"
    if suffix == "text" or text.lstrip().startswith(("{", "[")):
        return suffix or "jsonl"
    one_column = all(len(ln.split()) <= 1 for ln in text.split("\n"))
    return "conll" if one_column else "text"


def read_input(path: Path, fmt: str, encoding: str | None = None) -> tuple[list[Sentence], bool]:
    """Sentences of ``path`` and whether they carry gold labels; the file is read once (a pipe works)."""
    data = read_bytes(path)
    head = data[:65536].decode(encoding or "utf-8-sig", errors="replace").replace("\r", "")
    if len(data) > 65536:
        head = head.rsplit("\n", 1)[0]  # the last line may be cut
    if fmt == "auto":
        fmt = sniff_format(path, head)
    if fmt == "text":
        return read_raw_text(path, data, encoding), False
    if fmt == "jsonl":
        from ner_zoo.data.readers import read_nested_json

        return read_nested_json(path, encoding=encoding, data=data), True
    from ner_zoo.data.readers import read_conll

    first = next((ln.split() for ln in head.split("\n") if ln.strip() and not ln.startswith("-DOCSTART-")), [])
    labelled = len(first) >= 2
    return read_conll(path, token_column=0, label_column=-1 if labelled else None, encoding=encoding,
                      data=data), labelled


def write_tags(path: Path, sentences: list[Sentence], tags: list[list[str]], gold_column: str | None) -> None:
    """POS output: ``token [gold] predicted`` per line (the gold column when the input had one)."""

    with atomic_write(path) as f:
        for sent, pred in zip(sentences, tags):
            gold = sent.columns.get(gold_column) if gold_column else None
            for i, (tok, tag) in enumerate(zip(sent.tokens, pred)):
                f.write(f"{tok} {gold[i]} {tag}\n" if gold else f"{tok} {tag}\n")
            f.write("\n")


def without_gold(sentences: list[Sentence], tag_column: str | None) -> list[Sentence]:
    """The sentences with gold spans (and the gold tag column) removed: gold is not needed to predict, and a gold
    label the model never saw must not block prediction."""
    return [dataclasses.replace(s, spans=[], columns={k: v for k, v in s.columns.items() if k != tag_column})
            for s in sentences]


def default_output(path: Path, fmt: str) -> Path:
    """``<input>.pred.<format>``, keeping the input's full name (``eng.testb`` -> ``eng.testb.pred.conll``)."""
    if not path.is_file():
        raise DataFormatError("the input is not a regular file (a pipe?): pass --output", path)
    return path.with_name(f"{path.name}.pred.{fmt}")


def predict_main(argv: Sequence[str]) -> int:
    p = ArgumentParser(prog="ner-zoo predict", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt_path", required=True, help="checkpoint written by ner-zoo fit")
    p.add_argument("--input", required=True, type=Path, help="CoNLL, raw text or JSON-lines file (a pipe works)")
    p.add_argument("--input_format", default="auto", choices=["auto", "conll", "text", "jsonl"],
                   help="auto: from the suffix and the content (a .txt file in CoNLL columns is read as CoNLL)")
    p.add_argument("--output", help="output file (default: <input>.pred.<format>); never an existing file unless "
                   "--overwrite, never the input; -, /dev/stdout or a pipe is written in place")
    p.add_argument("--output_format", default="auto", choices=["auto", "conll", "jsonl"],
                   help="auto: jsonl for nested NER (tags cannot hold nested spans), else conll")
    add_overwrite(p)
    add_encoding(p)
    p.add_argument("--batch_size", type=positive_int, default=64)
    p.add_argument("--accelerator", default="auto", choices=ACCELERATORS)
    p.add_argument("--precision", default="32-true", choices=PRECISIONS)
    a = p.parse_args(argv)
    check_accelerator(a.accelerator)
    if a.output is not None:  # before the input is read and the (slow) model loaded
        check_output(a.output, [a.input, a.ckpt_path], a.overwrite)
    sentences, labelled = read_input(a.input, a.input_format, a.encoding)
    model = load_model(a.ckpt_path)
    fmt = a.output_format
    if fmt == "auto":
        fmt = "jsonl" if model.task == "nested_ner" else "conll"
    out = a.output
    if out is None:
        out = default_output(a.input, fmt)
        check_output(out, [a.input, a.ckpt_path], a.overwrite)
    preds = predict(model, without_gold(sentences, model.vocabs.tag_column), a.batch_size, a.accelerator,
                    precision=a.precision)
    from ner_zoo.data import writers

    if model.task == "pos":
        write_tags(out, sentences, preds, model.vocabs.tag_column if labelled else None)
    elif fmt == "conll":
        # the input's own scheme (conlleval.pl misreads BIOES); IOB2 for unlabelled input
        scheme = getattr(sentences, "scheme", None) or "iob2"
        writers.write_conll(out, sentences, preds, scheme=scheme, with_gold=labelled)
    else:
        writers.write_jsonl(out, sentences, preds)
    # on stderr when the predictions go to stdout, so that they stay alone there
    print(f"wrote {len(sentences)} sentences to {out}", file=sys.stderr if is_stream(out) else sys.stdout)
    return 0
