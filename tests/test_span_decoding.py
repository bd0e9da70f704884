"""Span selection: greedy flat/nested decoding, crossing removal, duplicate merging, Soft-NMS."""

from __future__ import annotations

import random

import pytest
import torch

from ner_zoo.modules.span_decoding import (
    crossing_matrix,
    decode_flat,
    decode_nested,
    greedy_select,
    merge_duplicates,
    overlap_matrix,
    remove_crossing,
    soft_nms_1d,
)


def _naive_greedy(spans, scores, clash):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable: ties keep input order
    kept = []
    for i in order:
        if not any(clash(spans[i], spans[k]) for k in kept):
            kept.append(i)
    return kept


def _overlaps(a, b):
    return a[0] < b[1] and b[0] < a[1]


def _crosses(a, b):
    nested = (a[0] <= b[0] and b[1] <= a[1]) or (b[0] <= a[0] and a[1] <= b[1])
    return _overlaps(a, b) and not nested


def _random_candidates(rng, n, length=12):
    spans = []
    for _ in range(n):
        s = rng.randrange(length)
        spans.append((s, rng.randint(s + 1, min(length, s + 5))))
    scores = [round(rng.random(), 2) for _ in range(n)]  # rounding makes ties
    return spans, scores


def test_matrices():
    spans = torch.tensor([[0, 3], [1, 2], [2, 5], [3, 4]])
    assert overlap_matrix(spans).tolist() == [[True, True, True, False], [True, True, False, False],
                                              [True, False, True, True], [False, False, True, True]]
    crossing = crossing_matrix(spans)
    assert crossing.tolist() == [[False, False, True, False], [False] * 4, [True, False, False, False], [False] * 4]


def test_flat_decoding_hand_example():
    spans = torch.tensor([[0, 2], [1, 3], [3, 4], [0, 4]])
    scores = torch.tensor([0.9, 0.95, 0.5, 0.6])
    assert decode_flat(spans, scores).tolist() == [1, 2]


@pytest.mark.parametrize("seed", range(20))
def test_flat_and_nested_match_naive_greedy(seed):
    rng = random.Random(seed)
    spans, scores = _random_candidates(rng, rng.randint(0, 25))
    st, sc = torch.tensor(spans, dtype=torch.long).view(-1, 2), torch.tensor(scores)
    flat = decode_flat(st, sc).tolist()
    assert flat == _naive_greedy(spans, scores, lambda a, b: _overlaps(a, b))
    kept = [spans[i] for i in flat]
    assert all(not _overlaps(a, b) for i, a in enumerate(kept) for b in kept[i + 1:])
    nested = decode_nested(st, sc).tolist()
    assert nested == _naive_greedy(spans, scores, lambda a, b: _crosses(a, b) or a == b)
    kept = [spans[i] for i in nested]
    assert all(not _crosses(a, b) and a != b for i, a in enumerate(kept) for b in kept[i + 1:])


def test_nested_keeps_nesting_drops_crossing():
    spans = torch.tensor([[0, 4], [1, 2], [2, 6], [0, 4]])
    scores = torch.tensor([0.9, 0.8, 0.85, 0.7])
    assert decode_nested(spans, scores).tolist() == [0, 1]  # (2,6) crosses (0,4); duplicate (0,4) dropped
    assert decode_nested(spans, scores, allow_same_span=True).tolist() == [0, 1, 3]


def test_greedy_empty():
    assert greedy_select(torch.zeros(0), torch.zeros(0, 0, dtype=torch.bool)).numel() == 0


def test_remove_crossing_drops_both_members():
    spans = torch.tensor([[0, 3], [2, 5], [0, 5], [6, 7], [1, 2]])
    assert remove_crossing(spans).tolist() == [False, False, True, True, True]


def test_merge_duplicates():
    spans = torch.tensor([[0, 2], [1, 3], [0, 2], [0, 2], [1, 3]])
    scores = torch.tensor([0.5, 0.4, 0.7, 0.6, 0.9])
    labels = torch.tensor([1, 2, 1, 2, 2])
    idx, sc = merge_duplicates(spans, scores, labels)
    assert idx.tolist() == [0, 1] and torch.allclose(sc, torch.tensor([0.5, 0.4]))
    idx, sc = merge_duplicates(spans, scores, labels, accumulate="sum")
    assert torch.allclose(sc, torch.tensor([0.5 + 0.7, 0.4 + 0.9]))
    idx, sc = merge_duplicates(spans, scores, labels, accumulate="repeat")  # Locate-and-Label's evaluator
    assert torch.allclose(sc, torch.tensor([0.5 * 2, 0.4 * 2]))
    idx, sc = merge_duplicates(spans, scores, labels, keep="best")
    assert idx.tolist() == [2, 4] and torch.allclose(sc, torch.tensor([0.7, 0.9]))


def test_soft_nms_step_hand_example():
    # A=[0,5) .9, B=[0,4) .8, C=[1,5) .75, D=[6,8) .5
    # take A: IoU(A,B)=IoU(A,C)=0.8 >= 0.6 -> B .72, C .675; take B: IoU(B,C)=3/5=0.6 >= k (Eq. 18) -> C .6075
    spans = torch.tensor([[0, 4], [0, 5], [6, 8], [1, 5]])
    scores = torch.tensor([0.8, 0.9, 0.5, 0.75])
    idx, final = soft_nms_1d(spans, scores, method="step", iou_threshold=0.6, decay=0.9)
    assert idx.tolist() == [1, 0, 3, 2]
    assert torch.allclose(final, torch.tensor([0.9, 0.72, 0.6075, 0.5]))
    idx, final = soft_nms_1d(spans, scores, score_threshold=0.7)
    assert idx.tolist() == [1, 0]


def test_soft_nms_reorders_after_decay():
    # A=[0,4) .9 decays B=[0,5) (IoU .8) from .85 to .765, below C=[7,9) .8, which is now taken first
    spans = torch.tensor([[0, 4], [0, 5], [7, 9]])
    idx, final = soft_nms_1d(spans, torch.tensor([0.9, 0.85, 0.8]))
    assert idx.tolist() == [0, 2, 1] and torch.allclose(final, torch.tensor([0.9, 0.8, 0.765]))


def test_soft_nms_other_methods():
    spans = torch.tensor([[0, 4], [0, 5], [6, 8]])
    scores = torch.tensor([0.8, 0.9, 0.5])
    idx, final = soft_nms_1d(spans, scores, method="hard", score_threshold=0.0)
    assert idx.tolist() == [1, 2]
    idx, final = soft_nms_1d(spans, scores, method="linear")
    assert idx.tolist() == [1, 2, 0] and torch.allclose(final, torch.tensor([0.9, 0.5, 0.8 * 0.2]))
    idx, final = soft_nms_1d(spans, scores, method="gaussian", sigma=0.5)
    assert torch.allclose(final, torch.tensor([0.9, 0.5, 0.8 * torch.exp(torch.tensor(-0.64 / 0.5))]))
    with pytest.raises(ValueError):
        soft_nms_1d(spans, scores, method="cubic")
    empty, _ = soft_nms_1d(spans[:0], scores[:0])
    assert empty.numel() == 0


@pytest.mark.parametrize("nested", [False, True])
def test_batched_decoding_equals_per_sentence(nested):
    from ner_zoo.modules.span_decoding import decode_batch, soft_nms_batch

    rng = random.Random(3)
    sents = [_random_candidates(rng, n) for n in (0, 1, 7, 15, 4)]
    n = max(len(sp) for sp, _ in sents)
    spans = torch.zeros(len(sents), n, 2, dtype=torch.long)
    scores = torch.zeros(len(sents), n)
    valid = torch.zeros(len(sents), n, dtype=torch.bool)
    for b, (sp, sc) in enumerate(sents):
        spans[b, : len(sp)] = torch.tensor(sp, dtype=torch.long).view(-1, 2)
        scores[b, : len(sc)] = torch.tensor(sc)
        valid[b, : len(sp)] = True
    keep = decode_batch(spans, scores, valid, nested=nested)
    final, rank = soft_nms_batch(spans, scores, valid)
    for b, (sp, sc) in enumerate(sents):
        st, stc = spans[b, : len(sp)], scores[b, : len(sc)]
        single = (decode_nested if nested else decode_flat)(st, stc)
        assert sorted(single.tolist()) == keep[b].nonzero().squeeze(1).tolist()
        idx, fin = soft_nms_1d(st, stc, score_threshold=-1.0)
        assert torch.argsort(rank[b, : len(sp)]).tolist() == idx.tolist()
        assert torch.allclose(final[b, idx], fin)
    assert not (keep & ~valid).any()
