"""Length buckets reach the loader whole (issue 33): the sampler's short batch must not shift the others."""

from __future__ import annotations

import random

from torch.utils.data import DataLoader

from ner_zoo.data.batching import IndexedDataset, ShardSampler
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)


def test_loader_batches_are_the_sorted_buckets_when_the_last_one_is_short():
    rng = random.Random(0)
    lengths = [rng.randint(1, 60) for _ in range(1003)]  # 100 full batches of 10 and one of 3
    sampler = ShardSampler(lengths, 10, shuffle=True, bucket=True, pad=True, seed=5)
    if isinstance(next(iter(sampler)), list):  # a sampler of whole batches
        batches = list(sampler)
    else:  # a sampler of sentences, cut into batches by the loader
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


def test_transformer_tagger_batches_are_bucketed_by_sub_words(tmp_path, tiny_bert_dir):  # noqa: F811
    import copy

    from battery import SAMPLE_DATA, build
    from ner_zoo.testing.tiny import tiny_model

    data = copy.deepcopy(SAMPLE_DATA)
    data["init_args"]["bucket"] = True
    cli = build(tiny_model("transformer_tagger", tiny_bert_dir, use_crf=False), data, tmp_path,
                trainer={"max_epochs": 1, "limit_train_batches": 1, "limit_val_batches": 1}, subcommand="fit")
    dm, encoder = cli.datamodule, cli.model.encoder
    train = dm.train_sentences()
    subwords = [len(encoder.tokenizer(list(s.tokens), is_split_into_words=True, add_special_tokens=False)["input_ids"])
                for s in train]
    assert subwords != [len(s) for s in train]  # the test tells the two apart
    assert dm.train_dataloader().sampler.lengths == subwords
    dev = dm.sentences("dev")
    assert dm.val_dataloader().sampler.lengths == encoder.subword_lengths([s.tokens for s in dev])


def test_tagger_sorts_by_the_lengths_the_model_hands_over():
    """The Python API batches sentences in the order of ``bucket_lengths`` (a transformer's sub-words) when the
    model has it, else by words."""
    import torch

    from ner_zoo.api.tagger import Tagger
    from ner_zoo.data.schema import Sentence

    class Fake(torch.nn.Module):
        is_pos = False

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.batches: list[list[int]] = []

        def context_encoders(self):
            return []

        def bucket_lengths(self, sentences):
            return [10 - len(s.tokens) for s in sentences]  # the longest sentence costs least

        def collate(self, chunk):
            self.batches.append([len(s.tokens) for _, s in chunk])
            return torch.zeros(len(chunk))

        def predict(self, batch):  # what use reads (Network.predict)
            return [[] for _ in range(len(batch))]

    model = Fake()
    Tagger(model, batch_size=2).predict_sentences([Sentence(["w"] * n) for n in (1, 5, 3, 2, 4, 6)])
    assert model.batches == [[6, 5], [4, 3], [2, 1]]
