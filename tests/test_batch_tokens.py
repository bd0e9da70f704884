"""``data.batch_tokens``: length-bucketed training batches under a padded-token budget, exact and resumable."""

import random

import pytest
import torch

from ner_zoo.data.batching import TokenBudgetSampler

_RNG = random.Random(0)
LENGTHS = [_RNG.randint(1, 40) for _ in range(500)] + [120, 95]  # two over a budget of 80


def test_every_sentence_once_per_epoch_within_the_budget_except_overlong_ones_alone():
    sampler = TokenBudgetSampler(LENGTHS, 80, seed=3)
    assert sampler.over_budget == [95, 120]
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert sorted(i for b in batches for i in b) == list(range(len(LENGTHS)))
        for b in batches:
            longest = max(LENGTHS[i] for i in b)
            assert len(b) * longest <= 80 or (len(b) == 1 and longest > 80)
        sizes = [len(b) for b in batches]
        assert max(sizes) > 3 * min(sizes)  # short sentences share a batch, long ones do not
    sampler.set_epoch(0)
    first = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first  # reshuffled each epoch
    sampler.set_epoch(0)
    assert list(sampler) == first  # seeded


def test_ranks_split_the_batches_and_run_the_same_number_of_steps():
    ranks = [TokenBudgetSampler(LENGTHS, 80, num_replicas=3, rank=r, seed=3) for r in range(3)]
    shards = [list(s) for s in ranks]
    assert len({len(s) for s in shards}) == 1
    seen = [i for s in shards for b in s for i in b]
    assert set(seen) == set(range(len(LENGTHS)))
    assert len(seen) - len(LENGTHS) == sum(len(b) for b in TokenBudgetSampler(LENGTHS, 80, seed=3).batches()[
        : len(shards[0]) * 3 - len(TokenBudgetSampler(LENGTHS, 80, seed=3).batches())])  # only the padding repeats


def test_rejects_a_non_positive_budget():
    with pytest.raises(ValueError, match="batch_tokens"):
        TokenBudgetSampler(LENGTHS, 0)


def test_training_loader_resumes_mid_epoch_with_the_batches_not_yet_seen():
    from ner_zoo.data.corpora import SampleCorpus

    dm = SampleCorpus(batch_tokens=60)
    loader = dm.train_dataloader()
    full = [b.indices.tolist() for b in loader]
    assert all(len(b) * max(len(dm.train_sentences()[i]) for i in b) <= 60 for b in full)
    it = iter(loader)
    for _ in range(3):
        next(it)
    state = loader.state_dict()
    resumed = dm.train_dataloader()
    resumed.load_state_dict(state)
    assert [b.indices.tolist() for b in resumed] == full[3:]


def test_fit_with_batch_tokens_through_the_cli_reports_an_overlong_sentence(tmp_path):
    from battery import SAMPLE_DATA, build

    model = {"class_path": "ner_zoo.models.BiLSTMCRF", "init_args": {"words": {"dim": 8}, "lstm_hidden": 8}}
    data = {**SAMPLE_DATA, "init_args": {"max_sentences": 24, "batch_tokens": 12}}
    over = r"longer than data.batch_tokens=12 \(longest 17 tokens\); each is a batch of its own"
    with pytest.warns(UserWarning, match=over):
        cli = build(model, data, tmp_path, trainer={"max_epochs": 1, "limit_val_batches": 0}, subcommand="fit")
    sentences = cli.datamodule.train_sentences()
    steps = len(TokenBudgetSampler([len(s) for s in sentences], 12, seed=cli.datamodule.split_seed))
    assert cli.trainer.global_step == steps and torch.isfinite(cli.trainer.callback_metrics["train/loss"])
