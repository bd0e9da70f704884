"""Document context for transformer models: index neighbouring sentences, hand them to the encoder."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from lightning.pytorch.utilities import rank_zero_warn
from torch import Tensor, nn

from ner_zoo.data.batching import Batch
from ner_zoo.data.schema import Sentence
from ner_zoo.modules.transformer import DocumentContext, EncoderOutput, TransformerEncoder
from ner_zoo.training.span_model import SpanBatch, SpanModel


class DocumentContextHooks:
    """Mixin for a LightningModule whose transformer reads ``context`` neighbouring sentences per side.

    The training and dev sentences (at :meth:`prepare`), those of later stages (:meth:`add_context`, from
    ``NERModule.setup``) and of the predict loaders are indexed by ``(split, doc_id, index)``, so context
    never crosses splits; :meth:`neighbours` returns the left/right token lists of a batch. Subclasses call
    :meth:`init_document_context` in ``__init__`` and may override :attr:`context_encoder`.
    """

    def init_document_context(self) -> None:
        self.doc_context = DocumentContext()
        self._warned_context = False

    @property
    def context_encoder(self):
        return getattr(self, "encoder", None)

    @property
    def context_width(self) -> int:
        return int(getattr(self.context_encoder, "context", 0) or 0)

    def add_context(self, sentences: Iterable[Sentence]) -> None:
        """Make ``sentences`` available as document context (by ``doc_id``/``index``)."""
        if self.context_width > 0:
            self.doc_context.add(list(sentences))

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        super().prepare(train, context)
        self.add_context(train)
        if self.context_width > 0:
            self.add_context(context.get("dev", ()))

    def on_predict_start(self) -> None:
        if self.context_width > 0:
            loaders = self.trainer.predict_dataloaders
            for loader in loaders if isinstance(loaders, (list, tuple)) else [loaders]:
                self.add_context(getattr(loader.dataset, "sentences", ()))

    def context_features(self, features: nn.Module, batch: Batch) -> Tensor:
        """``features(tokens, device[, left, right])`` for the batch's sentences, with their document
        neighbours when context is on; the word states ``[B, L, D]`` (the first item of a tuple output)."""
        left, right = self.neighbours(batch.sentences)
        kwargs = {} if left is None else {"left": left, "right": right}
        out = features([s.tokens for s in batch.sentences], batch.mask.device, **kwargs)
        return out[0] if isinstance(out, tuple) else out

    def neighbours(self, sentences: Sequence[Sentence]) -> tuple[list | None, list | None]:
        """Left and right context token lists of ``sentences`` (``None, None`` without context)."""
        if self.context_width <= 0:
            return None, None
        if not len(self.doc_context) and not self._warned_context:
            rank_zero_warn("context > 0 but no document context is indexed: sentences are encoded alone")
            self._warned_context = True
        return self.doc_context.get(sentences, self.context_width)


class TransformerSpanModel(DocumentContextHooks, SpanModel):
    """A span model on a :class:`TransformerEncoder` with optional document context (shared by DSpERT and
    the biaffine baseline). Subclasses set ``self.encoder``."""

    encoder: TransformerEncoder

    def encode(self, batch: SpanBatch, hidden_states: bool = False) -> EncoderOutput:
        left, right = self.neighbours(batch.sentences)
        return self.encoder.encode([s.tokens for s in batch.sentences], batch.mask.device, left, right,
                                   hidden_states=hidden_states)
