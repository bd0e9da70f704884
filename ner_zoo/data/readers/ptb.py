"""Penn Treebank files for POS tagging: bracketed trees (``.mrg``) and tagged text (``.pos``).

POS tags go into ``Sentence.columns["pos"]``; spans stay empty (the POS task reads the column). Empty
elements (``-NONE-`` leaves: traces, null complementisers) are dropped. ``doc_id`` is the file stem
(``wsj_0001``) and ``index`` the sentence's position in its file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from ner_zoo.data.readers.common import DATA_ENCODING_OPTION, SentenceList, expand_paths, gc_paused, read_text
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import DataFormatError

_BRACKET_TOKEN = re.compile(r"[()]|[^\s()]+")
TRACE_TAG = "-NONE-"
_PARENS = ("(", ")")


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _parse_mrg(text: str, path: object) -> list[tuple[int, list[str], list[str]]]:
    """``[(first line, words, tags)]`` per top-level tree, traces dropped."""
    trees: list[tuple[int, list[str], list[str]]] = []
    toks = [(m.group(), m.start()) for m in _BRACKET_TOKEN.finditer(text)]
    depth = 0
    words: list[str] = []
    tags: list[str] = []
    tree_start = 0
    i, n = 0, len(toks)
    while i < n:
        tok, pos = toks[i]
        if tok == "(":
            if depth == 0:
                tree_start, words, tags = pos, [], []
            # a leaf is exactly "( TAG word )"
            if i + 3 < n and toks[i + 3][0] == ")" and toks[i + 1][0] not in _PARENS and toks[i + 2][0] not in _PARENS:
                if depth == 0:
                    raise DataFormatError("a leaf outside any tree", path, _line(text, pos))
                if toks[i + 1][0] != TRACE_TAG:
                    tags.append(toks[i + 1][0])
                    words.append(toks[i + 2][0])
                i += 4
                continue
            depth += 1
        elif tok == ")":
            depth -= 1
            if depth < 0:
                raise DataFormatError("unbalanced ')'", path, _line(text, pos))
            if depth == 0:
                if not words:
                    raise DataFormatError("tree without words (only empty elements)", path, _line(text, tree_start))
                trees.append((_line(text, tree_start), words, tags))
        elif depth == 0:
            raise DataFormatError(f"text {tok!r} outside any tree", path, _line(text, pos))
        i += 1
    if depth:
        raise DataFormatError(f"{depth} unclosed '(' at end of file", path, _line(text, tree_start))
    return trees


def _parse_pos(text: str, path: object) -> list[tuple[int, list[str], list[str]]]:
    """``[(first line, words, tags)]`` per sentence of a ``.pos`` file (see :func:`read_ptb_pos`)."""
    sents: list[tuple[int, list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    start = 0
    in_bracket = False
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith("====="):
            if words:
                sents.append((start, words, tags))
                words, tags = [], []
            continue
        for item in line.split():
            if item == "[" or item == "]":
                in_bracket = item == "["
                continue
            word, slash, tag = item.rpartition("/")
            if not slash or not word or not tag:
                raise DataFormatError(f"item {item!r} is not word/TAG", path, lineno)
            if not words:
                start = lineno
            words.append(word.replace("\\/", "/"))
            tags.append(tag)
            if tag == "." and not in_bracket:
                sents.append((start, words, tags))
                words, tags = [], []
    if words:
        sents.append((start, words, tags))
    return sents


@gc_paused
def read_ptb_mrg(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 encoding: str | None = None, encoding_option: str = DATA_ENCODING_OPTION) -> SentenceList:
    """Read Penn Treebank bracketed trees (``.mrg``) as POS-tagged sentences.

    Args:
        paths: a ``.mrg`` file, a folder (its ``*.mrg`` files, sorted by name) or a list of files.
        encoding, encoding_option: as in :func:`~ner_zoo.data.readers.conll.read_conll`.

    Returns:
        One sentence per top-level tree, words without ``-NONE-`` leaves, tags in ``columns["pos"]``.

    Raises:
        DataFormatError: naming file and line for unbalanced brackets or a tree with no words.
    """
    files = expand_paths(paths, "*.mrg")
    out = SentenceList(path=paths)
    for f in files:
        text, out.encoding = read_text(f, encoding, encoding_option=encoding_option)
        for index, (line, words, tags) in enumerate(_parse_mrg(text, f)):
            out.append(Sentence(words, [], {"pos": tags}, f.stem, index, f"{f}:{line}"))
    return out


@gc_paused
def read_ptb_pos(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 encoding: str | None = None, encoding_option: str = DATA_ENCODING_OPTION) -> SentenceList:
    """Read original PTB tagged text (``.pos``: ``word/TAG`` items, ``[ ]`` base-NP brackets).

    These files do not mark sentence boundaries (blank lines also fall inside sentences), so a sentence
    ends after a token tagged ``.`` outside brackets, at a ``=====`` separator and at the end of a file
    (NLTK's convention). The sample's ``.pos`` files therefore give 4,009 sentences where the ``.mrg``
    trees give 3,914, and their tokenisation differs slightly: prefer :func:`read_ptb_mrg`. ``\\/`` is
    unescaped to ``/``; ambiguous tags such as ``VBN|JJ`` are kept as written.

    Args:
        paths: a ``.pos`` file, a folder (its ``*.pos`` files, sorted) or a list of files.
        encoding, encoding_option: as in :func:`~ner_zoo.data.readers.conll.read_conll`.

    Raises:
        DataFormatError: naming file and line for an item without ``/TAG``.
    """
    files = expand_paths(paths, "*.pos")
    out = SentenceList(path=paths)
    for f in files:
        text, out.encoding = read_text(f, encoding, encoding_option=encoding_option)
        for index, (line, words, tags) in enumerate(_parse_pos(text, f)):
            out.append(Sentence(words, [], {"pos": tags}, f.stem, index, f"{f}:{line}"))
    return out


def read_ptb(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
             encoding: str | None = None, encoding_option: str = DATA_ENCODING_OPTION) -> SentenceList:
    """Read ``.mrg`` or ``.pos`` files, chosen by suffix (a folder is read as ``.mrg`` if it has any).

    Args:
        paths: a file, a folder or a list of files (all of one kind).
        encoding, encoding_option: as in :func:`~ner_zoo.data.readers.conll.read_conll`.
    """
    if isinstance(paths, (str, os.PathLike)) and Path(paths).is_dir():
        return read_ptb_mrg(paths, encoding, encoding_option) if any(Path(paths).glob("*.mrg")) else \
            read_ptb_pos(paths, encoding, encoding_option)
    files = expand_paths(paths, "*")
    suffixes = {f.suffix.lower() for f in files}
    if suffixes == {".pos"}:
        return read_ptb_pos(files, encoding, encoding_option)
    if suffixes == {".mrg"}:
        return read_ptb_mrg(files, encoding, encoding_option)
    raise DataFormatError(f"expected only .mrg or only .pos files, got suffixes {sorted(suffixes)}", paths)
