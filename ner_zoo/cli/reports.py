"""Non-training commands: ``score``, ``data stats``, ``compare`` and ``configs``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ner_zoo.cli.args import ArgumentParser, add_encoding, add_overwrite
from ner_zoo.io import atomic_write, check_output


def score_main(argv: Sequence[str]) -> int:
    """``ner-zoo score FILE``: conlleval-style scores of a prediction file.

    A CoNLL file is read as ``token ... gold predicted`` (the last two columns, any tag scheme, read with
    conlleval's rules); a ``.jsonl`` file as written by ``ner-zoo predict --output_format jsonl`` (gold and
    predicted spans, nested allowed).

    ``--by`` breaks the scores down instead: ``length`` (entity length in tokens), ``nesting`` (``nested``: the
    span contains or lies inside another gold span of its sentence, else ``flat``) or ``train_frequency`` (the
    training frequency of the span's least frequent token, 0 / 1 / 2-5 / >5; ``--train`` gives the training
    split: a CoNLL or JSONL file, or a corpus name read from $NER_ZOO_DATA). Gold and predicted spans go to the
    same buckets by the same rule, so every bucket has a precision and a recall.
    """
    p = ArgumentParser(prog="ner-zoo score", description=score_main.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path)
    p.add_argument("--format", default="auto", choices=["auto", "conll", "jsonl"])
    p.add_argument("--by", choices=["length", "nesting", "train_frequency"], help="break the scores down by this")
    p.add_argument("--train", help="training split for --by train_frequency: a file or a corpus name")
    p.add_argument("--output", type=Path, help="with --by: also write breakdown_<by>.md and .json into this folder")
    add_overwrite(p)
    add_encoding(p)
    a = p.parse_args(argv)
    fmt = a.format
    if fmt == "auto":
        fmt = "jsonl" if a.file.suffix in (".jsonl", ".json", ".jsonlines") else "conll"
    if a.by == "train_frequency" and not a.train:
        p.error("--by train_frequency needs --train (a training file or a corpus name)")
    if a.output is not None and a.by is None:
        p.error("--output needs --by (it is the folder of the breakdown tables)")
    targets = [] if a.output is None else [a.output / f"breakdown_{a.by}.{ext}" for ext in ("md", "json")]
    for target in targets:  # before any work
        check_output(target, [a.file] + ([a.train] if a.train else []), a.overwrite)
    from ner_zoo.metrics import conlleval_report, score_spans_report

    if fmt == "conll":
        from ner_zoo.data.readers import read_prediction_conll

        gold, pred, tokens = read_prediction_conll(a.file, encoding=a.encoding, with_tokens=True,
                                                     encoding_option="--encoding")
        nothing_to_score(tokens, a.file)
        if a.by is None:
            print(conlleval_report(gold, pred))
            return 0
        from ner_zoo.data.tagging import tags_to_spans

        gold = [tags_to_spans(t, where=f"{a.file}: gold sentence {i}") for i, t in enumerate(gold)]
        pred = [tags_to_spans(t, where=f"{a.file}: predicted sentence {i}") for i, t in enumerate(pred)]
    else:
        from ner_zoo.data.writers import read_prediction_jsonl

        gold, pred, tokens = read_prediction_jsonl(a.file, with_tokens=True, encoding=a.encoding,
                                                     encoding_option="--encoding")
        nothing_to_score(tokens, a.file)
        if a.by is None:
            print(score_spans_report(gold, pred))
            return 0
    from ner_zoo.metrics.functional import breakdown_counts

    bucketer = make_bucketer(a.by, a.train, p, a.encoding)
    write_breakdown(breakdown_counts(pred, gold, bucketer, tokens), a.by, a.output, a.overwrite)
    return 0


def make_bucketer(by: str, train: str | None, parser: argparse.ArgumentParser, encoding: str | None = None):
    """The bucketer of ``--by``; ``train_frequency`` counts the words of ``train`` (a file or a corpus name)."""
    from ner_zoo.metrics.functional import FrequencyBucketer, LengthBucketer, NestingBucketer

    if by == "length":
        return LengthBucketer()
    if by == "nesting":
        return NestingBucketer()
    from collections import Counter

    return FrequencyBucketer(Counter(w for s in training_sentences(train, parser, encoding) for w in s.tokens))


def training_sentences(train: str, parser: argparse.ArgumentParser, encoding: str | None = None) -> list:
    """Sentences of a CoNLL / JSONL training file, or of the ``train`` split of a corpus named ``train``."""
    from ner_zoo.data import readers

    path = Path(train)
    if path.exists():
        read = readers.read_nested_json if path.suffix in (".jsonl", ".json") else readers.read_conll
        return read(path, encoding=encoding, encoding_option="--encoding")
    return list(corpus_class(train, parser)().sentences("train"))


def nothing_to_score(tokens: list, path: object) -> None:
    """A file without a single token line holds no predictions: an error, not a report of 0 tokens."""
    if not any(tokens):
        from ner_zoo.errors import DataFormatError

        raise DataFormatError("holds no predictions to score (no token lines: the file is empty, blank or only "
                              "-DOCSTART-)", path)


def write_breakdown(counts, by: str, output: Path | None, overwrite: bool = False) -> None:
    """Print the breakdown table; with ``output``, also write it as ``breakdown_<by>.md`` and ``.json`` (checked
    beforehand with :func:`~ner_zoo.io.check_output`)."""
    import json

    from ner_zoo.metrics.functional import breakdown_json, breakdown_markdown

    table = breakdown_markdown(counts, by)
    print(table, end="")
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        with atomic_write(output / f"breakdown_{by}.md", overwrite=overwrite) as f:
            f.write(table)
        with atomic_write(output / f"breakdown_{by}.json", overwrite=overwrite) as f:
            json.dump(breakdown_json(counts), f, indent=1)


def _parse_files(items: Sequence[str], parser: argparse.ArgumentParser) -> dict[str, Path]:
    out = {}
    for item in items:
        split, sep, path = item.partition("=")
        if not sep or not split or not path:
            parser.error(f"--files takes SPLIT=PATH items (e.g. train=data/train.conll), got {item!r}")
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
    p = ArgumentParser(prog="ner-zoo data", description=data_main.__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stats", help="per-split sentence, token and entity counts")
    st.add_argument("corpus", nargs="?", help="a corpus name (e.g. conll2003, genia) read from $NER_ZOO_DATA")
    st.add_argument("--data_dir", help="the corpus folder (default: $NER_ZOO_DATA/<corpus>)")
    st.add_argument("--files", nargs="+", default=[], help="SPLIT=PATH items for a generic corpus")
    st.add_argument("--format", default="conll", choices=["conll", "json", "ptb"], help="format of --files")
    add_encoding(st)
    a = p.parse_args(argv)
    from ner_zoo.data.stats import corpus_stats, format_stats

    if a.corpus:
        if a.files:
            st.error("give a corpus name or --files, not both")
        from ner_zoo.data.corpora import ColumnCorpus  # plain corpora: no Lightning

        cls = corpus_class(a.corpus, st)
        if a.encoding and not issubclass(cls, ColumnCorpus):
            st.error(f"--encoding applies to --files and to CoNLL-column corpora, not to {a.corpus}")
        corpus = cls(data_dir=a.data_dir, **({"encoding": a.encoding} if a.encoding else {}))
        corpus.encoding_option = "--encoding"  # what sets the encoding here, named in the readers' messages
        splits = {s: corpus.sentences(s) for s in ("train", "dev", "test")}
    elif a.files:
        from ner_zoo.data import readers

        read = {"conll": readers.read_conll, "json": readers.read_nested_json, "ptb": readers.read_ptb}[a.format]
        splits = {split: read(path, encoding=a.encoding, encoding_option="--encoding")
                  for split, path in _parse_files(a.files, st).items()}
    else:
        st.error("give a corpus name (e.g. conll2003) or --files SPLIT=PATH ...")
    print(format_stats(corpus_stats(splits)))
    return 0


def compare_main(argv: Sequence[str]) -> int:
    from ner_zoo.results.compare import compare_main as compare

    return compare(argv, parser_class=ArgumentParser)


def configs_main(argv: Sequence[str]) -> int:
    """``ner-zoo configs``: the configs shipped in the package, by the name ``--config`` takes, with model,
    dataset and the paper's number. Ablations (``<paper>/ablations/*``) go on top of the paper's main config;
    ``experiments/*`` are recipe overlays and run matrices (``tools/run_matrix.py``)."""
    p = ArgumentParser(prog="ner-zoo configs", description=configs_main.__doc__)
    p.add_argument("--path", action="store_true", help="print the folder holding them and exit")
    a = p.parse_args(argv)
    from ner_zoo.cli.configs_page import plain
    from ner_zoo.cli.packaged_configs import PACKAGED

    print(PACKAGED if a.path else plain(PACKAGED))
    return 0
