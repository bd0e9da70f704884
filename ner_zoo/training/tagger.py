"""Base class of token taggers: emission scores -> linear-chain CRF (or softmax) -> tags -> spans."""

from __future__ import annotations

from typing import Any, Literal

import torch
import torch.nn.functional as F

from ner_zoo.data.batching import Batch
from ner_zoo.data.tagging import allowed_transitions, tags_to_spans
from ner_zoo.modules.crf import LinearChainCRF
from ner_zoo.training.base import NERModule


class SequenceTagger(NERModule):
    """A model that scores one tag per token; subclasses implement :meth:`emissions`.

    Args:
        use_crf: decode with a linear-chain CRF (else independent softmax per token).
        constrain: forbid invalid tag bigrams of the scheme in the CRF (IOB2/BIOES), in training and decoding.
        loss_reduction: the tag loss over a batch, ``mean`` (per sentence for the CRF, per token for softmax) or
            ``sum``.
        **kwargs: see :class:`~ner_zoo.training.base.NERModule`.
    """

    def __init__(self, use_crf: bool = True, constrain: bool = True, loss_reduction: Literal["mean", "sum"] = "mean",
                 **kwargs: Any):
        super().__init__(**kwargs)
        if loss_reduction not in ("sum", "mean"):
            raise ValueError(f"loss_reduction must be sum or mean, got {loss_reduction!r}")
        self.loss_reduction = loss_reduction
        tags = self.vocabs.tags
        if tags is None:
            raise ValueError(f"a tagger needs a tag vocabulary; the {self.task} task has none (use a span model)")
        self.num_tags = len(tags)
        constraints = None
        if use_crf and constrain and self.vocabs.scheme is not None:
            constraints = allowed_transitions(tags.itos, self.vocabs.scheme)
        self.crf = LinearChainCRF(self.num_tags, constraints=constraints) if use_crf else None

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Tag scores ``[B, L, num_tags]``."""
        raise NotImplementedError

    def tag_loss(self, scores: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor,
                 crf: LinearChainCRF | None) -> torch.Tensor:
        """CRF negative log-likelihood (per-token cross-entropy without a CRF), reduced by ``loss_reduction``."""
        if crf is not None:
            return crf.nll(scores, tags, mask, reduction=self.loss_reduction)
        return F.cross_entropy(scores.float()[mask], tags[mask], reduction=self.loss_reduction)

    def compute_loss(self, batch: Batch) -> torch.Tensor:
        return self.tag_loss(self.emissions(batch), batch.tags, batch.mask, self.crf)

    @torch.no_grad()
    def decode_ids(self, batch: Batch) -> list[list[int]]:
        scores = self.emissions(batch)
        ids = self.crf.decode(scores, batch.mask) if self.crf is not None else scores.argmax(-1)
        lengths = batch.mask.sum(1).tolist()
        return [row[:n] for row, n in zip(ids.tolist(), lengths)]

    def decode(self, batch: Batch) -> list[list]:
        itos = self.vocabs.tags.itos
        tag_seqs = [[itos[i] for i in row] for row in self.decode_ids(batch)]
        if self.is_pos:
            return tag_seqs
        # conlleval reading: also the repair rule for invalid sequences from an unconstrained decoder
        return [tags_to_spans(tags) for tags in tag_seqs]
