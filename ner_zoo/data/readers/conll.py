"""CoNLL-style column files: one token per line, blank lines between sentences, ``-DOCSTART-`` documents.

Tags are read the way conlleval reads them (see :func:`ner_zoo.data.tagging.tags_to_spans`): an ``I-X``
after ``O`` or after another type *opens* an entity, so IOB1, IOB2 and BIOES files all give the same
spans without knowing their scheme, and a broken ``O I-X`` sequence becomes an entity rather than being
dropped. The scheme is still detected (or taken from the caller) and recorded on the result, because
models that emit tags need to know it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from ner_zoo.data.readers.common import DATA_ENCODING_OPTION, SentenceList, gc_paused, read_text
from ner_zoo.data.schema import Sentence
from ner_zoo.data.tagging import OUTSIDE, TagScheme, detect_scheme, split_tag, tags_to_spans
from ner_zoo.errors import DataFormatError


#: a tab between two fields of a line (a leading or trailing tab does not make a file tab-separated)
_TAB_BETWEEN = re.compile(r"[^\s][^\S\n]*\t[^\S\n]*[^\s]")


def split_fields(line: str, delimiter: str | None) -> list[str] | None:
    """The columns of one line, or None for a blank line: the one place where whitespace is normalised.

    Whitespace at either end (spaces, tabs, other Unicode spaces) is dropped; with no ``delimiter`` the columns
    are separated by runs of ASCII spaces (a no-break space inside a token stays part of it), else by
    ``delimiter``, each field stripped.
    """
    stripped = line.strip()
    if not stripped:
        return None
    if delimiter is None:
        parts = stripped.split(" ")
        return [p for p in parts if p] if "" in parts else parts
    return [p.strip() for p in stripped.split(delimiter)]


def _blocks(text: str, path: object, delimiter: str | None, doc_separator, strict_columns: bool,
            raise_on_empty_sentence: bool) -> Iterator[tuple[int, list[list[str]] | None]]:
    """Yield ``(first_line, rows)`` per sentence and ``(line, None)`` per document separator line.

    Blank (whitespace-only) lines end a sentence; a run of them counts as one break.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    if delimiter is None and "\t" in text and _TAB_BETWEEN.search(text):
        delimiter = "\t"
    ncol = first_ncol_line = 0
    rows: list[list[str]] = []
    start = 0
    prev_blank = seen = False
    pending_empty = 0  # line of a second consecutive blank line, raised if more content follows
    for lineno, line in enumerate(lines, 1):
        parts = split_fields(line, delimiter)
        if not parts:
            if rows:
                yield start, rows
                rows = []
            elif prev_blank and seen and raise_on_empty_sentence:
                pending_empty = pending_empty or lineno
            prev_blank = True
            continue
        if pending_empty:
            raise DataFormatError("empty sentence (more than one blank line in a row)", path, pending_empty,
                                  "pass raise_on_empty_sentence=False to treat a run of blank lines as one break")
        prev_blank, seen = False, True
        if doc_separator is not None and parts[0].startswith(doc_separator):
            if rows:
                yield start, rows
                rows = []
            yield lineno, None
            continue
        if not rows:
            start = lineno
        if len(parts) != ncol:
            if not ncol:
                ncol, first_ncol_line = len(parts), lineno
            elif strict_columns:
                raise DataFormatError(f"line has {len(parts)} columns, expected {ncol} as on line "
                                      f"{first_ncol_line}: {line!r}", path, lineno,
                                      "columns are tab-separated if the file contains a tab, else space-separated")
        rows.append(parts)
    if rows:
        yield start, rows


def _column(rows: list[list[str]], index: int, what: str, path: object, start: int) -> list[str]:
    """Per-row column extraction for files whose column count varies (``strict_columns=False``)."""
    try:
        return [r[index] for r in rows]
    except IndexError:
        for j, r in enumerate(rows):
            if not -len(r) <= index < len(r):
                raise DataFormatError(f"{what} {index} does not exist on a line with {len(r)} columns",
                                      path, start + j) from None
        raise


def _bad_tag(tags: Sequence[str], path: object, start: int) -> None:
    for j, t in enumerate(tags):
        split_tag(t, path, start + j)


def read_conll_with_scheme(path: str | os.PathLike[str], token_column: int = 0, label_column: int | None = -1,
                           columns: dict[str, int] | None = None, scheme: str | TagScheme | None = None,
                           encoding: str | None = None, doc_separator: str | tuple[str, ...] | None = "-DOCSTART-",
                           strict_columns: bool = True, allow_empty: bool = False, delimiter: str | None = None,
                           single_doc: bool = False, raise_on_empty_sentence: bool = False
                           ) -> tuple[SentenceList, TagScheme | None]:
    """Like :func:`read_conll`, returning ``(sentences, scheme)`` (``scheme`` is ``None`` when unlabelled)."""
    sents = read_conll(path, token_column, label_column, columns, scheme, encoding, doc_separator, strict_columns,
                       allow_empty, delimiter, single_doc, raise_on_empty_sentence)
    return sents, sents.scheme


@gc_paused
def read_conll(path: str | os.PathLike[str], token_column: int = 0, label_column: int | None = -1,
               columns: dict[str, int] | None = None, scheme: str | TagScheme | None = None,
               encoding: str | None = None, doc_separator: str | tuple[str, ...] | None = "-DOCSTART-",
               strict_columns: bool = True, allow_empty: bool = False, delimiter: str | None = None,
               single_doc: bool = False, raise_on_empty_sentence: bool = False, data: bytes | None = None,
               encoding_option: str = DATA_ENCODING_OPTION) -> SentenceList:
    """Read a CoNLL column file into sentences with gold spans.

    Tags are decoded with conlleval's rules: an ``I-X`` that follows ``O`` or another type opens an entity
    (so IOB1, IOB2 and BIOES/BILOU all read correctly, and broken sequences are read as conlleval would).

    Args:
        path: the file.
        token_column: column of the words.
        label_column: column of the tags (negative counts from the end); ``None`` for unlabelled text,
            which gives sentences without spans.
        columns: extra per-token columns to keep, by name, e.g. ``{"pos": 1, "chunk": 2}``; they land in
            ``Sentence.columns``.
        scheme: tag scheme of the label column. ``None`` detects it over the whole file with
            :func:`~ner_zoo.data.tagging.detect_scheme`; an explicit value is recorded as given.
        encoding: text encoding; ``None`` tries UTF-8 and falls back to Latin-1 (never fails on bytes).
        doc_separator: a line whose first field starts with this (or with one of these prefixes, e.g.
            ``("-DOCSTART-", "###MEDLINE:")``) starts a new document and is not a sentence, whatever its
            columns. ``None`` disables documents.
        strict_columns: raise if a token line has a different number of columns than the first one.
        allow_empty: return an empty list for a file without sentences instead of raising.
        delimiter: column separator; ``None`` means tab if the file contains a tab, else runs of spaces.
        single_doc: for files without separators, make the whole file one document (e.g. for
            document-context models) instead of one document per sentence.
        raise_on_empty_sentence: raise on two or more blank lines in a row (an empty sentence) instead of
            treating the run as one break.
        data: the file's bytes when already read (a pipe can be read only once).
        encoding_option: the option that sets ``encoding`` in the command in use, named in the messages.

    Returns:
        A :class:`SentenceList` (a ``list`` of :class:`Sentence`) with ``.scheme`` and ``.encoding``.
        ``doc_id`` is ``"<file name>:<n>"`` with documents counted from 0, ``index`` the position in the
        document and ``source`` ``"<path>:<line of the first token>"``.

    Raises:
        DataFormatError: naming file and line, for an inconsistent column count, a malformed tag
            (``B-``, ``X-PER``), a missing column, or a file without sentences.
    """
    text, used = read_text(path, encoding, data, encoding_option)
    if scheme is not None:
        scheme = TagScheme.parse(scheme)
    name = Path(path).name
    has_docs = doc_separator is not None and (
        doc_separator in text if isinstance(doc_separator, str) else any(d in text for d in doc_separator))
    extra = list((columns or {}).items())
    labelled = label_column is not None
    out = SentenceList(path=path, encoding=used)
    tagged: list[Sequence[str]] = []  # label sequences with at least one entity, for scheme detection
    doc = -1 if has_docs else 0
    index = 0
    for start, rows in _blocks(text, path, delimiter, doc_separator, strict_columns, raise_on_empty_sentence):
        if rows is None:  # document separator
            doc += 1
            index = 0
            continue
        if strict_columns:
            cols = list(zip(*rows))
            try:
                tokens = list(cols[token_column])
                labels = cols[label_column] if labelled else ()
                extra_cols = {name: list(cols[i]) for name, i in extra}
            except IndexError:
                wanted = [("token_column", token_column)] + ([("label_column", label_column)] if labelled else [])
                for what, i in wanted + [(f"column {name!r}", i) for name, i in extra]:
                    _column(rows, i, what, path, start)
                raise
        else:
            tokens = _column(rows, token_column, "token_column", path, start)
            labels = _column(rows, label_column, "label_column", path, start) if labelled else ()
            extra_cols = {name: _column(rows, i, f"column {name!r}", path, start) for name, i in extra}
        spans = []
        if labelled and labels.count(OUTSIDE) != len(labels):
            try:
                spans = tags_to_spans(labels, where=path)
            except DataFormatError:
                _bad_tag(labels, path, start)
                raise
            tagged.append(labels)
        if has_docs:
            doc = max(doc, 0)  # sentences before the first separator form document 0
            doc_id = f"{name}:{doc}"
        elif single_doc:
            doc_id = f"{name}:0"
        else:
            doc_id, index = f"{name}:{len(out)}", 0
        out.append(Sentence(tokens, spans, extra_cols, doc_id, index, f"{path}:{start}"))
        index += 1
    if not out and not allow_empty:
        raise DataFormatError("no sentences in file", path, hint="the file is empty or holds only blank and -DOCSTART- lines")
    if labelled:
        out.scheme = scheme if scheme is not None else detect_scheme(tagged)
    return out


@gc_paused
def read_prediction_conll(path: str | os.PathLike[str], encoding: str | None = None, with_tokens: bool = False,
                          encoding_option: str = DATA_ENCODING_OPTION
                          ) -> tuple[list[list[str]], ...]:
    """Read a prediction file (``token ... gold predicted`` per line, as conlleval takes) back.

    Args:
        path: a file written by :func:`ner_zoo.data.writers.write_conll` or any conlleval input.
        encoding: as in :func:`read_conll`.

    Returns:
        ``(gold_tag_sequences, predicted_tag_sequences)``: the last two columns, per sentence; with
        ``with_tokens``, the first column (tokens) as a third item.

    Raises:
        DataFormatError: for fewer than three columns (no gold column) or a malformed tag, with its line.
    """
    text, _ = read_text(path, encoding, encoding_option=encoding_option)
    gold: list[list[str]] = []
    pred: list[list[str]] = []
    tokens: list[list[str]] = []
    ok: set[str] = set()
    for start, rows in _blocks(text, path, None, "-DOCSTART-", True, False):
        if rows is None:
            continue
        if len(rows[0]) < 3:
            raise DataFormatError(f"{len(rows[0])} columns: expected token, gold tag and predicted tag",
                                  path, start, "a file without gold tags cannot be scored")
        g = [r[-2] for r in rows]
        p = [r[-1] for r in rows]
        for j, (a, b) in enumerate(zip(g, p)):
            for t in (a, b):
                if t not in ok:
                    split_tag(t, path, start + j)
                    ok.add(t)
        gold.append(g)
        pred.append(p)
        tokens.append([r[0] for r in rows])
    return (gold, pred, tokens) if with_tokens else (gold, pred)
