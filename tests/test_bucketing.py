"""Length buckets reach the loader whole (issue 33): the sampler's short batch must not shift the others."""

from __future__ import annotations

import random

from torch.utils.data import DataLoader

from ner_zoo.data.batching import IndexedDataset, ShardSampler


def test_loader_batches_are_the_sorted_buckets_when_the_last_one_is_short():
    rng = random.Random(0)
    lengths = [rng.randint(1, 60) for _ in range(1003)]  # 100 full batches of 10 and one of 3
    sampler = ShardSampler(lengths, 10, shuffle=True, bucket=True, pad=True, seed=5)
    loader = DataLoader(IndexedDataset(list(range(len(lengths)))), batch_size=10, sampler=sampler,
                        collate_fn=lambda items: [i for i, _ in items])
    batches = list(loader)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # every sentence once
    assert [len(b) for b in batches] == [10] * 100 + [3]
    # each batch is a slice of its chunk sorted by length: padded positions barely exceed the real ones
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    assert padded < 1.05 * sum(lengths)
    order = [i for b in batches for i in b]
    assert order != sorted(order)  # still shuffled
