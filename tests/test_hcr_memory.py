"""KeyValueTokenMemory: index, slot policy, queries, writes, checkpoints and DDP synchronisation."""

from __future__ import annotations

import math

import pytest
import torch

from conftest import corpus_dir
from ddp_utils import spawn_gloo
from ner_zoo.errors import NerZooError
from ner_zoo.modules.memory import KeyValueTokenMemory, last_unique

# word ids: 0 pad, 1 unk; word 2 occurs 5 times, 3 twice, 4 once, 5 never
TRAIN = [[2, 3, 2, 4], [2, 2], [3, 2, 1]]
WORLD = 2


def _memory(T: int = 10, overflow: str = "first", compatibility: str = "cosine", kd: int = 3, vd: int = 2):
    mem = KeyValueTokenMemory(8, kd, vd, max_slots=T, compatibility=compatibility, overflow=overflow)
    mem.build({"train": TRAIN})
    return mem


def _mask(sents):
    n = max(len(s) for s in sents)
    return torch.tensor([[i < len(s) for i in range(n)] for s in sents])


def _write_all(mem, values=None, keys=None):
    """Write every training token: value = its flat token number (or given), key = a fixed vector."""
    mask = _mask(TRAIN)
    slots = mem.slots_of("train", torch.arange(len(TRAIN)), mask)
    n = mask.numel()
    vals = values if values is not None else torch.arange(n, dtype=torch.float).view(*mask.shape, 1).expand(
        *mask.shape, mem.value_dim)
    ks = keys if keys is not None else torch.ones(*mask.shape, mem.key_dim)
    mem.write(slots, ks, vals)
    return slots


def test_index_and_slots():
    mem = _memory()
    assert mem.word_count.tolist() == [0, 0, 5, 2, 1, 0, 0, 0]  # pad and unk get no slots
    assert mem.num_slots == 8
    slots = mem.slots_of("train", torch.arange(3), _mask(TRAIN))
    assert slots.tolist() == [[0, 5, 1, 7], [2, 3, -1, -1], [6, 4, -1, -1]]  # corpus order within a word
    # slots of one word are contiguous: start[w] .. start[w] + count[w]
    for w in (2, 3, 4):
        s = int(mem.word_start[w])
        got = sorted(x for row, sent in zip(slots.tolist(), TRAIN) for x, t in zip(row, sent) if t == w)
        assert got == list(range(s, s + int(mem.word_count[w])))
    # batches in any order and with any padding map to the same slots
    again = mem.slots_of("train", torch.tensor([2, 0]), _mask([TRAIN[2], TRAIN[0]]))
    assert again.tolist() == [[6, 4, -1, -1], [0, 5, 1, 7]]
    assert (mem.slots_of("dev", torch.arange(2), _mask(TRAIN[:2])) == -1).all()  # dev not indexed
    with pytest.raises(NerZooError, match="built from other train sentences"):
        mem.slots_of("train", torch.tensor([1]), _mask([TRAIN[0]]))  # wrong length


@pytest.mark.parametrize("overflow", ["first", "ring"])
def test_at_most_T_slots_per_word(overflow):
    mem = _memory(T=2, overflow=overflow)
    assert mem.word_count.tolist() == [0, 0, 2, 2, 1, 0, 0, 0]
    slots = mem.slots_of("train", torch.arange(3), _mask(TRAIN))
    start = int(mem.word_start[2])
    occurrences_of_2 = [slots[0, 0], slots[0, 2], slots[1, 0], slots[1, 1], slots[2, 1]]
    if overflow == "first":  # only the first T occurrences own a slot
        assert [int(s) - start if s >= 0 else -1 for s in occurrences_of_2] == [0, 1, -1, -1, -1]
    else:  # occurrence j rewrites slot j mod T
        assert [int(s) - start for s in occurrences_of_2] == [0, 1, 0, 1, 0]
    _write_all(mem)
    # rewrite policy: the slot keeps the last occurrence written to it
    flat = torch.arange(12.).view(3, 4)
    expected = [flat[0, 0], flat[0, 2]] if overflow == "first" else [flat[2, 1], flat[1, 1]]
    assert mem.values[start:start + 2, 0].tolist() == [float(x) for x in expected]


def test_last_unique():
    idx = torch.tensor([4, 1, 4, 2, 1, 4])
    assert sorted(last_unique(idx).tolist()) == [3, 4, 5]


@pytest.mark.parametrize("compatibility", ["cosine", "dot", "scaled_dot"])
def test_identical_keys_give_the_mean_of_values(compatibility):
    mem = _memory(compatibility=compatibility)
    values = torch.randn(3, 4, 2)
    _write_all(mem, values=values)
    mask = _mask(TRAIN)
    words = torch.tensor([2, 3, 4, 5, 1, 0])
    out = mem.query(words, torch.randn(6, 3))
    for i, w in enumerate(words.tolist()):
        picked = [values[b, j] for b, sent in enumerate(TRAIN) for j, t in enumerate(sent) if t == w and mask[b, j]]
        expected = torch.stack(picked).mean(0) if picked and w > 1 else torch.zeros(2)
        torch.testing.assert_close(out[i], expected)  # unseen (5), unknown (1), padding (0): zeros


def test_unwritten_slots_are_ignored_and_scores_match_a_loop():
    mem = _memory(compatibility="scaled_dot")
    assert mem.query(torch.tensor([2, 3]), torch.ones(2, 3)).abs().sum() == 0  # empty memory
    mask = _mask(TRAIN)
    slots = mem.slots_of("train", torch.arange(3), mask)
    keys, values = torch.randn(3, 4, 3), torch.randn(3, 4, 2)
    first_sentence = torch.zeros_like(slots, dtype=torch.bool)
    first_sentence[0] = True
    mem.write(torch.where(first_sentence, slots, -1), keys, values)
    q = torch.randn(1, 3)
    got = mem.query(torch.tensor([2]), q)[0]
    k = torch.stack([keys[0, 0], keys[0, 2]])  # word 2's written slots (sentence 0, positions 0 and 2)
    v = torch.stack([values[0, 0], values[0, 2]])
    alpha = torch.softmax((k @ q[0]) / math.sqrt(3), 0)
    torch.testing.assert_close(got, alpha @ v)


def test_leave_one_out_excludes_each_token_own_slot():
    mem = _memory()
    values = torch.randn(3, 4, 2)
    slots = _write_all(mem, values=values)
    mask = _mask(TRAIN)
    words = torch.tensor(TRAIN[0])  # 2 3 2 4: each token leaves out its own occurrence
    q = torch.randn(4, 3, requires_grad=True)
    out = mem.query(words, q, exclude=slots[0])
    for j, w in enumerate(TRAIN[0]):
        others = [values[b, i] for b, sent in enumerate(TRAIN) for i, t in enumerate(sent)
                  if t == w and mask[b, i] and (b, i) != (0, j)]
        expected = torch.stack(others).mean(0) if others else torch.zeros(2)
        torch.testing.assert_close(out[j], expected)  # word 4 occurs once: zeros, as an unseen word
    out.sum().backward()
    assert torch.isfinite(q.grad).all()
    no_exclusion = mem.query(words, q.detach(), exclude=torch.full((4,), -1))
    torch.testing.assert_close(no_exclusion, mem.query(words, q.detach()))


def test_gradients_reach_queries_only():
    mem = _memory()
    _write_all(mem, keys=torch.randn(3, 4, 3))
    q = torch.randn(2, 3, requires_grad=True)
    mem.query(torch.tensor([2, 3]), q).sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0
    assert not any(b.requires_grad for b in mem.buffers())


def test_state_dict_resizes_an_unbuilt_memory():
    mem = _memory()
    _write_all(mem, keys=torch.randn(3, 4, 3))
    fresh = KeyValueTokenMemory(8, 3, 2, max_slots=10)
    assert fresh.num_slots == 0
    fresh.load_state_dict(mem.state_dict())
    for name, buf in mem.named_buffers():
        assert torch.equal(getattr(fresh, name), buf), name
    q = torch.randn(3, 3)
    torch.testing.assert_close(fresh.query(torch.tensor([2, 3, 4]), q), mem.query(torch.tensor([2, 3, 4]), q))


def test_transductive_index_and_deferred_writes():
    mem = KeyValueTokenMemory(8, 3, 2, max_slots=10)
    mem.build({"train": TRAIN, "dev": [[2, 5]], "test": [[5]]})
    assert mem.word_count[5] == 2 and mem.split_start.tolist() == [0, 3, 4, 5]
    slots = mem.slots_of("dev", torch.tensor([0]), _mask([[2, 5]]))
    assert slots.tolist() == [[5, int(mem.word_start[5])]]  # dev tokens come after every train token
    mem.write(slots, torch.ones(1, 2, 3), torch.full((1, 2, 2), 7.0), deferred=True)  # applied locally at once
    assert mem.written[slots[0]].all() and len(mem._deferred) == 1
    mem.sync_deferred()  # single process: nothing else to apply
    assert mem._deferred == [] and (mem.values[slots[0]] == 7).all()


def test_bad_arguments():
    with pytest.raises(ValueError):
        KeyValueTokenMemory(8, 3, 2, compatibility="l2")
    with pytest.raises(ValueError):
        KeyValueTokenMemory(8, 3, 2, overflow="random")
    with pytest.raises(ValueError):
        KeyValueTokenMemory(8, 3, 2).build({"train": [[9]]})


# DDP -----------------------------------------------------------------------------------------------------------
def _rank_writes(rank: int):
    """Each rank writes its own sentences, plus a conflicting write to sentence 1 (as DDP padding does)."""
    g = torch.Generator().manual_seed(100 + rank)
    own = [0, 2] if rank == 0 else [1]
    sents = [TRAIN[i] for i in own] + [TRAIN[1]]
    mask = _mask(sents)
    return torch.tensor(own + [1]), mask, torch.randn(*mask.shape, 3, generator=g), torch.randn(*mask.shape, 2,
                                                                                                 generator=g)


def _worker(rank: int, out: str) -> None:
    mem = KeyValueTokenMemory(8, 3, 2, max_slots=10)
    mem.build({"train": TRAIN, "dev": [[2, 5], [3], [4, 4, 2]]})
    idx, mask, keys, values = _rank_writes(rank)
    mem.write(mem.slots_of("train", idx, mask), keys, values)  # training: gathered at once
    # evaluation: ranks run different numbers of batches, then sync once
    dev = [[0], [2]] if rank == 0 else [[1]]
    for d in dev:
        m = _mask([[2, 5], [3], [4, 4, 2]][d[0]:d[0] + 1])
        mem.write(mem.slots_of("dev", torch.tensor(d), m), torch.full((*m.shape, 3), 1.0 + d[0]),
                  torch.full((*m.shape, 2), 10.0 + d[0]), deferred=True)
    mem.sync_deferred()
    torch.save({k: v.clone() for k, v in mem.state_dict().items()}, f"{out}.{rank}")


@pytest.mark.ddp
def test_ddp_writes_keep_ranks_identical(tmp_path):
    out = str(tmp_path / "memory")
    spawn_gloo(_worker, out, world=WORLD)
    states = [torch.load(f"{out}.{r}") for r in range(WORLD)]
    for name in states[0]:
        assert torch.equal(states[0][name], states[1][name]), name
    # the same result as one process applying rank 0's writes, then rank 1's
    expected = KeyValueTokenMemory(8, 3, 2, max_slots=10)
    expected.build({"train": TRAIN, "dev": [[2, 5], [3], [4, 4, 2]]})
    for rank in range(WORLD):
        idx, mask, keys, values = _rank_writes(rank)
        expected.write(expected.slots_of("train", idx, mask), keys, values)
    for d in range(3):
        m = _mask([[2, 5], [3], [4, 4, 2]][d:d + 1])
        expected.write(expected.slots_of("dev", torch.tensor([d]), m), torch.full((*m.shape, 3), 1.0 + d),
                       torch.full((*m.shape, 2), 10.0 + d))
    for name, buf in expected.state_dict().items():
        assert torch.equal(states[0][name], buf), name
    assert states[0]["written"].all()


# real data -----------------------------------------------------------------------------------------------------
@pytest.mark.corpus
def test_conll2003_index():
    from ner_zoo.data import CoNLL2003

    dm = CoNLL2003(data_dir=str(corpus_dir("conll2003")))
    train, vocab = dm.sentences("train"), dm.vocabularies.words
    mem = KeyValueTokenMemory(len(vocab), 4, 4, max_slots=500)
    mem.build({"train": [vocab.lookup_indices(s.tokens) for s in train]})
    counts = torch.bincount(mem.token_slot[mem.token_slot >= 0], minlength=mem.num_slots)
    assert (counts == 1).all()  # "first": one token per slot
    assert int(mem.word_count.max()) == 500 and len(mem.token_slot) == sum(len(s) for s in train)
    assert mem.num_slots == int(torch.bincount(torch.tensor([i for s in train for i in vocab.lookup_indices(s.tokens)]),
                                               minlength=len(vocab))[2:].clamp(max=500).sum())


def test_stage_then_commit_after_backward():
    mem = _memory()
    _write_all(mem, keys=torch.randn(3, 4, 3))
    mask = _mask(TRAIN)
    slots = mem.slots_of("train", torch.arange(3), mask)
    q = torch.randn(2, 3, requires_grad=True)
    out = mem.query(torch.tensor([2, 3]), q)
    mem.stage(slots, torch.zeros(3, 4, 3), torch.full((3, 4, 2), -5.0))
    assert not (mem.values == -5).any()  # nothing applied before commit
    out.sum().backward()  # the query's graph reads the values it saw
    mem.commit()
    assert (mem.values == -5).all() and mem._staged == []
    out = mem.query(torch.tensor([2]), q[:1])
    mem.write(slots, torch.zeros(3, 4, 3), torch.zeros(3, 4, 2))  # an in-place write before backward ...
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()  # ... is caught by autograd rather than giving wrong gradients


def test_train_slots_and_allowed_query():
    mem = KeyValueTokenMemory(8, 3, 2, max_slots=10)
    mem.build({"train": TRAIN, "test": [[2, 5]]})  # word 2: 5 training slots, then 1 test slot; word 5: test only
    owned = mem.train_slots()
    start2, start5 = int(mem.word_start[2]), int(mem.word_start[5])
    assert owned[start2:start2 + 5].all() and not owned[start2 + 5] and not owned[start5]
    mem.write(torch.arange(mem.num_slots), torch.ones(mem.num_slots, 3), torch.arange(mem.num_slots, dtype=torch.float
                                                                                      ).unsqueeze(1).expand(-1, 2))
    ids, q = torch.tensor([2, 5]), torch.ones(2, 3)
    full, train_only = mem.query(ids, q), mem.query(ids, q, allowed=owned)
    assert full[0, 0] == pytest.approx(start2 + 2.5) and full[1, 0] == start5  # equal keys: uniform attention
    assert train_only[0, 0] == pytest.approx(start2 + 2) and train_only[1].tolist() == [0.0, 0.0]
