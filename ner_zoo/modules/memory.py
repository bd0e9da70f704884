"""A key-value memory over the token occurrences of a corpus (HCR's document-level representation).

Every occurrence of a word in the indexed sentences owns a slot holding ``(key, value)`` (in HCR: the word
embedding and the encoder state of that occurrence, rewritten each time training passes over it). Slots
of one word type are contiguous, so the inverted index word -> slots is two vectors (first slot, number
of slots) and a query for word ``w`` attends over ``keys[start[w] : start[w] + count[w]]``.

A word type keeps at most ``max_slots`` (T) slots. ``overflow="first"``: only its first T occurrences
in corpus order get a slot (the reference code stores every occurrence but reads only the first T);
``"ring"``: occurrence ``j`` writes slot ``j mod T``, so the memory holds the T most recent states.

A query gathers the keys of the word's written slots, takes a softmax over their scores and sums the
values with ``embedding_bag`` (fused: no ``[pairs, value_dim]`` tensor). That op reads the values in
place during backward, so training writes are staged (:meth:`stage`) and applied after the backward
pass (:meth:`commit`); an in-place write before it makes autograd raise rather than give wrong gradients.

Everything lives in buffers, so checkpoints carry the memory and its index; buffers whose size depends
on the data are resized to the incoming shapes when a state dict is loaded. Writes are all-gathered
across processes (``torch.distributed``) before they are applied, in rank order with the last write to a
slot winning, so every rank holds the same memory. Under DDP, pass ``broadcast_buffers=False`` to the
strategy: the memory keeps itself in sync, and broadcasting it from rank 0 every step is costly.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from ner_zoo.errors import NerZooError
from ner_zoo.modules.precision import autocast_off

COMPATIBILITY = ("cosine", "dot", "scaled_dot")
OVERFLOW = ("first", "ring")
SPLITS = ("train", "dev", "test")


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_rows(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """Concatenate, in rank order, tensors whose first dimension differs between ranks (identity alone)."""
    if not _distributed():
        return list(tensors)
    world = dist.get_world_size()
    n = torch.tensor([tensors[0].shape[0]], device=tensors[0].device)
    sizes = [torch.zeros_like(n) for _ in range(world)]
    dist.all_gather(sizes, n)
    sizes = [int(s) for s in sizes]
    top = max(sizes)
    out = []
    for t in tensors:
        padded = t.new_zeros((top, *t.shape[1:]))
        padded[: t.shape[0]] = t
        parts = [torch.empty_like(padded) for _ in range(world)]
        dist.all_gather(parts, padded)
        out.append(torch.cat([p[:s] for p, s in zip(parts, sizes)]))
    return out


def last_unique(index: torch.Tensor) -> torch.Tensor:
    """Positions of the last occurrence of each distinct value of ``index`` (a 1-D tensor)."""
    order = torch.argsort(index, stable=True)
    s = index[order]
    keep = torch.ones_like(s, dtype=torch.bool)
    keep[:-1] = s[:-1] != s[1:]
    return order[keep]


class KeyValueTokenMemory(nn.Module):
    """Slots of ``(key [key_dim], value [value_dim])`` per token occurrence, queried by word type.

    Args:
        num_words: size of the word vocabulary (word ids index the inverted index).
        key_dim: size of the keys (and queries).
        value_dim: size of the values (and of a query's result).
        max_slots: T, the most slots a word type keeps.
        compatibility: query-key score: ``cosine``, ``dot`` or ``scaled_dot`` (dot / sqrt(key_dim)).
        overflow: which occurrences beyond T get a slot: ``first`` (none) or ``ring`` (slot ``j mod T``).
        ignore_ids: word ids that never get slots (padding, unknown word); a query for them returns zeros.
    """

    syncs_itself = True  # its writes are all-gathered: the task module warns when DDP broadcasts buffers too

    _DATA_BUFFERS = ("keys", "values", "written", "token_slot", "sentence_start")

    def __init__(self, num_words: int, key_dim: int, value_dim: int, max_slots: int = 500,
                 compatibility: str = "cosine", overflow: str = "first", ignore_ids: Sequence[int] = (0, 1)):
        super().__init__()
        if compatibility not in COMPATIBILITY:
            raise ValueError(f"compatibility must be one of {COMPATIBILITY}, got {compatibility!r}")
        if overflow not in OVERFLOW:
            raise ValueError(f"overflow must be one of {OVERFLOW}, got {overflow!r}")
        if max_slots < 1:
            raise ValueError(f"max_slots must be >= 1, got {max_slots}")
        self.num_words, self.key_dim, self.value_dim = num_words, key_dim, value_dim
        self.max_slots, self.compatibility, self.overflow = max_slots, compatibility, overflow
        self.ignore_ids = tuple(int(i) for i in ignore_ids)
        long = dict(dtype=torch.long)
        self.register_buffer("word_start", torch.zeros(num_words, **long))  # first slot of each word
        self.register_buffer("word_count", torch.zeros(num_words, **long))  # its number of slots (<= T)
        self.register_buffer("keys", torch.zeros(0, key_dim))
        self.register_buffer("values", torch.zeros(0, value_dim))
        self.register_buffer("written", torch.zeros(0, dtype=torch.bool))  # unwritten slots are not attended
        self.register_buffer("token_slot", torch.zeros(0, **long))  # slot of each indexed token, -1: none
        self.register_buffer("sentence_start", torch.zeros(1, **long))  # first token of each indexed sentence
        self.register_buffer("split_start", torch.zeros(len(SPLITS) + 1, **long))  # first sentence per split
        self._deferred: list[tuple[torch.Tensor, torch.Tensor]] = []  # evaluation writes to share later
        self._staged: list[tuple[torch.Tensor, torch.Tensor]] = []  # training writes to apply after backward
        self._bounds: list[int] | None = None  # split_start as Python ints (no device sync per step)

    def extra_repr(self) -> str:
        return (f"words={self.num_words}, slots={self.num_slots}, key_dim={self.key_dim}, "
                f"value_dim={self.value_dim}, T={self.max_slots}, {self.compatibility}, overflow={self.overflow}")

    @property
    def num_slots(self) -> int:
        return int(self.keys.shape[0])

    def nbytes(self) -> dict[str, int]:
        """Bytes held per buffer."""
        return {name: b.numel() * b.element_size() for name, b in self.named_buffers(recurse=False)}

    # index -----------------------------------------------------------------------------------------------
    @torch.no_grad()
    def build(self, splits: Mapping[str, Sequence[Sequence[int]]]) -> None:
        """Index sentences given as word ids, per split (``train``, and ``dev``/``test`` for transductive
        use); slots are assigned in the order train, dev, test. Empties the memory."""
        unknown = set(splits) - set(SPLITS)
        if unknown:
            raise ValueError(f"unknown splits {sorted(unknown)}; expected some of {SPLITS}")
        device = self.word_start.device
        sents = [list(map(int, s)) for split in SPLITS for s in splits.get(split, ())]
        n_sents = [len(splits.get(split, ())) for split in SPLITS]
        lengths = torch.tensor([len(s) for s in sents], dtype=torch.long)
        words = torch.tensor([w for s in sents for w in s], dtype=torch.long)
        if words.numel() and (int(words.min()) < 0 or int(words.max()) >= self.num_words):
            raise ValueError(f"word ids must be in [0, {self.num_words}); got {int(words.min())}..{int(words.max())}")
        counts = torch.bincount(words, minlength=self.num_words)
        order = torch.argsort(words, stable=True)
        rank = torch.empty_like(words)
        rank[order] = torch.arange(len(words)) - (torch.cumsum(counts, 0) - counts)[words[order]]
        kept = counts.clamp(max=self.max_slots)
        kept[[i for i in self.ignore_ids if i < self.num_words]] = 0
        start = torch.cumsum(kept, 0) - kept
        if self.overflow == "first":
            slot = torch.where(rank < self.max_slots, start[words] + rank, -1)
        else:
            slot = start[words] + rank % self.max_slots
        slot[kept[words] == 0] = -1
        total = int(kept.sum())
        self.word_start, self.word_count = start.to(device), kept.to(device)
        self.keys = torch.zeros(total, self.key_dim, dtype=self.keys.dtype, device=device)
        self.values = torch.zeros(total, self.value_dim, dtype=self.values.dtype, device=device)
        self.written = torch.zeros(total, dtype=torch.bool, device=device)
        self.token_slot = slot.to(device)
        self.sentence_start = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)]).to(device)
        self.split_start = torch.cat([torch.zeros(1, dtype=torch.long),
                                      torch.cumsum(torch.tensor(n_sents), 0)]).to(device)
        self._deferred, self._staged, self._bounds = [], [], None

    @torch.no_grad()
    def reset(self) -> None:
        """Forget every stored key and value (the index stays)."""
        self.keys.zero_(), self.values.zero_(), self.written.zero_()

    def slots_of(self, split: str, indices: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Slots ``[B, L]`` (-1: none) of the tokens of sentences ``indices`` (positions in ``split``).

        Raises:
            NerZooError: the sentences do not match the indexed ones (lengths differ, index out of range).
        """
        if self._bounds is None:
            self._bounds = self.split_start.tolist()
        bounds, k = self._bounds, SPLITS.index(split)
        first, end = bounds[k], bounds[k + 1]
        if first == end:  # split not indexed
            return torch.full(mask.shape, -1, dtype=torch.long, device=mask.device)
        sent = indices.to(self.sentence_start.device) + first
        inside = sent.clamp(max=end - 1)
        stored = self.sentence_start[inside + 1] - self.sentence_start[inside]
        if bool(((sent >= end) | (stored != mask.sum(1))).any()):  # one device sync
            raise NerZooError(f"the memory index was built from other {split} sentences (sentence index or length "
                              "differs); rebuild it from the data being trained on")
        pos = self.sentence_start[sent].unsqueeze(1) + torch.arange(mask.shape[1], device=mask.device)
        pos = pos.clamp(max=max(len(self.token_slot) - 1, 0))
        return torch.where(mask, self.token_slot[pos], -1)

    # query -----------------------------------------------------------------------------------------------
    def scores(self, queries: torch.Tensor, keys: torch.Tensor, seg: torch.Tensor) -> torch.Tensor:
        """Compatibility of ``queries [N, D]`` with ``keys [S, D]``, key ``j`` paired with query ``seg[j]``."""
        if self.compatibility == "cosine":
            queries = F.normalize(queries, dim=-1, eps=1e-8)
        dot = (keys * queries.index_select(0, seg)).sum(-1)
        if self.compatibility == "cosine":
            return dot / keys.norm(dim=-1).clamp_min(1e-8)
        return dot / math.sqrt(self.key_dim) if self.compatibility == "scaled_dot" else dot

    def train_slots(self) -> torch.Tensor:
        """``[num_slots]`` bool: the slots owned by an occurrence in the training split (with ``overflow="ring"``
        a slot shared by a training and a dev/test occurrence counts as a training slot)."""
        owned = torch.zeros(self.num_slots, dtype=torch.bool, device=self.written.device)
        n_train = int(self.sentence_start[int(self.split_start[1])])
        slots = self.token_slot[:n_train]
        owned[slots[slots >= 0]] = True
        return owned

    def query(self, word_ids: torch.Tensor, queries: torch.Tensor, exclude: torch.Tensor | None = None,
              allowed: torch.Tensor | None = None) -> torch.Tensor:
        """Attention of each query over the written slots of its word: ``[N]`` ids, ``[N, key_dim]`` ->
        ``[N, value_dim]`` (fp32). Words without written slots get zeros. Gradients reach ``queries``.
        ``exclude [N]``: a slot each query leaves out (its own occurrence; -1: none). ``allowed
        [num_slots]``: only these slots are read (e.g. :meth:`train_slots`)."""
        n = word_ids.shape[0]
        out = queries.new_zeros(n, self.value_dim, dtype=torch.float32)
        if self.num_slots == 0 or n == 0:
            return out
        count = self.word_count.index_select(0, word_ids)
        seg = torch.repeat_interleave(torch.arange(n, device=word_ids.device), count)  # query of each pair
        if seg.numel() == 0:
            return out
        offset = torch.cumsum(count, 0) - count  # (index_select: much faster than [] indexing on CPU)
        slot = (self.word_start.index_select(0, word_ids) - offset).index_select(0, seg) + torch.arange(
            seg.shape[0], device=seg.device)
        valid = self.written.index_select(0, slot)
        if exclude is not None:
            valid = valid & (slot != exclude.index_select(0, seg))
        if allowed is not None:
            valid = valid & allowed.index_select(0, slot)
        keys = self.keys.index_select(0, slot).float()
        score = self.scores(queries.float(), keys, seg).masked_fill(~valid, float("-inf"))
        top = torch.full((n,), float("-inf"), device=score.device).scatter_reduce(0, seg, score.detach(), "amax")
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
        e = torch.exp(score - top.index_select(0, seg))  # segment softmax; invalid slots give exp(-inf) = 0
        z = torch.zeros(n, device=e.device).scatter_add(0, seg, e)  # (torch's ONNX index_add drops repeats)
        alpha = e / z.clamp_min(1e-30).index_select(0, seg)
        # r_i = sum_j alpha_ij v_j as one fused op: the [pairs, value_dim] products are never materialised
        with autocast_off(alpha):
            r = F.embedding_bag(slot, self.values, offset, mode="sum", per_sample_weights=alpha.to(self.values.dtype))
        return r.float()

    # update ----------------------------------------------------------------------------------------------
    def _pack(self, slots: torch.Tensor, keys: torch.Tensor, values: torch.Tensor):
        slots = slots.reshape(-1).detach()
        keep = slots >= 0
        packed = torch.cat([keys.detach().reshape(-1, self.key_dim)[keep].float(),
                            values.detach().reshape(-1, self.value_dim)[keep].float()], 1)
        return slots[keep], packed

    @torch.no_grad()
    def write(self, slots: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, deferred: bool = False) -> None:
        """Store ``keys [..., key_dim]`` and ``values [..., value_dim]`` in ``slots [...]`` (entries < 0 skipped).

        Do not write while a graph that went through :meth:`query` still awaits its backward (the values
        it read are saved by reference): use :meth:`stage` and :meth:`commit` in training.

        Args:
            slots: target slot of each entry.
            keys, values: what to store.
            deferred: apply locally now and share with the other processes only at :meth:`sync_deferred`
                (for evaluation, where ranks run different numbers of batches). Otherwise the write is
                all-gathered now, which every rank must call the same number of times.
        """
        slots, packed = self._pack(slots, keys, values)
        if deferred:
            self._deferred.append((slots, packed))
        else:
            slots, packed = gather_rows(slots, packed)
        self._store(slots, packed)

    def stage(self, slots: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Queue a write (as :meth:`write`) until :meth:`commit`, i.e. until after the backward pass."""
        self._staged.append(self._pack(slots, keys, values))

    @torch.no_grad()
    def commit(self) -> None:
        """Apply the staged writes, all-gathered (collective when something was staged: every rank stages
        the same number of times, once per training step)."""
        if not self._staged:
            return
        slots = torch.cat([s for s, _ in self._staged])
        packed = torch.cat([p for _, p in self._staged])
        self._staged = []
        self._store(*gather_rows(slots, packed))

    @torch.no_grad()
    def sync_deferred(self) -> None:
        """Share the deferred writes of every process (a collective call: all ranks must make it)."""
        if self._deferred:
            slots = torch.cat([s for s, _ in self._deferred])
            packed = torch.cat([p for _, p in self._deferred])
        else:
            slots = self.token_slot.new_zeros(0)
            packed = self.keys.new_zeros(0, self.key_dim + self.value_dim, dtype=torch.float32)
        self._deferred = []
        if _distributed():
            self._store(*gather_rows(slots, packed))

    def _store(self, slots: torch.Tensor, packed: torch.Tensor) -> None:
        if slots.numel() == 0:
            return
        pick = last_unique(slots)  # duplicates (DDP padding, ring overflow): the last write wins, on every rank
        slots, packed = slots[pick], packed[pick]
        self.keys.index_copy_(0, slots, packed[:, : self.key_dim].to(self.keys.dtype))
        self.values.index_copy_(0, slots, packed[:, self.key_dim:].to(self.values.dtype))
        self.written[slots] = True

    # checkpoints -----------------------------------------------------------------------------------------
    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # buffers sized by the data: take the incoming shape before the copy
        for name in self._DATA_BUFFERS:
            incoming = state_dict.get(prefix + name)
            current = self._buffers[name]
            if incoming is not None and incoming.shape != current.shape:
                self._buffers[name] = torch.empty(incoming.shape, dtype=current.dtype, device=current.device)
        self._deferred, self._staged, self._bounds = [], [], None
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
