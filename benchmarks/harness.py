"""Shared pieces of the training-cost benchmarks (``min_cost.py``, ``psa_cost.py``, ``hcr_cost.py``).

Command-line setup, CoNLL-2003 training batches (the sample corpus when CoNLL-2003 is absent), one
training step, interleaved timing of several models on the same batches, and the bytes autograd saves.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ner_zoo.data.batching import Batch  # noqa: E402

MIB = 2 ** 20


def data_root() -> Path:
    """``$NER_ZOO_DATA``, else the ``shared/data`` folder beside the checkout."""
    return Path(os.environ.get("NER_ZOO_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


# command line ---------------------------------------------------------------------------------------------
def make_parser(description: str, batches: int, batches_help: str, rounds: int,
                bf16_help: str | None = None) -> argparse.ArgumentParser:
    """Parser with ``--device --batches --rounds --warmup --threads`` (and ``--bf16`` when ``bf16_help``)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batches", type=int, default=batches, help=batches_help)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    if bf16_help is not None:
        ap.add_argument("--bf16", action="store_true", help=bf16_help)
    return ap


def setup(args: argparse.Namespace) -> tuple[torch.device, AbstractContextManager, str]:
    """Apply ``--threads``; return the device, the autocast context (``--bf16``) and the device in words."""
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if getattr(args, "bf16", False) else nullcontext()
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    return device, amp, where


# data -----------------------------------------------------------------------------------------------------
def load_train_batches(n_batches: int, collate: Callable | None = None, **corpus_kwargs):
    """The data module, its first ``n_batches`` training batches, batches per epoch, and the corpus name.

    Args:
        n_batches: batches to keep.
        collate: ``data_module -> collator``; ``None``: the data module's default collator.
        **corpus_kwargs: data module options over ``batch_size=10, bucket=True``.
    """
    from ner_zoo.data.corpora import CoNLL2003, SampleCorpus

    kw = dict(batch_size=10, bucket=True, **corpus_kwargs)
    if (data_root() / "conll2003" / "eng.train").exists():
        dm, name = CoNLL2003(data_dir=str(data_root() / "conll2003"), **kw), "CoNLL-2003 train"
    else:
        dm, name = SampleCorpus(**kw), "sample corpus (CoNLL-2003 not found)"
    loader = dm._loader(dm.sentences("train"), train=True, collate=collate(dm) if collate is not None else None)
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == n_batches:
            break
    return dm, batches, len(loader), name


def batches_heading(corpus: str, batches: list[Batch], per_epoch: int) -> str:
    """``## <corpus>: N bucketed batches (max length a-b), E batches per epoch``."""
    lengths = [int(b.mask.sum(1).max()) for b in batches]
    return (f"## {corpus}: {len(batches)} bucketed batches (max length {min(lengths)}-{max(lengths)}), "
            f"{per_epoch} batches per epoch")


# timing ---------------------------------------------------------------------------------------------------
def sync(device: torch.device) -> None:
    """Wait for queued CUDA work (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, batch: Batch,
               amp: AbstractContextManager | None = None, clip: float | None = None) -> None:
    """``compute_loss`` (under ``amp``), backward, optional gradient-norm clipping, optimizer step."""
    opt.zero_grad(set_to_none=True)
    with amp if amp is not None else nullcontext():
        loss = model.compute_loss(batch)
    loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()


def time_models(models: dict, batches: list[Batch], rounds: int, warmup: int, device: torch.device,
                amp: AbstractContextManager | None = None, clip: float | None = None,
                sync_each_step: bool = True) -> dict[str, tuple[float, float | None]]:
    """Median seconds per training step and peak CUDA MiB (``None`` off CUDA) per model.

    Models take turns round by round on the same batches; a round's time is the mean over its batches.

    Args:
        models: name -> ``(model, optimizer)``.
        batches: moved to ``device`` first.
        rounds, warmup: timed rounds after untimed warm-up rounds.
        amp, clip: as in :func:`train_step`.
        sync_each_step: time (and reset the CUDA peak) around each step; else around each round's batches.
    """
    batches = [b.to(device) for b in batches]
    groups = [[b] for b in batches] if sync_each_step else [batches]
    cuda = device.type == "cuda"
    times = {name: [] for name in models}
    peak = {name: 0.0 for name in models}
    for r in range(warmup + rounds):
        for name, (model, opt) in models.items():
            total = 0.0
            for group in groups:
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                sync(device)
                t0 = time.perf_counter()
                for batch in group:
                    train_step(model, opt, batch, amp, clip)
                sync(device)
                total += time.perf_counter() - t0
                if cuda:
                    peak[name] = max(peak[name], torch.cuda.max_memory_allocated() / MIB)
            if r >= warmup:
                times[name].append(total / len(batches))
    return {n: (statistics.median(t), peak[n] if cuda else None) for n, t in times.items()}


def saved_activation_bytes(model: torch.nn.Module, batch: Batch, amp: AbstractContextManager | None = None) -> int:
    """Bytes of the distinct non-parameter tensors autograd saves for backward in one forward pass."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp if amp is not None else nullcontext():
        loss = model.compute_loss(batch)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())


def print_profile(title: str, fn: Callable[[], object], top: int) -> None:
    """Run ``fn`` under torch.profiler and print its ``top`` operators by self CPU time under ``title``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    print(f"\n### torch.profiler, {title}, top {top} by self CPU time\n")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top, max_name_column_width=40))
