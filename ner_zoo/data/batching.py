"""Featurising sentences into padded tensors, and samplers that are exact under DDP."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Iterator, Sequence

import torch
from torch.utils.data import DistributedSampler

from ner_zoo.data.schema import Sentence
from ner_zoo.data.tagging import spans_to_tags
from ner_zoo.data.vocab import Vocab


@dataclass
class Batch:
    """A padded batch. ``mask`` is True on real tokens; padding ids are 0 everywhere.

    Attributes:
        sentences: the source sentences (gold spans for metrics, tokens for transformer encoders).
        indices: position of each sentence in its dataset (for writers and DDP bookkeeping).
        words: word ids ``[B, L]``.
        chars: char ids ``[B, L, C]``.
        mask: ``[B, L]`` bool.
        tags: gold tag ids ``[B, L]`` for tagging tasks (``None`` when unlabelled or span-only).
        features: extra categorical input columns (e.g. ``pos``) as ids ``[B, L]``.
        targets: extra gold targets a model's collator adds (e.g. MIN's sub-task tags), by name; never inputs.
    """

    sentences: list[Sentence]
    indices: torch.Tensor
    words: torch.Tensor
    chars: torch.Tensor
    mask: torch.Tensor
    tags: torch.Tensor | None = None
    features: dict[str, torch.Tensor] = field(default_factory=dict)
    targets: dict[str, torch.Tensor] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(1)

    def pin_memory(self) -> "Batch":
        """The batch with its tensors in page-locked memory (DataLoader ``pin_memory=True``)."""
        changes = {f.name: getattr(self, f.name) for f in fields(self)}  # subclasses' tensors too
        changes = {k: v.pin_memory() if isinstance(v, torch.Tensor)
                   else {n: t.pin_memory() for n, t in v.items()} if k in ("features", "targets") else v
                   for k, v in changes.items()}
        return replace(self, **changes)

    def to(self, device: torch.device | str, non_blocking: bool = False, **_: object) -> "Batch":
        move = lambda t: None if t is None else t.to(device, non_blocking=non_blocking)  # noqa: E731
        return replace(self, indices=move(self.indices), words=move(self.words), chars=move(self.chars),
                       mask=move(self.mask), tags=move(self.tags),
                       features={k: move(v) for k, v in self.features.items()},
                       targets={k: move(v) for k, v in self.targets.items()})


class Collator:
    """Turns ``(index, Sentence)`` pairs into a :class:`Batch` with the vocabularies of a model.

    Each sentence is turned into ids once (word ids, its words' char ids without padding, tag ids,
    feature ids) and kept while the collator lives (one fit: the loaders keep theirs), so a batch of
    later epochs is only padded together, with a fixed number of tensor operations whatever its size.

    Args:
        words, chars: vocabularies.
        tags: tag vocabulary for tagging tasks (``None`` for span models).
        scheme: tag scheme used to encode gold spans as ``tags`` (NER, chunking).
        tag_column: read gold tags from this column instead (POS tagging).
        features: extra columns to index, by name.
    """

    def __init__(self, words: Vocab, chars: Vocab, tags: Vocab | None = None, scheme: str | None = None,
                 tag_column: str | None = None, features: dict[str, Vocab] | None = None):
        self.words, self.chars, self.tag_vocab = words, chars, tags
        self.scheme, self.tag_column, self.features = scheme, tag_column, features or {}
        self._ids: dict[int, tuple] = {}

    def gold_tags(self, sentence: Sentence) -> list[str]:
        if self.tag_column is not None:
            return sentence.columns[self.tag_column]
        return spans_to_tags(sentence.spans, len(sentence), self.scheme, where=sentence.source)

    def _labelled(self, s: Sentence) -> bool:
        return (s.columns.get(self.tag_column) is not None) if self.tag_column else s.spans is not None

    def sentence_ids(self, s: Sentence) -> tuple:
        """``(word ids [n], char ids of all words [sum of word lengths] int32, word lengths [n], tag ids [n] or
        None, {feature: ids [n]})``, computed on the first call for ``s``."""
        hit = self._ids.get(id(s))
        if hit is not None and hit[0] is s:  # the entry holds the sentence, so its id is never reused
            return hit[1]
        char_index = self.chars.stoi.get
        tags = None
        if self.tag_vocab is not None and self._labelled(s):
            tags = torch.tensor(self.tag_vocab.lookup_indices(self.gold_tags(s)), dtype=torch.long)
        ids = (torch.tensor(self.words.lookup_indices(s.tokens), dtype=torch.long),
               torch.tensor([char_index(c, 1) for t in s.tokens for c in t], dtype=torch.int32),
               torch.tensor([len(t) for t in s.tokens], dtype=torch.long), tags,
               {k: torch.tensor(v.lookup_indices(s.columns[k]), dtype=torch.long) for k, v in self.features.items()})
        self._ids[id(s)] = (s, ids)
        return ids

    def __call__(self, items: Sequence[tuple[int, Sentence]]) -> Batch:
        sentences = [s for _, s in items]
        ids = [self.sentence_ids(s) for s in sentences]
        b = len(sentences)
        n = torch.tensor([len(s) for s in sentences])
        lmax = int(n.max())
        word_len = torch.cat([x[2] for x in ids])  # [tokens]
        cmax = int(word_len.max())
        # flat position of each token in [b, lmax], then of each char in [b * lmax, cmax]
        pos = torch.arange(len(word_len)) + torch.repeat_interleave(torch.arange(b) * lmax - (n.cumsum(0) - n), n)
        char_col = torch.arange(int(word_len.sum())) - torch.repeat_interleave(word_len.cumsum(0) - word_len, word_len)
        words = torch.zeros(b * lmax, dtype=torch.long)
        words[pos] = torch.cat([x[0] for x in ids])
        chars = torch.zeros(b * lmax, cmax, dtype=torch.long)
        chars[torch.repeat_interleave(pos, word_len), char_col] = torch.cat([x[1] for x in ids]).long()
        mask = torch.arange(lmax).unsqueeze(0) < n.unsqueeze(1)
        tags = None
        if all(x[3] is not None for x in ids) and self.tag_vocab is not None:
            tags = torch.zeros(b * lmax, dtype=torch.long)
            tags[pos] = torch.cat([x[3] for x in ids])
            tags = tags.view(b, lmax)
        feats = {}
        for k in self.features:
            feats[k] = torch.zeros(b * lmax, dtype=torch.long)
            feats[k][pos] = torch.cat([x[4][k] for x in ids])
            feats[k] = feats[k].view(b, lmax)
        indices = torch.tensor([i for i, _ in items], dtype=torch.long)
        return Batch(sentences, indices, words.view(b, lmax), chars.view(b, lmax, cmax), mask, tags, feats)


class IndexedDataset(torch.utils.data.Dataset):
    """A list of sentences whose items are ``(index, sentence)``."""

    def __init__(self, sentences: Sequence[Sentence]):
        self.sentences = list(sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, i: int | list[int]) -> tuple[int, Sentence] | list[tuple[int, Sentence]]:
        if isinstance(i, list):  # a whole batch from a TokenBudgetSampler
            return [(j, self.sentences[j]) for j in i]
        return i, self.sentences[i]


class ShardSampler(DistributedSampler):
    """The batches of one rank: optional shuffling and length bucketing, exact sharding. Yields one list of
    sentence indices per batch, so the loader takes them as they are (``DataLoader(batch_size=None)``): the
    batches are made here only.

    Each epoch (seeded with ``seed + epoch``) cuts the (shuffled) sentences into batches of ``batch_size``;
    bucketing sorts chunks of ``100 * batch_size`` sentences by length before cutting, then shuffles the
    batches, so padding is small and order stays random (the one short batch, the end of the last chunk, goes
    last: anywhere else it would shift every later batch across two sorted buckets). Ranks get
    ``batches[rank::world]`` (in evaluation with fewer batches than ranks, ``sentences[rank::world]``, so that no
    rank is empty). With ``pad=False`` (evaluation) no sentence is repeated, so metrics synced over ranks equal
    the single-process metrics; ranks may then run unequal numbers of batches, which is safe because metric states are only synced at epoch end. With ``pad=True`` (training)
    the batches are padded by the first ones to a multiple of the world size, so every rank runs the same
    number of steps, as DDP requires. :meth:`resume_after` skips the batches an interrupted epoch served.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool, bucket: bool, pad: bool,
                 num_replicas: int = 1, rank: int = 0, seed: int = 0):
        super().__init__(range(len(lengths)), num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed)
        self.lengths, self.batch_size, self.bucket, self.pad = list(lengths), batch_size, bucket, pad
        self._skip = 0
        self._batches: tuple[int, list[list[int]]] | None = None

    def _order(self, g: torch.Generator) -> list[int]:
        n = len(self.lengths)
        return torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))

    def make_batches(self) -> list[list[int]]:
        """This epoch's batches, before sharding."""
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order, bs = self._order(g), self.batch_size
        if not self.bucket:
            return [order[i:i + bs] for i in range(0, len(order), bs)]
        chunk = 100 * bs
        batches = []
        for c in range(0, len(order), chunk):
            part = sorted(order[c:c + chunk], key=self.lengths.__getitem__)
            batches += [part[i:i + bs] for i in range(0, len(part), bs)]
        short = batches.pop() if batches and len(batches[-1]) < bs else None
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        return batches + ([short] if short else [])

    def batches(self) -> list[list[int]]:
        """All batches of the current epoch, before sharding (computed once per epoch)."""
        if self._batches is None or self._batches[0] != self.epoch:
            self._batches = (self.epoch, self.make_batches())
        return self._batches[1]

    def _shard(self) -> list[list[int]]:
        batches = self.batches()
        if self.num_replicas == 1:
            return batches
        if not self.pad and len(batches) < self.num_replicas:  # evaluation with fewer batches than ranks:
            mine = [i for b in batches for i in b][self.rank :: self.num_replicas]  # no rank left empty
            return [mine[i:i + self.batch_size] for i in range(0, len(mine), self.batch_size)]
        if not self.pad:
            return batches[self.rank :: self.num_replicas]
        total = math.ceil(len(batches) / self.num_replicas) * self.num_replicas
        batches = batches + batches[: total - len(batches)]
        return batches[self.rank :: self.num_replicas]

    def resume_after(self, batches: int) -> None:
        """The next iteration starts after the first ``batches`` batches of this rank (a resumed epoch)."""
        self._skip = batches

    def __iter__(self) -> Iterator[list[int]]:
        skip, self._skip = self._skip, 0
        return iter(self._shard()[skip:])

    def __len__(self) -> int:
        return len(self._shard())


class TokenBudgetSampler(ShardSampler):
    """Training batches of similar length that hold at most ``batch_tokens`` padded tokens each
    (``sentences x longest sentence``), instead of a fixed number of sentences; yields one list of indices
    per batch, as :class:`ShardSampler` does.

    Each epoch shuffles the sentences (seeded with ``seed + epoch``), sorts pools of about 100 batches'
    worth of sentences by length, fills batches greedily in that order and shuffles the batches. Every
    sentence is in exactly one batch of the epoch; a sentence longer than the budget gets a batch of its own
    (counted in :attr:`over_budget`). Under DDP every rank gets ``batches[rank::world]`` of the same list,
    padded by its first batches to a multiple of the world size, so ranks run the same number of steps. The
    number of batches can differ by a few between epochs (another shuffle packs differently).
    """

    def __init__(self, lengths: Sequence[int], batch_tokens: int, shuffle: bool = True, pad: bool = True,
                 num_replicas: int = 1, rank: int = 0, seed: int = 0):
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be a positive number of tokens, got {batch_tokens}")
        mean = max(1.0, sum(lengths) / max(1, len(lengths)))
        super().__init__(lengths, batch_size=max(1, int(batch_tokens / mean)), shuffle=shuffle, bucket=True,
                         pad=pad, num_replicas=num_replicas, rank=rank, seed=seed)
        self.batch_tokens = batch_tokens
        #: lengths of the sentences longer than ``batch_tokens`` (each is a batch of its own)
        self.over_budget = sorted(n for n in self.lengths if n > batch_tokens)

    def make_batches(self) -> list[list[int]]:
        n = len(self.lengths)
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = self._order(g)
        chunk = 100 * self.batch_size  # about 100 batches per pool, as in the sentence-count bucketing
        batches: list[list[int]] = []
        for c in range(0, n, chunk):
            current: list[int] = []
            for i in sorted(order[c:c + chunk], key=self.lengths.__getitem__):  # ascending: last is longest
                if current and (len(current) + 1) * self.lengths[i] > self.batch_tokens:
                    batches.append(current)
                    current = []
                current.append(i)
            if current:
                batches.append(current)
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        return batches


class ResumableDataLoader(torch.utils.data.DataLoader):
    """A training loader over a :class:`ShardSampler` that Lightning can resume mid-epoch.

    ``state_dict()`` records the epoch and how many batches of it were handed out; after
    ``load_state_dict()``, the next iteration of that epoch skips them (same order: the sampler is seeded
    with ``seed + epoch``), so a run resumed from a mid-epoch checkpoint sees the batches it had not seen.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._epoch, self._served, self._resume = 0, 0, None

    def __iter__(self):
        sampler = self.sampler
        self._epoch, self._served = sampler.epoch, 0
        if self._resume is not None:
            epoch, served = self._resume
            self._resume = None
            if epoch == sampler.epoch and 0 < served < len(self):
                sampler.resume_after(served)
                self._served = served
        for batch in super().__iter__():
            self._served += 1
            yield batch

    def state_dict(self) -> dict:
        return {"epoch": self._epoch, "batches": self._served}

    def load_state_dict(self, state: dict) -> None:
        self._resume = (state["epoch"], state["batches"])


class Vocabularies:
    """The vocabularies a model needs, as one object that round-trips through a plain dict."""

    def __init__(self, task: str, scheme: str | None, labels: list[str], tags: Vocab | None, words: Vocab,
                 chars: Vocab, features: dict[str, Vocab] | None = None, tag_column: str | None = None):
        self.task, self.scheme, self.labels, self.tags = task, scheme, labels, tags
        self.words, self.chars, self.features, self.tag_column = words, chars, features or {}, tag_column

    def to_dict(self) -> dict:
        return {"task": self.task, "scheme": self.scheme, "labels": list(self.labels),
                "tags": None if self.tags is None else self.tags.itos, "tag_column": self.tag_column,
                "words": self.words.state_dict(), "chars": self.chars.state_dict(),
                "features": {k: v.state_dict() for k, v in self.features.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "Vocabularies":
        tags = None if d.get("tags") is None else Vocab.labels(d["tags"], name="tag")
        return cls(d["task"], d.get("scheme"), list(d["labels"]), tags, Vocab.from_state(d["words"]),
                   Vocab.from_state(d["chars"]), {k: Vocab.from_state(v) for k, v in d.get("features", {}).items()},
                   d.get("tag_column"))

    def collator(self) -> Collator:
        return Collator(self.words, self.chars, self.tags, self.scheme, self.tag_column, self.features)
