"""One small declarative class per benchmark corpus, plus generic ones for any user corpus.

Each class states its folder (under ``$NER_ZOO_DATA``), files per split, reader and task. Corpora with
no dev split carve a seeded share of train (``dev_fraction``, ``split_seed``; whole documents when the
corpus has them), so the split is reproducible from the config alone.

The classes here are plain :class:`~ner_zoo.data.corpus.Corpus` classes (no Lightning: ``data stats`` reads
them). What configs name, ``ner_zoo.data.<Name>`` (e.g. ``CoNLL2003``, ``ColumnDataModule``), is the
LightningDataModule of each, made on first access (:data:`DATA_MODULES`, :func:`data_modules`).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Callable, Literal

from ner_zoo.data.corpus import Corpus
from ner_zoo.data.readers.common import DATA_ENCODING_OPTION
from ner_zoo.data.schema import Sentence


class ColumnCorpus(Corpus):
    """Any CoNLL-style column corpus.

    Args:
        train_file, dev_file, test_file: file names relative to ``data_dir`` (``dev_file`` may be omitted:
            dev is then carved from train).
        token_column: column of the words.
        label_column: column of the tags (negative counts from the end).
        columns: extra named columns, e.g. ``{"pos": 1}``.
        file_scheme: scheme of the files (``iob1``, ``iob2``, ``bioes``); ``None`` detects it.
        encoding: file encoding; ``None`` tries UTF-8 then Latin-1.
        **kwargs: see :class:`~ner_zoo.data.corpus.Corpus`.
    """

    token_column = 0
    label_column = -1
    #: the option that sets ``encoding``, named in the readers' messages (a command with its own sets another)
    encoding_option = DATA_ENCODING_OPTION
    columns: dict[str, int] = {}
    file_scheme: str | None = None

    def __init__(self, train_file: str | None = None, dev_file: str | None = None, test_file: str | None = None,
                 token_column: int | None = None, label_column: int | None = None,
                 columns: dict[str, int] | None = None, file_scheme: str | None = None,
                 encoding: str | None = None, **kwargs):
        super().__init__(**kwargs)
        given = {"train": train_file, "dev": dev_file, "test": test_file}
        self.files = {k: v for k, v in {**type(self).files, **{k: v for k, v in given.items() if v}}.items() if v}
        if token_column is not None:
            self.token_column = token_column
        if label_column is not None:
            self.label_column = label_column
        self.columns = dict(type(self).columns if columns is None else columns)
        self.file_scheme = file_scheme or type(self).file_scheme
        self.encoding = encoding

    def read_split(self, path: Path) -> list[Sentence]:
        from ner_zoo.data.readers import read_conll

        return read_conll(path, token_column=self.token_column, label_column=self.label_column,
                          columns=self.columns, scheme=self.file_scheme, encoding=self.encoding,
                          encoding_option=self.encoding_option)


class JsonCorpus(Corpus):
    """Any nested-NER JSON corpus (GENIA JSON-lines, ACE DyGIE-style, Locate-and-Label shape).

    Args:
        train_file, dev_file, test_file: file names relative to ``data_dir``.
        shape: ``genia``, ``dygie`` or ``locate_and_label``; ``None`` detects it.
        **kwargs: see :class:`~ner_zoo.data.corpus.Corpus`.
    """

    task = "nested_ner"
    shape: str | None = None
    #: a split file that is one record of many sentences packs the split into a pseudo-document (the ACE files:
    #: ``doc_key`` 0, original document ids lost), so its sentences get no document (no context across the
    #: unknown document boundaries); files with one record per document keep their documents
    pseudo_documents = False

    def __init__(self, train_file: str | None = None, dev_file: str | None = None, test_file: str | None = None,
                 shape: str | None = None, **kwargs):
        super().__init__(**kwargs)
        given = {"train": train_file, "dev": dev_file, "test": test_file}
        self.files = {k: v for k, v in {**type(self).files, **{k: v for k, v in given.items() if v}}.items() if v}
        self.shape = shape or type(self).shape

    def read_split(self, path: Path) -> list[Sentence]:
        from ner_zoo.data.readers import read_nested_json

        sentences = read_nested_json(path, shape=self.shape)
        if self.pseudo_documents and len(sentences) > 1 and len({s.doc_id for s in sentences}) == 1:
            for s in sentences:
                s.doc_id, s.index = None, 0
            self.notes["documents"] = (f"none: {path.name} packs its split into one pseudo-document (original "
                                       "document ids lost), so sentences get no document context")
        return sentences


# --- flat NER ---------------------------------------------------------------------------------------------
class CoNLL2003Corpus(ColumnCorpus):
    """CoNLL-2003 English (Tjong Kim Sang & De Meulder 2003). Files are IOB1; 4 types."""

    default_subdir = "conll2003"
    files = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}
    columns = {"pos": 1, "chunk": 2}
    file_scheme = "iob1"


class CoNLL2002SpanishCorpus(ColumnCorpus):
    """CoNLL-2002 Spanish (IOB2, UTF-8 here; Latin-1 in the original distribution, detected)."""

    default_subdir = "conll2002"
    files = {"train": "esp.train", "dev": "esp.testa", "test": "esp.testb"}
    columns = {"pos": 1}
    file_scheme = "iob2"


class CoNLL2002DutchCorpus(ColumnCorpus):
    """CoNLL-2002 Dutch (files ``ned.train/testa/testb``, Latin-1, with ``-DOCSTART-``)."""

    default_subdir = "conll2002"
    files = {"train": "ned.train", "dev": "ned.testa", "test": "ned.testb"}
    columns = {"pos": 1}
    file_scheme = "iob2"


class OntoNotes5Corpus(ColumnCorpus):
    """OntoNotes 5.0 English, CoNLL-2012 split, 18 types (``word POS parse NER``, IOB2)."""

    default_subdir = "ontonotes5"
    files = {"train": "onto.train.ner", "dev": "onto.development.ner", "test": "onto.test.ner"}
    columns = {"pos": 1}
    file_scheme = "iob2"


class WNUT2017Corpus(ColumnCorpus):
    """WNUT-17 emerging entities (tweets, 6 types, ``word tag``)."""

    default_subdir = "wnut2017"
    files = {"train": "wnut17train.conll", "dev": "emerging.dev.conll", "test": "emerging.test.annotated"}
    file_scheme = "iob2"


class JNLPBACorpus(ColumnCorpus):
    """JNLPBA 2004 (5 bio-entity types). No official dev split: dev is a seeded 10% of train documents
    (``dev_fraction``/``split_seed``). Set ``dev_file: devel.tsv`` for Crichton et al.'s held-out part."""

    default_subdir = "jnlpba"
    files = {"train": "train.iob2", "test": "Genia4EReval1.iob2"}
    file_scheme = "iob2"


# --- chunking and POS -------------------------------------------------------------------------------------
class CoNLL2000Corpus(ColumnCorpus):
    """CoNLL-2000 chunking (WSJ 15-18 / 20). No dev split: a seeded 10% of train sentences is carved."""

    task = "chunk"
    default_subdir = "conll2000"
    files = {"train": "train.txt", "test": "test.txt"}
    columns = {"pos": 1}
    file_scheme = "iob2"


class WSJPOSCorpus(Corpus):
    """Penn Treebank WSJ part-of-speech tagging from ``.mrg`` files (``-NONE-`` traces dropped).

    With the full treebank (files ``wsj_SSNN.mrg`` of sections 00-24) the standard split is used:
    sections 0-18 train, 19-21 dev, 22-24 test. With the free 10% sample (sections 00-01 only) the files
    are shuffled with ``split_seed`` and split 80/10/10 by document; run records then name the split
    ``sample_10pct`` (``split_name``), never ``standard``.

    Args:
        mrg_glob: glob of the tree files under ``data_dir``.
        **kwargs: see :class:`~ner_zoo.data.corpus.Corpus`.
    """

    task = "pos"
    default_subdir = "wsj_pos"
    tag_column = "pos"
    files = {"train": "<sections>", "dev": "<sections>", "test": "<sections>"}

    def __init__(self, mrg_glob: str = "**/*.mrg", **kwargs):
        super().__init__(**kwargs)
        self.mrg_glob = mrg_glob

    def split_files(self) -> dict[str, list[Path]]:
        files = sorted(self.root.glob(self.mrg_glob))
        if not files:
            raise FileNotFoundError(f"no {self.mrg_glob} files under {self.root}")
        section = {f: int(m.group(1)) for f in files if (m := re.search(r"wsj_(\d\d)\d\d", f.name))}
        if len(set(section.values())) >= 24:
            self.split_name = "standard"
            pick = {"train": range(0, 19), "dev": range(19, 22), "test": range(22, 25)}
            return {k: [f for f in files if section.get(f, -1) in r] for k, r in pick.items()}
        self.split_name = "sample_10pct"
        order = files[:]
        random.Random(self.split_seed).shuffle(order)
        n_dev = n_test = max(1, round(0.1 * len(order)))
        return {"test": sorted(order[:n_test]), "dev": sorted(order[n_test:n_test + n_dev]),
                "train": sorted(order[n_test + n_dev:])}

    def sentences(self, split: str) -> list[Sentence]:
        if split not in self._splits:
            from ner_zoo.data.readers import read_ptb

            sents = [s for f in self.split_files()[split] for s in read_ptb(f)]
            if self.max_sentences is not None:
                sents = sents[: self.max_sentences]
            for s in sents:
                s.validate()
            self._store(split, sents)
        return self._splits[split]


# --- nested NER -------------------------------------------------------------------------------------------
class GENIACorpus(JsonCorpus):
    """GENIA 3.02, 5 types.

    Args:
        split: ``yan2022``: the document split of Yan et al. (2022), JSON-lines with exclusive ends
            (1,601 / 199 / 199 abstracts; 5,119 test entities); ``finkel_manning``: the sentence split of
            Finkel & Manning (2009) / Lu & Roth (2015) used by Locate-and-Label and DSpERT, derived from
            ``raw/GENIAcorpus3.02.xml`` (15,023 / 1,669 / 1,854 sentences; see
            :mod:`ner_zoo.data.readers.genia_xml`).
        **kwargs: see :class:`JsonCorpus`.
    """

    default_subdir = "genia"
    split_name = "yan2022"  # the default split (older run records name none)
    files = {"train": "train.jsonlines", "dev": "dev.jsonlines", "test": "test.jsonlines"}
    raw_xml = "raw/GENIAcorpus3.02.xml"

    def __init__(self, split: Literal["yan2022", "finkel_manning"] = "yan2022", **kwargs):
        super().__init__(**kwargs)
        self.split_name = split
        if split == "finkel_manning":
            self.files = {name: self.raw_xml for name in ("train", "dev", "test")}

    def read_named_split(self, split: str, path: Path) -> list[Sentence]:
        if self.split_name != "finkel_manning":
            return super().read_named_split(split, path)
        from ner_zoo.data.readers.genia_xml import finkel_manning_split

        return finkel_manning_split(path, split)


class ACE2004Corpus(JsonCorpus):
    """ACE 2004 nested NER, 7 types (DyGIE-style JSON: global inclusive offsets). The shipped files pack each
    split into one pseudo-document, so sentences get no document context (:attr:`pseudo_documents`)."""

    default_subdir = "ace2004"
    pseudo_documents = True
    files = {"train": "train.json", "dev": "dev.json", "test": "test.json"}


class ACE2005Corpus(JsonCorpus):
    """ACE 2005 nested NER, 7 types (DyGIE-style JSON: global inclusive offsets). Files packing a split into one
    pseudo-document give no document context; one record per document keeps the documents."""

    default_subdir = "ace2005"
    pseudo_documents = True
    files = {"train": "train.json", "dev": "dev.json", "test": "test.json"}


class KBP2017Corpus(JsonCorpus):
    """TAC-KBP 2017 nested NER in the Locate-and-Label JSON shape (LDC-licensed; not shipped)."""

    default_subdir = "kbp2017"
    files = {"train": "train.json", "dev": "dev.json", "test": "test.json"}
    shape = "locate_and_label"


class BundledCorpus(ColumnCorpus):
    """The small sample corpus bundled with the package (for the quickstart and tests)."""

    files = {"train": "train.conll", "dev": "dev.conll", "test": "test.conll"}
    file_scheme = "iob2"

    def __init__(self, data_dir: str | None = None, **kwargs):
        super().__init__(data_dir=data_dir or str(Path(__file__).parent / "sample"), **kwargs)


#: what configs name (``ner_zoo.data.<Name>``) -> its corpus; the LightningDataModule of each is made on first access
DATA_MODULES: dict[str, type[Corpus]] = {
    "ColumnDataModule": ColumnCorpus, "JsonDataModule": JsonCorpus, "CoNLL2003": CoNLL2003Corpus,
    "CoNLL2002Spanish": CoNLL2002SpanishCorpus, "CoNLL2002Dutch": CoNLL2002DutchCorpus, "OntoNotes5": OntoNotes5Corpus,
    "WNUT2017": WNUT2017Corpus, "JNLPBA": JNLPBACorpus, "CoNLL2000": CoNLL2000Corpus, "WSJPOS": WSJPOSCorpus,
    "GENIA": GENIACorpus, "ACE2004": ACE2004Corpus, "ACE2005": ACE2005Corpus, "KBP2017": KBP2017Corpus,
    "SampleCorpus": BundledCorpus}
#: the benchmark corpora by lower-case name (what ``data stats`` and ``score --train`` accept)
CORPORA = {name.lower(): corpus for name, corpus in DATA_MODULES.items()
           if corpus not in (ColumnCorpus, JsonCorpus)}


def data_modules(corpora: dict[str, type[Corpus]]) -> Callable[[str], type]:
    """A corpora module's ``__getattr__`` that makes, on first access, the LightningDataModule called ``name`` of
    each corpus: the corpus (reading) and :class:`~ner_zoo.data.datamodule.NERDataModule` (batching), found again
    under its own module and name (configs, pickling)."""
    made: dict[str, type] = {}

    def __getattr__(name: str) -> type:
        if name not in corpora:
            raise AttributeError(f"module 'ner_zoo.data.corpora' has no attribute {name!r}")
        if name not in made:
            from ner_zoo.data.datamodule import NERDataModule

            corpus = corpora[name]
            made[name] = type(name, (corpus, NERDataModule), {"__module__": corpus.__module__, "__qualname__": name,
                                                             "__doc__": corpus.__doc__, "corpus": corpus})
        return made[name]

    return __getattr__


__getattr__ = data_modules(DATA_MODULES)
