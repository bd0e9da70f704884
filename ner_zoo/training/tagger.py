"""Base network of token taggers: emission scores -> linear-chain CRF (or softmax) -> tags -> spans (plain torch)."""

from __future__ import annotations

from typing import Any, Literal

import torch
import torch.nn.functional as F

from ner_zoo.data.batching import Batch
from ner_zoo.data.tagging import allowed_transitions, tags_to_spans
from ner_zoo.modules.crf import LinearChainCRF
from ner_zoo.ranges import check_choices
from ner_zoo.training.network import Network


class SequenceTagger(Network):
    """A model that scores one tag per token; subclasses implement :meth:`emissions`.

    Args:
        use_crf: decode with a linear-chain CRF (else independent softmax per token).
        constrain: forbid invalid tag bigrams of the scheme in the CRF (IOB2/BIOES), in training and decoding.
        loss_reduction: the tag loss over a batch, ``mean`` (per sentence for the CRF, per token for softmax) or
            ``sum``.
        **kwargs: see :class:`~ner_zoo.training.network.Network`.
    """

    def __init__(self, use_crf: bool = True, constrain: bool = True, loss_reduction: Literal["mean", "sum"] = "mean",
                 **kwargs: Any):
        super().__init__(**kwargs)
        check_choices(SequenceTagger.__init__, locals())
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
        return self.ids_from_emissions(self.emissions(batch), batch.mask)

    def ids_from_emissions(self, scores: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """Best tag ids per sentence (Viterbi with a CRF, else argmax), cut to each sentence's length."""
        ids = self.crf.decode(scores, mask) if self.crf is not None else scores.argmax(-1)
        lengths = mask.sum(1).tolist()
        return [row[:n] for row, n in zip(ids.tolist(), lengths)]

    def decode(self, batch: Batch) -> list[list]:
        return self.from_emissions(self.emissions(batch), batch.mask)

    def predict(self, batch: Batch) -> list[list]:
        return self.from_emissions(self.emissions(batch), batch.mask, with_scores=True)

    @torch.no_grad()
    def from_emissions(self, scores: torch.Tensor, mask: torch.Tensor, with_scores: bool = False) -> list[list]:
        """Tags (POS) or spans per sentence from emission scores ``[B, L, T]`` (what :meth:`decode` does after
        :meth:`emissions`; an exported scoring network's output decodes here too).

        ``with_scores``: spans come as :class:`~ner_zoo.training.span_model.ScoredSpans`, each span's score the
        mean over its tokens of the probability of the decoded tag: the CRF's posterior marginal
        (forward-backward), or the softmax probability without a CRF.
        """
        itos = self.vocabs.tags.itos
        id_seqs = self.ids_from_emissions(scores, mask)
        tag_seqs = [[itos[i] for i in row] for row in id_seqs]
        if self.is_pos:
            return tag_seqs
        # conlleval reading: also the repair rule for invalid sequences from an unconstrained decoder
        spans = [tags_to_spans(tags) for tags in tag_seqs]
        if not with_scores:
            return spans
        from ner_zoo.training.span_model import ScoredSpans

        probs = self.crf.marginals(scores, mask) if self.crf is not None else scores.float().softmax(-1)
        picked = [p[: len(ids)].gather(1, torch.tensor(ids, dtype=torch.long, device=p.device)[:, None])[:, 0].tolist()
                  for p, ids in zip(probs.float(), id_seqs)]
        return [ScoredSpans(row, [min(1.0, max(0.0, sum(tok[s.start:s.end]) / len(s))) for s in row])
                for row, tok in zip(spans, picked)]
