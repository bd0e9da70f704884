"""Span enumeration, geometry, representations and span losses (ner_zoo.modules.spans / span_losses)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ner_zoo.modules.biaffine import Biaffine
from ner_zoo.modules.span_losses import (
    BoundarySmoothingLoss,
    CrossEntropySpanLoss,
    FocalSpanLoss,
    boundary_smoothing_targets,
    focal_loss,
    hard_span_targets,
    smooth_l1_overlap_loss,
    soft_label_cross_entropy,
)
from ner_zoo.modules.spans import (
    SpanGrid,
    WidthEmbedding,
    best_iou_match,
    boundary_representation,
    enumerate_spans,
    iou_1d,
    span_max_pool,
    span_slots,
)


# --- enumeration -------------------------------------------------------------------------------------------
def test_enumeration_order_and_mask():
    spans, mask = enumerate_spans(torch.tensor([3, 1]), 2)
    assert spans[0].tolist() == [[0, 1], [1, 2], [2, 3], [0, 2], [1, 3]]  # width-major, then start
    assert spans[1].tolist() == spans[0].tolist()  # one grid for the batch
    assert mask.tolist() == [[True] * 5, [True, False, False, False, False]]


@pytest.mark.parametrize("widths", [1, 3, 7, [1, 2, 4], [3, 1]])
def test_enumeration_counts(widths):
    lengths = torch.tensor([5, 2, 1, 4])
    spans, mask = enumerate_spans(lengths, widths)
    ws = range(1, widths + 1) if isinstance(widths, int) else set(widths)
    for b, n in enumerate(lengths.tolist()):
        expected = {(i, i + w) for w in ws for i in range(n - w + 1)}
        got = [tuple(s) for s in spans[b][mask[b]].tolist()]
        assert len(got) == len(expected) and set(got) == expected
    assert (spans[..., 1] - spans[..., 0] >= 1).all()


def test_span_slots_round_trip_and_misses():
    lengths = torch.tensor([6])
    grid = SpanGrid.build(lengths, [1, 3, 4])
    slots = grid.slots(grid.spans[0])
    assert slots.tolist() == list(range(grid.spans.shape[1]))
    off_grid = torch.tensor([[0, 2], [4, 8], [-1, 2], [5, 5], [2, 6]])  # width 2 absent, beyond L, ..., ok
    assert span_slots(off_grid, 6, [1, 3, 4]).tolist()[:4] == [-1, -1, -1, -1]
    assert grid.spans[0, span_slots(off_grid, 6, [1, 3, 4])[4]].tolist() == [2, 6]


# --- geometry ----------------------------------------------------------------------------------------------
def test_iou_hand_values():
    a = torch.tensor([[0, 4], [2, 3]])
    b = torch.tensor([[2, 6], [0, 4], [5, 7]])
    # [0,4) vs [2,6): inter 2, union 6; vs itself 1; disjoint 0. [2,3) vs [2,6): 1/4; vs [0,4): 1/4
    expected = torch.tensor([[2 / 6, 1.0, 0.0], [0.25, 0.25, 0.0]])
    assert torch.allclose(iou_1d(a, b), expected)
    assert iou_1d(a.unsqueeze(0), b.unsqueeze(0)).shape == (1, 2, 3)


def test_best_iou_match_and_offsets():
    seeds = torch.tensor([[[0, 2], [3, 4], [6, 7], [1, 3]]])
    golds = torch.tensor([[[0, 3, 1], [3, 5, 2], [9, 9, 0]]])
    gold_mask = torch.tensor([[True, True, False]])
    m = best_iou_match(seeds, golds, gold_mask)
    assert m.index.tolist() == [[0, 1, -1, 0]]
    assert torch.allclose(m.iou, torch.tensor([[2 / 3, 0.5, 0.0, 2 / 3]]))
    assert m.offsets.tolist() == [[[0, 1], [0, 1], [0, 0], [-1, 0]]]
    empty = best_iou_match(seeds, golds[:, :0], gold_mask[:, :0])
    assert (empty.index == -1).all() and (empty.offsets == 0).all()


# --- representations ---------------------------------------------------------------------------------------
def _naive_max(states, spans, mask):
    out = torch.zeros(*spans.shape[:2], states.shape[-1])
    for b in range(spans.shape[0]):
        for i in range(spans.shape[1]):
            if mask[b, i]:
                s, e = spans[b, i].tolist()
                out[b, i] = states[b, s:e].max(0).values
    return out


@pytest.mark.parametrize("widths", [1, 5, 9, [2, 3, 8]])
def test_max_pool_matches_naive_loop(widths):
    torch.manual_seed(0)
    lengths = torch.tensor([9, 4, 1])
    states = torch.randn(3, 9, 6, requires_grad=True)
    spans, mask = enumerate_spans(lengths, widths)
    fast = span_max_pool(states, spans, mask)
    assert torch.equal(fast, _naive_max(states.detach(), spans, mask))
    bounded = span_max_pool(states, spans, mask, max_width=max(widths) if isinstance(widths, list) else widths)
    assert torch.equal(bounded, fast)
    (g_fast,) = torch.autograd.grad(fast.sum(), states)
    ref = states.detach().clone().requires_grad_(True)
    naive = torch.stack([torch.stack([ref[b, s:e].max(0).values if m else ref.new_zeros(6)
                                      for (s, e), m in zip(spans[b].tolist(), mask[b].tolist())])
                         for b in range(3)])
    (g_ref,) = torch.autograd.grad(naive.sum(), ref)
    assert torch.allclose(g_fast, g_ref)


def test_boundary_representation():
    states = torch.arange(2 * 4 * 1, dtype=torch.float).view(2, 4, 1)  # value = 4 * b + position
    spans = torch.tensor([[[0, 2], [1, 4]], [[0, 1], [1, 3]]])
    inner = boundary_representation(states, spans)
    assert inner[..., 0].tolist() == [[0, 1], [4, 5]] and inner[..., 1].tolist() == [[1, 3], [4, 6]]
    both = boundary_representation(states, spans, lengths=torch.tensor([4, 3]), outer=True)
    assert both.shape == (2, 2, 4)
    assert both[..., 2].tolist() == [[0, 0], [4, 4]]  # start - 1 clamped at 0
    assert both[..., 3].tolist() == [[2, 3], [5, 6]]  # end clamped at length - 1


def test_width_embedding_clips():
    emb = WidthEmbedding(3, 4)
    out = emb(torch.tensor([[0, 1], [0, 3], [2, 9]]))
    assert out.shape == (3, 4) and torch.equal(out[1], out[2])


def test_biaffine_shape_and_bias():
    torch.manual_seed(0)
    x, y = torch.randn(2, 3, 4), torch.randn(2, 5, 6)
    full = Biaffine(4, 6, out=7)
    assert full(x, y).shape == (2, 3, 5, 7)
    # with both biases, scores = x U y + x.u + v.y + c
    U, u, v, c = full.weight[:, :4, :6], full.weight[:, :4, 6], full.weight[:, 4, :6], full.weight[:, 4, 6]
    manual = (torch.einsum("bnx,oxy,bmy->bnmo", x, U, y) + torch.einsum("bnx,ox->bno", x, u)[:, :, None]
              + torch.einsum("oy,bmy->bmo", v, y)[:, None] + c)
    assert torch.allclose(full(x, y), manual, atol=1e-5)
    plain = Biaffine(4, 6, out=1, bias_x=False, bias_y=False)
    assert plain.weight.shape == (1, 4, 6)
    assert torch.allclose(plain(x, y)[..., 0], x @ plain.weight[0] @ y.transpose(1, 2), atol=1e-5)


# --- losses ------------------------------------------------------------------------------------------------
def test_focal_loss_formula():
    torch.manual_seed(0)
    logits, target = torch.randn(6, 4), torch.tensor([0, 1, 2, 3, 1, 0])
    assert torch.allclose(focal_loss(logits, target, gamma=0), F.cross_entropy(logits, target, reduction="none"))
    p = logits.softmax(-1)[torch.arange(6), target]
    alpha = torch.tensor([0.25, 1.0, 2.0, 0.5])
    manual = -alpha[target] * (1 - p) ** 2 * p.log()
    out = focal_loss(logits, target, gamma=2, alpha=alpha)
    assert out.shape == (6,) and torch.allclose(out, manual, atol=1e-6)
    assert torch.allclose(focal_loss(logits, target, reduction="mean"), manual.div(alpha[target]).mean(), atol=1e-6)
    ignored = focal_loss(logits, torch.tensor([0, -100, 2, 3, 1, 0]))
    assert ignored[1] == 0


def test_smooth_l1_and_overlap():
    pred = torch.tensor([[0.0, 4.0], [1.5, 3.0], [5.0, 6.0]])
    gold = torch.tensor([[0.0, 4.0], [1.0, 3.0], [0.0, 2.0]])
    smooth, overlap = smooth_l1_overlap_loss(pred, gold)
    assert torch.allclose(smooth, torch.tensor([0.0, 0.5 * 0.25, 4.5 + 3.5]))  # summed over boundaries (Eq. 14)
    # identical -> 0; nested [1.5,3) in [1,3): 1 - 1.5/2; disjoint with gap 3 over hull 6: 1 + 3/6
    assert torch.allclose(overlap, torch.tensor([0.0, 0.25, 1.5]))


def _grid_and_gold():
    lengths = torch.tensor([7, 3])
    grid = SpanGrid.build(lengths, 4)
    gold = torch.tensor([[[2, 4, 1], [0, 1, 2]], [[0, 3, 2], [0, 0, 0]]])
    gold_mask = torch.tensor([[True, True], [True, False]])
    return grid, gold, gold_mask


def test_hard_targets():
    grid, gold, gold_mask = _grid_and_gold()
    target = hard_span_targets(grid, gold, gold_mask)
    labelled = {(b, *grid.spans[b, i].tolist(), int(target[b, i])) for b, i in target.nonzero().tolist()}
    assert labelled == {(0, 2, 4, 1), (0, 0, 1, 2), (1, 0, 3, 2)}


def test_boundary_smoothing_mass():
    grid, gold, gold_mask = _grid_and_gold()
    eps = 0.1
    t = boundary_smoothing_targets(grid, gold, gold_mask, num_classes=3, epsilon=eps, size=1)
    assert torch.allclose(t.sum(-1), torch.ones(t.shape[:2]))
    slot = grid.slots(gold)
    assert torch.isclose(t[0, slot[0, 0], 1], torch.tensor(1 - eps))  # interior gold keeps exactly 1 - eps
    # (2,4)'s four neighbours (1,4) (3,4) (2,3) (2,5) get eps/4 each
    for s, e in [(1, 4), (3, 4), (2, 3), (2, 5)]:
        assert torch.isclose(t[0, grid.slots(torch.tensor([s, e])), 1], torch.tensor(eps / 4))
    # (0,1): neighbours (-1,1), (0,0), (1,1) are impossible -> their mass returns to it; (0,2) gets eps/4
    assert torch.isclose(t[0, slot[0, 1], 2], torch.tensor(1 - eps / 4))
    # entity mass of a sentence = number of gold spans when neighbourhoods are disjoint
    entity_mass = (t[..., 1:] * grid.mask.unsqueeze(-1)).sum((1, 2))
    assert torch.allclose(entity_mass, torch.tensor([2.0, 1.0]))
    assert torch.equal(boundary_smoothing_targets(grid, gold, gold_mask, 3, epsilon=0.0).argmax(-1),
                       hard_span_targets(grid, gold, gold_mask))


def test_boundary_smoothing_overlaps_normalised():
    grid = SpanGrid.build(torch.tensor([5]), 3)
    gold = torch.tensor([[[1, 3, 1], [1, 2, 1], [2, 3, 1]]])  # neighbours of each other
    t = boundary_smoothing_targets(grid, gold, torch.ones(1, 3, dtype=torch.bool), 2, epsilon=0.2, size=2)
    assert (t >= 0).all() and torch.allclose(t.sum(-1), torch.ones(1, t.shape[1]))
    assert t[0, grid.slots(gold[0]), 1].max() <= 1.0


def test_span_loss_modules():
    torch.manual_seed(0)
    grid, gold, gold_mask = _grid_and_gold()
    logits = torch.randn(*grid.mask.shape, 3)
    target = hard_span_targets(grid, gold, gold_mask)
    ce = F.cross_entropy(logits[grid.mask], target[grid.mask])
    assert torch.allclose(CrossEntropySpanLoss()(logits, grid, gold, gold_mask), ce)
    assert torch.allclose(FocalSpanLoss(gamma=0)(logits, grid, gold, gold_mask), ce)
    assert torch.allclose(BoundarySmoothingLoss(epsilon=0.0)(logits, grid, gold, gold_mask), ce, atol=1e-6)
    summed = CrossEntropySpanLoss(reduction="sum")(logits, grid, gold, gold_mask)
    assert torch.allclose(summed, ce * grid.mask.sum() / 2)
    soft = boundary_smoothing_targets(grid, gold, gold_mask, 3)
    manual = -(soft * logits.log_softmax(-1)).sum(-1)
    assert torch.allclose(soft_label_cross_entropy(logits, soft), manual)
