"""``ner-zoo predict --model MODEL --input FILE``: predictions from a checkpoint or an exported folder alone.

The model carries the vocabularies, label set and tag scheme, so no training file or config is needed.
Input (``-`` reads standard input): a CoNLL file (first column tokens; the last column is read as gold tags when
there are two or more columns); raw text (each non-empty line is one text: tokenized with punctuation split off
and split into sentences, see docs/api.md); or JSON lines, each ``{"text": "..."}`` (raw text),
``{"tokens": [...]}`` (pre-tokenized; ``gold_spans`` when present, so predict's own output is valid input) or a
corpus shape (genia, dygie, lal). Output (``-`` writes standard output, line by line as the input arrives):
CoNLL (token, gold tag when known, predicted tag) or JSON lines: ``tokens``, ``gold_spans``, ``pred_spans``,
``pred_scores`` (a confidence in [0, 1] per predicted span) and, for raw text, ``text`` and ``entities``
(``text``, ``label``, ``start``, ``end`` character offsets into ``text``, ``score``).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

from ner_zoo.cli.args import (ACCELERATORS, PRECISIONS, ArgumentParser, add_encoding, add_overwrite,
                              check_accelerator, positive_int)
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.errors import DataFormatError
from ner_zoo.io import atomic_write, check_output, is_stream

_TAG = re.compile(r"^(O|[BIESLU]-\S+)$")
STDIO = Path("-")
SNIFF_BYTES = 65536
#: exit status after the reader of --output closed the pipe (as a shell reports a process ended by SIGPIPE)
BROKEN_PIPE_EXIT = 128 + 13


def looks_like_conll(text: str) -> bool:
    """Every non-blank line has the same number (>= 2) of columns and ends in a tag (``O``, ``B-PER`` ...)."""
    rows = [ln.split() for ln in text.split("\n") if ln.strip() and not ln.startswith("-DOCSTART-")]
    return bool(rows) and len({len(r) for r in rows}) == 1 and len(rows[0]) >= 2 and all(_TAG.match(r[-1]) for r in rows)


FORMAT_NAMES = {"conll": "CoNLL columns", "text": "raw text", "jsonl": "JSON lines"}
#: the share of a file's lines in tag columns above which it is CoNLL (its other lines are then errors at file:line)
MOSTLY = 0.8


def mostly_conll(text: str) -> bool:
    """At least two lines and ``MOSTLY`` of them in columns ending in a tag: a CoNLL file with some bad lines,
    which the CoNLL reader then names (never read as raw text)."""
    rows = [ln.split() for ln in text.split("\n") if ln.strip() and not ln.startswith("-DOCSTART-")]
    tagged = sum(len(r) >= 2 and bool(_TAG.match(r[-1])) for r in rows)
    return tagged >= 2 and tagged >= MOSTLY * len(rows)


def sniff_format(path: Path, text: str) -> str:
    """``conll``, ``text`` or ``jsonl`` from the suffix and the content (a ``.txt`` file in CoNLL columns is
    CoNLL; a file without a known suffix, e.g. a pipe, is JSON lines, CoNLL, or raw text)."""
    suffix = {".txt": "text", ".jsonl": "jsonl", ".json": "jsonl", ".jsonlines": "jsonl"}.get(path.suffix)
    if suffix == "jsonl":
        return suffix
    if looks_like_conll(text) or mostly_conll(text):
        return "conll"
    if any(ln.startswith("-DOCSTART-") for ln in text.split("\n")) and all(
            not ln.strip() or ln.startswith("-DOCSTART-") for ln in text.split("\n")):
        return "conll"  # only document markers: a CoNLL file without sentences (its reader says so), not text
    if suffix == "text" or text.lstrip().startswith(("{", "[")):
        return suffix or "jsonl"
    one_column = all(len(ln.split()) <= 1 for ln in text.split("\n"))
    return "conll" if one_column else "text"


@dataclass
class Record:
    """One unit of input and output: a line of raw text (one or more sentences, ``text`` and token offsets
    kept), or one sentence of tokens."""

    sentences: list[Sentence]
    text: str | None = None
    offsets: list[list] | None = None  # per sentence, its ner_zoo.api.text.Token list
    source: str | None = None
    scheme: str | None = None  # a CoNLL input's tag scheme, written back in it (conlleval.pl misreads BIOES)


class Lines:
    """The decoded lines of a file or of standard input, read as they arrive; UTF-8 (a BOM dropped), a line that
    is not UTF-8 read as Latin-1 with one warning naming the file and line."""

    def __init__(self, path: Path, encoding: str | None = None):
        self.path, self.encoding = path, encoding
        if path == STDIO:
            self.stream = sys.stdin.buffer
        else:
            if path.is_dir():
                raise DataFormatError("is a directory, expected a file", path)
            try:
                self.stream = open(path, "rb")
            except FileNotFoundError:
                raise DataFormatError("file not found", path) from None
        self.name = "<stdin>" if path == STDIO else str(path)
        self.warned = False
        self.lineno = 0

    def _raw_lines(self) -> Iterator[bytes]:
        """The input's lines as bytes, without their ends: LF, CRLF and a lone CR each end a line (a CR-only file
        is read whole first). Compressed or binary input is refused; UTF-16 (by its BOM) is decoded whole."""
        from ner_zoo.data.readers.common import refuse_binary

        first = self.stream.readline()
        head = first if len(first) >= 4096 else first + self.stream.peek(4096)[:4096] \
            if hasattr(self.stream, "peek") else first
        refuse_binary(head, self.name)
        utf16 = (self.encoding or "").replace("_", "-").startswith("utf-16")
        if first[:2] in (b"\xff\xfe", b"\xfe\xff") and self.encoding is None or utf16:  # whole, then lines
            try:
                text = (first + self.stream.read()).decode(self.encoding or "utf-16")
            except UnicodeDecodeError as e:
                raise DataFormatError(f"not {self.encoding or 'UTF-16'} text ({e.reason})", self.name) from None
            self.encoding = "utf-8"  # the lines below are re-encoded
            text = text[1:] if text.startswith("\ufeff") else text
            for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
                yield line.encode("utf-8")
            return
        for raw in itertools.chain([first], self.stream):
            if not raw:
                continue
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            raw = raw[:-1] if raw.endswith(b"\r") else raw
            yield from raw.split(b"\r") if b"\r" in raw else (raw,)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        for raw in self._raw_lines():
            self.lineno += 1
            if self.lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if self.encoding is not None:  # --encoding: that codec, strictly
                try:
                    line = raw.decode(self.encoding)
                except UnicodeDecodeError as e:
                    raise DataFormatError(f"byte {raw[e.start]:#04x} is not {self.encoding}", self.name,
                                          self.lineno) from None
                yield self.lineno, line
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                line = raw.decode("latin-1")
                if not self.warned:
                    warnings.warn(f"{self.name}:{self.lineno}: byte {raw[e.start]:#04x} is not UTF-8; such lines "
                                  "are read as Latin-1 (pass --encoding utf-8 to make this an error)",
                                  UnicodeWarning, stacklevel=2)
                    self.warned = True
            yield self.lineno, line


def text_record(text: str, source: str, split: bool = True) -> Record:
    """A line of raw text: its sentences, one document (named by ``source``), as :meth:`ner_zoo.Tagger.tag` makes a
    text (a model that reads document context reads the line's other sentences)."""
    from ner_zoo.api.text import sentences

    sents = sentences(text, split=split)
    return Record([Sentence([t.text for t in s], source=source, index=i, doc_id=source) for i, s in enumerate(sents)],
                  text=text, offsets=sents, source=source)


def json_record(obj: object, where: str) -> Record:
    """A ``{"text"}`` or ``{"tokens"[, "gold_spans"]}`` line (predict's own output is one)."""
    if isinstance(obj, dict) and isinstance(obj.get("text"), str) and "tokens" not in obj:
        return text_record(obj["text"], where)
    if not isinstance(obj, dict) or "tokens" not in obj:
        keys = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise DataFormatError(f"expected a JSON object with 'text' or 'tokens' (keys: {keys})", where)
    tokens = obj["tokens"]
    if not isinstance(tokens, list) or not all(isinstance(t, str) and t.strip() for t in tokens):
        raise DataFormatError("'tokens' must be a list of non-empty strings", where)
    gold = []
    for item in obj.get("gold_spans") or []:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], int) and isinstance(item[1], int)
                and isinstance(item[2], str) and 0 <= item[0] < item[1] <= len(tokens)):
            raise DataFormatError(f"'gold_spans' item {item!r} is not [start, end, label] within the tokens", where)
        gold.append(Span(*item))
    return Record([Sentence(list(tokens), spans=gold, source=where)], source=where)


def records(path: Path, fmt: str, split: bool, encoding: str | None = None) -> tuple[Iterator[Record], str, bool]:
    """The input's records (read lazily for raw text and JSON lines), its format and whether it carries gold."""
    lines = Lines(path, encoding)
    it = iter(lines)
    head: list[tuple[int, str]] = []
    if fmt == "auto":  # sniff on the first 64 KiB (or the whole input when shorter)
        size = 0
        for item in it:
            head.append(item)
            size += len(item[1]) + 1
            if size >= SNIFF_BYTES:
                break
        shown = head[:-1] if size >= SNIFF_BYTES else head  # the last line may be cut short: left out
        fmt = sniff_format(Path("") if path == STDIO else path, "\n".join(ln for _, ln in shown))
    all_lines = itertools.chain(head, it)
    name = lines.name
    if fmt == "text":
        recs = (text_record(ln, f"{name}:{n}", split) for n, ln in all_lines if ln.strip())
        return recs, fmt, False
    if fmt == "jsonl":
        first = next(((n, ln) for n, ln in all_lines if ln.strip()), None)
        if first is None:
            raise DataFormatError("no records (the input is empty or blank)", name)
        try:
            obj = json.loads(first[1])
        except json.JSONDecodeError:
            obj = None
        from ner_zoo.data.readers.nested_json import detect_shape

        own = isinstance(obj, dict) and ("pred_spans" in obj or "gold_spans" in obj)  # predict's own output
        if obj is None or (detect_shape(obj) is not None and not own):  # a corpus file or a JSON list
            from ner_zoo.data.readers import read_nested_json

            data = "\n".join(ln for _, ln in itertools.chain([first], all_lines)).encode()
            return (Record([s], source=s.source) for s in read_nested_json(name, data=data, encoding_option="--encoding")), fmt, True
        labelled = "gold_spans" in obj

        def parse() -> Iterator[Record]:
            for n, ln in itertools.chain([first], all_lines):
                if ln.strip():
                    try:
                        yield json_record(json.loads(ln), f"{name}:{n}")
                    except json.JSONDecodeError as e:
                        raise DataFormatError(f"invalid JSON ({e.msg})", name, n) from None

        return parse(), fmt, labelled
    from ner_zoo.data.readers import read_conll

    data = "\n".join(ln for _, ln in all_lines).encode()
    first = next((ln.split() for ln in data.decode().split("\n") if ln.strip() and not ln.startswith("-DOCSTART-")), [])
    labelled = len(first) >= 2
    sents = read_conll(name, token_column=0, label_column=-1 if labelled else None, data=data,
                       encoding_option="--encoding")
    scheme = getattr(sents, "scheme", None)
    return iter([Record([s], source=s.source, scheme=scheme) for s in sents]), "conll", labelled


def read_input(path: Path, fmt: str, encoding: str | None = None) -> tuple[list[Sentence], bool]:
    """Every sentence of ``path`` at once and whether they carry gold (what ``predict`` streams, for tests)."""
    recs, _, labelled = records(path, fmt, split=True, encoding=encoding)
    return [s for r in recs for s in r.sentences], labelled


def chunks(recs: Iterable[Record], size: int) -> Iterator[list[Record]]:
    """Groups of records holding about ``size`` sentences (a stream is answered group by group)."""
    group, n = [], 0
    for r in recs:
        group.append(r)
        n += len(r.sentences)
        if n >= size:
            yield group
            group, n = [], 0
    if group:
        yield group


def without_gold(sentences: list[Sentence], tag_column: str | None) -> list[Sentence]:
    """The sentences with gold spans (and the gold tag column) removed: gold is not needed to predict, and a gold
    label the model never saw must not block prediction."""
    return [dataclasses.replace(s, spans=[], columns={k: v for k, v in s.columns.items() if k != tag_column})
            for s in sentences]


def jsonl_line(rec: Record, preds: list, scores: list) -> str:
    """One output line per record: sentences of a raw-text line are joined (span indices shifted)."""
    tokens, gold, pred, conf, ents = [], [], [], [], []
    for k, (sent, p, sc) in enumerate(zip(rec.sentences, preds, scores)):
        off = len(tokens)
        tokens += sent.tokens
        gold += [[s.start + off, s.end + off, s.label] for s in sent.spans]
        pred += [[s.start + off, s.end + off, s.label] for s in p]
        conf += [round(float(x), 6) for x in sc] if sc is not None else [None] * len(p)
        if rec.text is not None:
            from ner_zoo.api.tagger import entities

            ents += [{key: v for key, v in e.to_dict().items() if key in ("text", "label", "start", "end", "score")}
                     for e in entities(rec.text, rec.offsets[k], p, sc, k)]
    obj = {"tokens": tokens, "gold_spans": gold, "pred_spans": pred, "pred_scores": conf}
    if rec.text is not None:
        obj.update(text=rec.text, entities=ents)
    first = rec.sentences[0] if rec.sentences else None
    obj.update(doc_id=first.doc_id if first else None, index=first.index if first else 0, source=rec.source)
    return json.dumps(obj, ensure_ascii=False) + "\n"


def conll_lines(rec: Record, preds: list, scheme: str, with_gold: bool, tag_column: str | None, pos: bool) -> str:
    from ner_zoo.data.tagging import spans_to_tags

    out = []
    for sent, p in zip(rec.sentences, preds):
        n, where = len(sent.tokens), sent.source
        pred = list(p) if pos else spans_to_tags(p, n, scheme, where)
        if pos:
            gold = sent.columns.get(tag_column) if with_gold and tag_column else None
        else:
            gold = spans_to_tags(sent.spans, n, scheme, where) if with_gold else None
        for i, tok in enumerate(sent.tokens):
            tok = "_".join(tok.split()) or "_"
            out.append(f"{tok} {gold[i]} {pred[i]}\n" if gold else f"{tok} {pred[i]}\n")
        out.append("\n")
    return "".join(out)


def default_output(path: Path, fmt: str) -> Path:
    """``<input>.pred.<format>``, keeping the input's full name (``eng.testb`` -> ``eng.testb.pred.conll``)."""
    if path == STDIO or not path.is_file():
        raise DataFormatError("the input is not a regular file (a pipe?): pass --output (- for standard output)",
                              path)
    return path.with_name(f"{path.name}.pred.{fmt}")


def device_of(accelerator: str) -> str:
    return {"gpu": "cuda", "auto": "auto", "cpu": "cpu"}.get(accelerator, accelerator)


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="ner-zoo predict", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", "--ckpt_path", dest="model", required=True,
                   help="a checkpoint written by ner-zoo fit, a folder written by ner-zoo export, or such a folder "
                        "on the Hugging Face Hub: namespace/name (a local path of that name wins)")
    p.add_argument("--revision", help="with a Hub id: the branch, tag or commit (default: main)")
    p.add_argument("--input", required=True, type=Path, help="CoNLL, raw text or JSON-lines file; - reads stdin")
    p.add_argument("--input_format", default="auto", choices=["auto", "conll", "text", "jsonl"],
                   help="auto: from the suffix and the content (a .txt file in CoNLL columns is read as CoNLL)")
    p.add_argument("--output", type=Path, help="output file (default: <input>.pred.<format>); never an existing "
                   "file unless --overwrite, never the input; -, /dev/stdout or a pipe is written in place, as the "
                   "input arrives")
    p.add_argument("--output_format", default="auto", choices=["auto", "conll", "jsonl", "html"],
                   help="auto: jsonl for raw text, JSON-lines input and nested NER, else conll; html: one "
                        "self-contained page with the entities marked, labelled and scored (written at the end)")
    p.add_argument("--no_sentence_split", action="store_true", help="raw text: one sentence per line")
    add_overwrite(p)
    add_encoding(p)
    p.add_argument("--batch_size", type=positive_int, default=64)
    p.add_argument("--accelerator", default="auto", choices=ACCELERATORS, help="auto: a GPU when present")
    p.add_argument("--precision", default="auto", choices=("auto", *PRECISIONS),
                   help="auto (default): bf16 where the host computes it natively and the model's bf16 quality was "
                        "measured equal (ner_zoo.hardware), else 32; or 32, bf16, 16 autocast")
    return p


def load_tagger(path: str, device: str, batch_size: int = 64, precision: str = "auto", revision: str | None = None):
    """The model in ``path`` (or Hub id) as a Tagger (POS taggers too): its network alone
    (:func:`ner_zoo.api.loading.load`)."""
    from ner_zoo.api.loading import load

    return load(path, device, batch_size, precision, _allow_pos=True, revision=revision)


def predict_main(argv: Sequence[str]) -> int:
    a = parser().parse_args(argv)
    check_accelerator(a.accelerator)
    if a.output is not None:  # before the input is read and the (slow) model loaded
        check_output(a.output, [a.input, a.model], a.overwrite)
    recs, in_fmt, labelled = records(a.input, a.input_format, split=not a.no_sentence_split, encoding=a.encoding)
    if a.input_format == "auto":  # a guess is said, never silent
        print(f"ner-zoo predict: reading {'standard input' if a.input == STDIO else a.input} as {FORMAT_NAMES[in_fmt]} "
              "(detected; --input_format conll|text|jsonl to choose)", file=sys.stderr)
    first = list(itertools.islice(recs, 1))  # the input's format errors before the (slow) model load
    if not first:
        raise DataFormatError("no sentences (the input is empty or blank)", a.input)
    recs = itertools.chain(first, recs)
    tagger = load_tagger(a.model, device_of(a.accelerator), a.batch_size, a.precision.split("-")[0], a.revision)
    model = tagger.model
    if a.precision == "auto" and tagger.precision == "bf16":  # the host's default, said (never silent)
        from ner_zoo.hardware import precision_reason

        device = str(next(iter(model.parameters())).device.type)
        print(f"ner-zoo predict: {precision_reason(type(model).__name__, device)} (--precision 32 for fp32)",
              file=sys.stderr)
    fmt = a.output_format
    if fmt == "auto":
        fmt = "jsonl" if model.task == "nested_ner" or in_fmt in ("text", "jsonl") and not model.is_pos else "conll"
    if model.is_pos:
        if fmt == "html":
            raise DataFormatError("a POS tagger gives tags, not entities: no html view (--output_format conll)",
                                  a.model)
        fmt = "conll"
    tag_column = model.vocabs.tag_column
    out = a.output
    if out is None:
        out = default_output(a.input, fmt)
        check_output(out, [a.input, a.model], a.overwrite)
    stream = is_stream(out)
    try:
        # a stream is written in place
        with (_stdout() if str(out) == "-" else atomic_write(out, overwrite=a.overwrite)) as f:
            n = write_predictions(f, recs, tagger, fmt, labelled, tag_column, a.batch_size, flush=stream)
    except BrokenPipeError:  # the reader (head, less) stopped reading: nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE_EXIT
    # on stderr when the predictions go to stdout, so that they stay alone there
    print(f"wrote {n} sentences to {'standard output' if str(out) == '-' else out}",
          file=sys.stderr if stream else sys.stdout)
    return 0


#: batches per group of a file's sentences, sorted by length together
GROUP_BATCHES = 32


def write_predictions(f: IO[str], recs: Iterable[Record], tagger, fmt: str, labelled: bool,
                      tag_column: str | None, batch_size: int, flush: bool = False) -> int:
    """Predict ``recs`` group by group and write each group's lines; the number of sentences written.

    A stream is answered every ``batch_size`` sentences; a file is predicted in groups of ``GROUP_BATCHES``
    batches, which the tagger sorts by length (less padding: CoNLL-2003 test with MiniLM, docs/benchmarks.md).
    A tagger that reads neighbouring sentences (``context_sentences`` per side) sees the sentences of the groups
    after a group's as context too, so a file is tagged as in one call; a stream's sentences see only those
    already read (it is answered before the next ones arrive)."""
    n = 0
    need = 0 if flush else getattr(tagger, "context_sentences", 0)
    shown: list[tuple[str, list]] = []  # html: (text, entities) per record, one page at the end
    for group, following in lookahead(chunks(recs, batch_size if flush else batch_size * GROUP_BATCHES), need):
        sents = [s for r in group for s in r.sentences]
        context = [s for r in following for s in r.sentences]  # read for their tokens only: gold stays
        results = iter(tagger.predict_sentences(without_gold(sents, tag_column), keep_context=True,
                                                context=context))
        for rec in group:
            got = [next(results) for _ in rec.sentences]
            preds, scores = [g[0] for g in got], [g[1] for g in got]
            if fmt == "jsonl":
                f.write(jsonl_line(rec, preds, scores))
            elif fmt == "html":
                shown.append(html_entities(rec, preds, scores))
            else:
                f.write(conll_lines(rec, preds, rec.scheme or "iob2", labelled, tag_column, tagger.model.is_pos))
        n += len(sents)
        if flush:
            f.flush()
    if fmt == "html":
        from ner_zoo.api.render import page

        f.write(page([t for t, _ in shown], [e for _, e in shown]))
    return n


def html_entities(rec: Record, preds: list, scores: list) -> tuple[str, list]:
    """A record's text and entities for the html page: raw text with its offsets; tokens joined by spaces."""
    from ner_zoo.api.tagger import entities
    from ner_zoo.api.text import Token

    if rec.text is not None:
        return rec.text, [e for k, (p, sc) in enumerate(zip(preds, scores))
                          for e in entities(rec.text, rec.offsets[k], p, sc, k)]
    texts, ents, pos = [], [], 0
    for k, (sent, p, sc) in enumerate(zip(rec.sentences, preds, scores)):
        toks = []
        for t in sent.tokens:
            toks.append(Token(t, pos, pos + len(t)))
            pos += len(t) + 1
        texts.append(" ".join(sent.tokens))
        ents += entities(" ".join(texts), toks, p, sc, k)
    return " ".join(texts), ents


def lookahead(groups: Iterable[list[Record]], need: int) -> Iterator[tuple[list[Record], list[Record]]]:
    """Each group with the records of the groups read after it, at least ``need`` sentences of them (fewer
    only at the end); with ``need`` 0 each group as soon as it is read, with none."""
    pending: list[list[Record]] = []
    for group in itertools.chain(groups, [None]):
        if group is not None:
            pending.append(group)
        while pending and (group is None or sum(len(r.sentences) for g in pending[1:] for r in g) >= need):
            yield pending[0], [r for g in pending[1:] for r in g]
            pending.pop(0)


class _stdout:
    def __enter__(self):
        return sys.stdout

    def __exit__(self, *exc):
        if exc[0] is None:
            sys.stdout.flush()
        return False
