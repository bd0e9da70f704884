"""The base of every paper's network: a plain ``torch.nn.Module`` (no Lightning, no torchmetrics) that turns a
batch into a loss (:meth:`Network.compute_loss`) and into predictions (:meth:`Network.decode`).

Training hosts a network in the one task module, :class:`~ner_zoo.training.base.NERModule` (a LightningModule);
use (``ner_zoo.load``, ``ner-zoo predict``, export, ONNX, serving) builds the network alone. A model file defines
its network and names its host with :func:`~ner_zoo.training.hosting.hosts`::

    class BiLSTMCRFNet(SequenceTagger): ...
    __getattr__ = hosts(BiLSTMCRF=BiLSTMCRFNet)   # ner_zoo.models.bilstm_crf.BiLSTMCRF, built on first use

The host is made on first access only, so importing a model file imports no Lightning.

What a fit tells a network, in plain values: ``epoch`` (the training epoch, ``None`` outside a fit), ``step``
(the optimiser step), :meth:`Network.after_backward`, :meth:`Network.start_evaluation` (the split and its
batches) and :meth:`Network.end_evaluation`. What a network tells the fit: :meth:`Network.train_values` (logged
per training step) and :meth:`Network.eval_values` (sums and counts, logged per evaluation).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch

from ner_zoo.data.batching import Batch, Vocabularies
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import CheckpointError
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.ranges import check_ranges
from ner_zoo.training.prediction import index_context


def warn(message: str) -> None:
    """A warning about the configuration or the data, from a network (the fit prints it on rank 0)."""
    warnings.warn(message, UserWarning, stacklevel=3)


class Arguments(dict):
    """Init arguments by name, read as attributes too (``self.hparams.alpha1``)."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


class _RecordsArguments(type):
    """Records each network's init arguments (defaults included) as ``hparams``: what export and a checkpoint
    rebuild it from."""

    def __call__(cls, *args: Any, **kwargs: Any):
        bound = inspect.signature(cls).bind(*args, **kwargs)
        bound.apply_defaults()
        hparams = {}
        for name, value in bound.arguments.items():
            kind = inspect.signature(cls).parameters[name].kind
            hparams.update(value if kind is inspect.Parameter.VAR_KEYWORD else {name: value})
        check_ranges(cls.__init__, hparams, cls.__name__)  # before building: one line naming the argument
        net = super().__call__(*args, **kwargs)
        net.hparams = Arguments(hparams)
        return net


class Network(torch.nn.Module, metaclass=_RecordsArguments):
    """Base class of every network.

    Args:
        vocabs: vocabularies and label set, linked from ``data.vocabs`` by the CLI (saved in checkpoints).
    """

    hparams: Arguments

    def __init__(self, vocabs: dict | None = None):
        super().__init__()
        if vocabs is None:
            raise CheckpointError("the model needs vocabularies: link data.vocabs (the CLI does) or load a checkpoint")
        self.vocabs = Vocabularies.from_dict(vocabs)
        self.task = self.vocabs.task
        self.prepared = False  # prepare() ran (the host's setup("fit") runs it once)
        self.epoch: int | None = None  # the training epoch; None outside a fit
        self.step = 0  # the optimiser step of the fit
        self._collator: Callable | None = None

    # data -------------------------------------------------------------------------------------------------
    def make_collator(self) -> Callable[[Sequence[tuple[int, Sentence]]], Batch]:
        """The collator behind :meth:`collate` (override to add inputs or targets; keep it picklable)."""
        return self.vocabs.collator()

    @property
    def collator(self) -> Callable[[Sequence[tuple[int, Sentence]]], Batch]:
        """The network's collator (built once by :meth:`make_collator`); loaders get this object."""
        if self._collator is None:
            self._collator = self.make_collator()
        return self._collator

    def collate(self, items: Sequence[tuple[int, Sentence]]) -> Batch:
        """``(index, sentence)`` items -> a batch, as this network needs it."""
        return self.collator(items)

    @property
    def is_pos(self) -> bool:
        return self.task == "pos"

    @property
    def features_used(self) -> list[str]:
        """The data's extra columns (``data.features``) this network reads; ``results.json`` records them."""
        return []

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        """Data-dependent set-up before training; the host's ``setup("fit")`` calls it once.

        Args:
            train: the training split.
            context: every split by name (``dev``, ``test``, ...), read on first access: document context,
                transductive memories.

        A checkpoint loaded afterwards restores trained weights over what this sets. The base prepares every
        ``TokenEncoder`` (pretrained vectors, singletons) and indexes the training and dev sentences as document
        context; overrides call ``super().prepare(train, context)``.
        """
        from ner_zoo.training.words import prepare_tokens

        prepare_tokens(self, train)
        if self.context_encoders():
            if train and all(s.doc_id is None for s in train):
                warn("the encoder reads neighbouring sentences (context > 0), but the training sentences belong "
                     "to no document (e.g. the ACE files' pseudo-documents): they get no context")
            self.add_context(train)
            self.add_context(context.get("dev", ()))

    # document context ---------------------------------------------------------------------------------------
    def context_encoders(self) -> list[TransformerEncoder]:
        """This network's transformer encoders that read neighbouring sentences (``context > 0``)."""
        return [m for m in self.modules() if isinstance(m, TransformerEncoder) and m.context > 0]

    def add_context(self, sentences: Iterable[Sentence], replace: bool = False) -> None:
        """Index ``sentences`` as document context of the encoders that read it, in place of those indexed
        before when ``replace`` (a no-op, reading nothing, for networks without): the one writer of context,
        :func:`ner_zoo.training.prediction.index_context`."""
        index_context(self, sentences, replace=replace)

    # to implement -------------------------------------------------------------------------------------------
    def compute_loss(self, batch: Batch) -> torch.Tensor:
        raise NotImplementedError

    def decode(self, batch: Batch) -> list[list]:
        """Per sentence: a list of :class:`~ner_zoo.data.schema.Span` (or tag strings for POS)."""
        raise NotImplementedError

    def predict(self, batch: Batch) -> list[list]:
        """What use reads: :meth:`decode`, with each span's confidence where the network has one
        (:class:`~ner_zoo.training.span_model.ScoredSpans`)."""
        return self.decode(batch)

    # what a fit tells the network, and what it logs -----------------------------------------------------
    def after_backward(self) -> None:
        """Called after each backward pass of a fit."""

    def start_evaluation(self, split: str, batches: Callable[[], Iterable[Batch]]) -> None:
        """Called when an evaluation of ``split`` (``dev``, ``test``) starts; ``batches()`` yields the batches it
        will score, on the network's device."""

    def end_evaluation(self) -> None:
        """Called when an evaluation ends."""

    def train_values(self) -> dict[str, torch.Tensor]:
        """Scalars logged (as ``train/<name>``) after a training step, beside the loss."""
        return {}

    def eval_values(self) -> dict[str, tuple[float, float]]:
        """``name -> (sum, count)`` gathered since the evaluation started; the fit logs ``sum / count`` as
        ``<stage>/<name>``, summed over processes first."""
        return {}


def network_class(cls: type) -> type[Network]:
    """The network a class stands for: itself for a network, ``<Name>Net`` of its module for a host ``<Name>``
    (found without making the host, so without importing Lightning)."""
    if isinstance(cls, type) and issubclass(cls, Network):
        return cls
    return cls.network
