"""SpanF1 / SpanF1ByLength / TokenAccuracy synchronise exactly across 2 CPU processes (gloo)."""

from __future__ import annotations

import random

import pytest
import torch

from ddp_utils import spawn_gloo
from ner_zoo.data.schema import Span
from ner_zoo.metrics import SpanF1, SpanF1ByLength, TokenAccuracy

LABELS = ["LOC", "ORG", "PER"]
WORLD = 2


def _data(n: int = 53, seed: int = 0):
    rng = random.Random(seed)

    def spans():
        starts = [rng.randrange(15) for _ in range(rng.randint(0, 5))]
        return [Span(s, s + rng.randint(1, 11), rng.choice(LABELS)) for s in starts]

    golds = [spans() for _ in range(n)]
    preds = [rng.sample(g, k=len(g) // 2) + spans() for g in golds]
    preds[3].append(Span(0, 1, "UNKNOWN"))  # exercises the unknown-label counter too
    tags = [[rng.randrange(4) for _ in range(7)] for _ in range(n)]
    guesses = [[t if rng.random() < 0.7 else rng.randrange(4) for t in ts] for ts in tags]
    return preds, golds, guesses, tags


def _metrics():
    return SpanF1(LABELS), SpanF1ByLength(), TokenAccuracy()


def _results(span, length, acc) -> dict[str, float]:
    out = SpanF1.to_floats(span.compute(), "span/")
    out.update(SpanF1.to_floats(length.compute(), "length/"))
    out["acc"] = float(acc.compute())
    return out


def _worker(rank: int, out_path: str) -> None:
    preds, golds, guesses, tags = _data()
    # uneven shards: rank 0 gets the first 20 sentences in one batch, rank 1 the other 33 in three
    batches = [(0, 20)] if rank == 0 else [(20, 31), (31, 32), (32, 53)]
    span, length, acc = _metrics()
    for a, b in batches:
        span.update(preds[a:b], golds[a:b])
        length.update(preds[a:b], golds[a:b])
        acc.update(torch.tensor(guesses[a:b]), torch.tensor(tags[a:b]))
    result = _results(span, length, acc)
    assert int(span.n_sentences) == sum(b - a for a, b in batches)  # compute() leaves local states
    with span.sync_context():
        result["n_sentences"] = float(span.n_sentences)
    torch.save(result, f"{out_path}.{rank}")


@pytest.mark.ddp
def test_ddp_sync_equals_single_process(tmp_path):
    preds, golds, guesses, tags = _data()
    span, length, acc = _metrics()
    span.update(preds, golds)
    length.update(preds, golds)
    acc.update(torch.tensor(guesses), torch.tensor(tags))
    expected = _results(span, length, acc)
    assert int(span.unknown_fp) == 1 and 0 < expected["span/f1"] < 1

    out = str(tmp_path / "result")
    spawn_gloo(_worker, out, world=WORLD)
    for rank in range(WORLD):
        got = torch.load(f"{out}.{rank}")
        assert got.pop("n_sentences") == len(golds)
        assert got == expected  # exact: the states are integer counts
