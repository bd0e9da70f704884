"""One batching path (issue 31): the sampler makes the batches and the loader takes them as they are; it neither
cuts them again nor writes into the sampler."""

from __future__ import annotations

import random

from ner_zoo.data import SampleCorpus
from ner_zoo.data.batching import ShardSampler


def test_the_loader_serves_the_sampler_batches_as_they_are():
    dm = SampleCorpus(batch_size=8, max_sentences=60, bucket=True)
    dm.setup("fit")
    loader = dm.train_dataloader()
    assert loader.batch_size is None  # no second batching
    loader.sampler.set_epoch(1)
    served = [b.indices.tolist() for b in loader]
    assert served == loader.sampler.batches()
    assert sorted(i for b in served for i in b) == list(range(60)) and [len(b) for b in served][:-1] == [8] * 7
    before = dict(vars(loader.sampler))
    state = {"epoch": 1, "batches": 3}
    loader.load_state_dict(state)
    assert [b.indices.tolist() for b in loader] == served[3:]
    assert vars(loader.sampler).keys() == before.keys()  # the loader added no attribute to the sampler


def test_ranks_share_the_batches_exactly():
    rng = random.Random(1)
    lengths = [rng.randint(1, 40) for _ in range(203)]
    for pad in (False, True):
        ranks = [ShardSampler(lengths, 10, shuffle=True, bucket=True, pad=pad, num_replicas=3, rank=r, seed=4)
                 for r in range(3)]
        got = [list(s) for s in ranks]
        flat = sorted(i for batches in got for b in batches for i in b)
        if pad:  # every rank runs as many steps; the first batches are repeated to get there
            assert len({len(b) for b in got}) == 1 and set(flat) == set(range(203))
        else:  # evaluation: every sentence once
            assert flat == list(range(203))
        padded = sum(max(lengths[i] for i in b) * len(b) for batches in got for b in batches)
        assert padded < 1.1 * sum(lengths[i] for i in flat)  # buckets reach the loader whole
