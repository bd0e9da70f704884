"""Non-training commands: ``score``, ``data stats`` and ``compare``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence


def score_main(argv: Sequence[str]) -> int:
    """``ner-zoo score FILE``: conlleval-style scores of a prediction file.

    A CoNLL file is read as ``token ... gold predicted`` (the last two columns, any tag scheme, read with
    conlleval's rules); a ``.jsonl`` file as written by ``ner-zoo predict --output_format jsonl`` (gold and
    predicted spans, nested allowed).
    """
    p = argparse.ArgumentParser(allow_abbrev=False, prog="ner-zoo score", description=score_main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path)
    p.add_argument("--format", default="auto", choices=["auto", "conll", "jsonl"])
    a = p.parse_args(argv)
    fmt = a.format
    if fmt == "auto":
        fmt = "jsonl" if a.file.suffix in (".jsonl", ".json", ".jsonlines") else "conll"
    from ner_zoo.metrics import conlleval_report, score_spans_report

    if fmt == "conll":
        from ner_zoo.data.readers import read_prediction_conll

        gold, pred = read_prediction_conll(a.file)
        print(conlleval_report(gold, pred))
    else:
        from ner_zoo.data.writers import read_prediction_jsonl

        gold, pred = read_prediction_jsonl(a.file)
        print(score_spans_report(gold, pred))
    return 0


def _parse_files(items: Sequence[str]) -> dict[str, Path]:
    out = {}
    for item in items:
        split, sep, path = item.partition("=")
        if not sep:
            raise SystemExit(f"--files takes SPLIT=PATH items, got {item!r}")
        out[split] = Path(path)
    return out


def corpus_class(name: str, parser: argparse.ArgumentParser) -> type:
    """The corpus called ``name`` (case, ``-`` and ``_`` ignored; a unique prefix such as ``conll2002`` is enough
    when it names one corpus)."""
    from ner_zoo.data.corpora import CORPORA

    key = name.lower().replace("-", "").replace("_", "")
    matches = [key] if key in CORPORA else [k for k in sorted(CORPORA) if k.startswith(key)]
    if len(matches) != 1:
        what = "ambiguous" if matches else "unknown"
        parser.error(f"{what} corpus {name!r}; known: {', '.join(matches or sorted(CORPORA))}")
    return CORPORA[matches[0]]


def data_main(argv: Sequence[str]) -> int:
    """``ner-zoo data stats CORPUS`` or ``ner-zoo data stats --files train=F dev=F --format conll``."""
    p = argparse.ArgumentParser(allow_abbrev=False, prog="ner-zoo data", description=data_main.__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stats", help="per-split sentence, token and entity counts", allow_abbrev=False)
    st.add_argument("corpus", nargs="?", help="a corpus name (e.g. conll2003, genia) read from $NER_ZOO_DATA")
    st.add_argument("--data_dir", help="the corpus folder (default: $NER_ZOO_DATA/<corpus>)")
    st.add_argument("--files", nargs="+", default=[], help="SPLIT=PATH items for a generic corpus")
    st.add_argument("--format", default="conll", choices=["conll", "json", "ptb"], help="format of --files")
    a = p.parse_args(argv)
    from ner_zoo.data.stats import corpus_stats, format_stats

    if a.corpus:
        from ner_zoo.data.corpora import CORPORA

        dm = corpus_class(a.corpus, st)(data_dir=a.data_dir)
        splits = {s: dm.sentences(s) for s in ("train", "dev", "test")}
    elif a.files:
        from ner_zoo.data import readers

        read = {"conll": readers.read_conll, "json": readers.read_nested_json, "ptb": readers.read_ptb}[a.format]
        splits = {split: read(path) for split, path in _parse_files(a.files).items()}
    else:
        raise SystemExit("give a corpus name or --files SPLIT=PATH ...")
    print(format_stats(corpus_stats(splits)))
    return 0


def compare_main(argv: Sequence[str]) -> int:
    from ner_zoo.results.compare import compare_main as run

    return run(argv)
