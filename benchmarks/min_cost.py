"""Training cost of MIN (and its ablations) relative to its NER-module-only baseline, same batches, one process.

Models use the configs' sizes (word vectors 50d, char BiLSTM 25 -> 2 x 25, every BiLSTM 2 x 100, max segment
6, BIOES NER CRF, IO type CRF). "NER module only" is MIN with the boundary and type modules off (= BiLSTM-CRF
with the same inputs). One training step = forward, joint loss, backward, gradient clipping at 5, Adam.
All models run the same CoNLL-2003 training batches (batch 10, length-bucketed as in the configs; the
sample corpus when CoNLL-2003 is absent), with the sub-task targets made by the collator beforehand.
Models are interleaved per round; each time is the median over timed rounds after warm-up.

Memory, stated per column:
* ``activations MiB``: bytes of the distinct tensors autograd saves for backward during one step (through
  ``torch.autograd.graph.saved_tensors_hooks``; parameters excluded; the CRFs' forward-backward buffers,
  kept outside autograd, are not counted), the maximum over the batches. Exact and device-independent.
* ``params + Adam MiB``: parameters, their gradients and Adam's two moments (4 x parameter bytes).
* ``peak CUDA MiB`` (CUDA only): ``torch.cuda.max_memory_allocated`` over the batches of a model.

Prints markdown tables; the last line is ``min_ratio=<x>`` (MIN time / NER-module-only time).

Usage: ``python benchmarks/min_cost.py [--device cpu|cuda] [--batches 20] [--rounds 3] [--threads N]
[--variants ner_only min ...] [--bf16]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ner_zoo.data.batching import Batch  # noqa: E402
from ner_zoo.data.datamodule import Vocabularies  # noqa: E402
from ner_zoo.models.min import MIN, MINCollator, type_tag_names  # noqa: E402
from ner_zoo.modules import CharBiLSTM  # noqa: E402

VARIANTS = {"ner_only": ("NER module only", dict(use_boundary=False, use_type=False)),
            "no_boundary": ("w/o boundary", dict(use_boundary=False)),
            "no_type": ("w/o type", dict(use_type=False)),
            "no_interaction": ("w/o interaction", dict(use_interaction=False)),
            "min": ("MIN", {})}


def char_encoder(n: int) -> CharBiLSTM:
    return CharBiLSTM(n, char_dim=25, hidden=25)


def make_models(vocabs: dict, device: torch.device, names: list[str]) -> dict:
    models = {}
    for key in names:
        torch.manual_seed(0)
        model = MIN(vocabs=vocabs, word_dim=50, hidden=100, dropout=0.5, char_encoder=char_encoder,
                    **VARIANTS[key][1]).to(device).train()
        models[key] = (model, torch.optim.Adam(model.parameters(), lr=0.01))
    return models


def load_batches(n_batches: int) -> tuple[dict, list[Batch], int, str]:
    """Vocabularies, the first bucketed training batches (with MIN targets), batches per epoch, corpus name."""
    from ner_zoo.data.corpora import CoNLL2003, SampleCorpus

    root = Path(os.environ.get("NER_ZOO_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if (root / "conll2003" / "eng.train").exists():
        dm, name = CoNLL2003(data_dir=str(root / "conll2003"), batch_size=10, bucket=True), "CoNLL-2003 train"
    else:
        dm, name = SampleCorpus(batch_size=10, bucket=True), "sample corpus (CoNLL-2003 not found)"
    vocabs = dm.vocabs
    collate = MINCollator(Vocabularies.from_dict(vocabs).collator(), type_tag_names(dm.labels, "io"), "io", None)
    loader = dm._loader(dm.sentences("train"), train=True, collate=collate)
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == n_batches:
            break
    return vocabs, batches, len(loader), name


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_step(model: MIN, opt: torch.optim.Optimizer, batch: Batch, amp) -> None:
    opt.zero_grad(set_to_none=True)
    with amp:
        loss = model.compute_loss(batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()


def saved_activation_bytes(model: MIN, batch: Batch, amp) -> int:
    """Bytes of the distinct non-parameter tensors autograd saves for backward in one forward pass."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        loss = model.compute_loss(batch)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())


def measure(models: dict, batches: list[Batch], rounds: int, warmup: int, device: torch.device, amp) -> dict:
    batches = [b.to(device) for b in batches]
    times = {k: [] for k in models}
    peak = {k: 0.0 for k in models}
    for r in range(warmup + rounds):
        for key, (model, opt) in models.items():
            total = 0.0
            for batch in batches:
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                sync(device)
                t0 = time.perf_counter()
                train_step(model, opt, batch, amp)
                sync(device)
                total += time.perf_counter() - t0
                if device.type == "cuda":
                    peak[key] = max(peak[key], torch.cuda.max_memory_allocated() / 2 ** 20)
            if r >= warmup:
                times[key].append(total / len(batches))
    out = {}
    for key, (model, _) in models.items():
        act = max(saved_activation_bytes(model, b, amp) for b in batches) / 2 ** 20
        n_params = sum(p.numel() for p in model.parameters())
        state = 4 * sum(p.numel() * p.element_size() for p in model.parameters()) / 2 ** 20
        out[key] = dict(time=statistics.median(times[key]), act=act, params=n_params, state=state,
                        peak=peak[key] if device.type == "cuda" else None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batches", type=int, default=20, help="real batches per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (LSTMs and CRFs stay fp32)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    names = ["ner_only"] + [v for v in args.variants if v != "ner_only"]
    device = torch.device(args.device)
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if args.bf16 else nullcontext()
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"# MIN training cost ({where}; {'bf16 autocast' if args.bf16 else 'fp32'}; batch 10; "
          f"torch {torch.__version__})\n")

    vocabs, batches, per_epoch, corpus = load_batches(args.batches)
    lengths = [int(b.mask.sum(1).max()) for b in batches]
    res = measure(make_models(vocabs, device, names), batches, args.rounds, args.warmup, device, amp)
    base = res["ner_only"]
    cuda = device.type == "cuda"
    print(f"## {corpus}: {len(batches)} bucketed batches (max length {min(lengths)}-{max(lengths)}), "
          f"{per_epoch} batches per epoch; median of {args.rounds} rounds\n")
    print("| model | ms / step | time ratio | est. s / epoch | parameters | params + Adam MiB | activations MiB "
          "| activation ratio |" + (" peak CUDA MiB | peak ratio |" if cuda else ""))
    print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if cuda else ""))
    for key, r in res.items():
        extra = f" {r['peak']:.0f} | {r['peak'] / base['peak']:.2f} |" if cuda else ""
        print(f"| {VARIANTS[key][0]} | {1e3 * r['time']:.1f} | {r['time'] / base['time']:.2f} "
              f"| {r['time'] * per_epoch:.0f} | {r['params']:,} | {r['state']:.1f} | {r['act']:.1f} "
              f"| {r['act'] / base['act']:.2f} |{extra}")
    if "min" in res:
        print(f"\nmin_ratio={res['min']['time'] / base['time']:.3f}")


if __name__ == "__main__":
    main()
