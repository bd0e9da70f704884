"""Cost of PSA's two context fusion layers: training time per step vs the same-recipe BiLSTM-CRF.

Models (paper sizes, word vectors 50d as in our configs): char BiLSTM 30 -> 2 x 50, word BiLSTM 2 x 150,
CRF over BIOES tags; PSA adds fusion layer #1 (d = 150) and #2 (d = 300). The baseline is PSA with both
fusion layers off (identical to ``BiLSTMCRF``). One training step = forward, CRF NLL, backward, gradient
clipping at 5, SGD with momentum 0.9. All models run the same batches in the same process, taking turns
round by round; each cell is the median over the timed rounds (mean step time within a round) after warm-up.

Part 1 times CoNLL-2003 training batches (batch 10, length-bucketed as in the configs) when
``$NER_ZOO_DATA/conll2003`` exists, else the bundled sample corpus; it also estimates seconds per epoch.
Part 2 sweeps the sentence length (every sentence of the batch has length L) to show the O(L^2) growth
of the attention; on CUDA it also reports peak memory. Prints markdown tables; the last line is
``psa_ratio_real=<x>`` (PSA time / baseline time on part 1).

Usage: ``python benchmarks/psa_cost.py [--device cpu|cuda] [--lengths 10 20 40 80 160] [--rounds 5]
[--batches 30] [--threads N] [--bf16]``. On a shared 2-core CPU pass ``--threads 1``
(with more threads than free cores, the intra-op threads spin and every step gets many times slower).
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
from ner_zoo.models.psa import PSA  # noqa: E402
from ner_zoo.modules import CharBiLSTM  # noqa: E402

VARIANTS = {"BiLSTM-CRF": dict(fuse_input=False, fuse_output=False),
            "PSA fusion #1 only": dict(fuse_input=True, fuse_output=False),
            "PSA fusion #2 only": dict(fuse_input=False, fuse_output=True),
            "PSA (both)": dict(fuse_input=True, fuse_output=True)}


def char_encoder(n: int) -> CharBiLSTM:
    return CharBiLSTM(n, char_dim=30, hidden=50)


def make_models(vocabs: dict, device: torch.device, names: list[str]) -> dict:
    models = {}
    for name in names:
        torch.manual_seed(0)
        model = PSA(vocabs=vocabs, word_dim=50, hidden=150, dropout=0.55, char_encoder=char_encoder,
                    **VARIANTS[name]).to(device).train()
        models[name] = (model, torch.optim.SGD(model.parameters(), lr=0.015, momentum=0.9))
    return models


def load_batches(n_batches: int) -> tuple[dict, list[Batch], int, str]:
    """Vocabularies, the first bucketed training batches, batches per epoch, and the corpus name."""
    from ner_zoo.data.corpora import CoNLL2003, SampleCorpus

    root = Path(os.environ.get("NER_ZOO_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if (root / "conll2003" / "eng.train").exists():
        dm, name = CoNLL2003(data_dir=str(root / "conll2003"), batch_size=10, bucket=True), "CoNLL-2003 train"
    else:
        dm, name = SampleCorpus(batch_size=10, bucket=True), "sample corpus (CoNLL-2003 not found)"
    loader = dm.train_dataloader()
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == n_batches:
            break
    return dm.vocabs, batches, len(loader), name


def synthetic_batch(vocabs: dict, length: int, size: int, seed: int) -> Batch:
    """``size`` sentences of exactly ``length`` random words (chars 3-9 per word), all tags ``O``."""
    g = torch.Generator().manual_seed(seed)
    n_words, n_chars = len(vocabs["words"]["tokens"]) + 2, len(vocabs["chars"]["tokens"]) + 2
    words = torch.randint(2, n_words, (size, length), generator=g)
    char_len = torch.randint(3, 10, (size, length), generator=g)
    chars = torch.randint(2, n_chars, (size, length, 9), generator=g) * (torch.arange(9) < char_len[..., None])
    mask = torch.ones(size, length, dtype=torch.bool)
    tags = torch.full((size, length), vocabs["tags"].index("O"))
    return Batch([], torch.arange(size), words, chars, mask, tags)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_step(model: PSA, opt: torch.optim.Optimizer, batch: Batch, amp) -> None:
    opt.zero_grad(set_to_none=True)
    with amp:
        loss = model.compute_loss(batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()


def time_models(models: dict, batches: list[Batch], rounds: int, warmup: int, device: torch.device, amp
                ) -> dict[str, tuple[float, float | None]]:
    """Median seconds per step (over rounds of the batch list) and peak CUDA memory (MiB) per model."""
    batches = [b.to(device) for b in batches]
    times = {name: [] for name in models}
    peak = {name: 0.0 for name in models}
    for r in range(warmup + rounds):
        for name, (model, opt) in models.items():
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
                    peak[name] = max(peak[name], torch.cuda.max_memory_allocated() / 2 ** 20)
            if r >= warmup:
                times[name].append(total / len(batches))
    return {n: (statistics.median(t), peak[n] if device.type == "cuda" else None) for n, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--lengths", type=int, nargs="+", default=[10, 20, 40, 80, 160])
    ap.add_argument("--batches", type=int, default=30, help="real batches timed in part 1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (LSTMs and CRF stay fp32)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if args.bf16 else nullcontext()
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"# PSA cost ({where}; {'bf16 autocast' if args.bf16 else 'fp32'}; batch 10; torch {torch.__version__})\n")

    vocabs, batches, per_epoch, corpus = load_batches(args.batches)
    lengths = [int(b.mask.sum(1).max()) for b in batches]
    models = make_models(vocabs, device, list(VARIANTS))
    res = time_models(models, batches, args.rounds, args.warmup, device, amp)
    base = res["BiLSTM-CRF"][0]
    print(f"## {corpus}: {len(batches)} bucketed batches (max length {min(lengths)}-{max(lengths)}), "
          f"{per_epoch} batches per epoch\n")
    cuda = device.type == "cuda"
    print("| model | ms / step | ratio vs BiLSTM-CRF | est. s / epoch |" + (" peak MiB |" if cuda else ""))
    print("|---|---:|---:|---:|" + ("---:|" if cuda else ""))
    for name, (t, mem) in res.items():
        extra = f" {mem:.0f} |" if mem is not None else ""
        print(f"| {name} | {1e3 * t:.1f} | {t / base:.2f} | {t * per_epoch:.0f} |{extra}")

    print("\n## Sentence length sweep (every sentence of the batch has length L)\n")
    models = {n: models[n] for n in ("BiLSTM-CRF", "PSA (both)")}
    print("| L | BiLSTM-CRF ms | PSA ms | ratio | PSA extra ms | attention tensors MiB |"
          + (" peak MiB base | peak MiB PSA |" if cuda else ""))
    print("|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if cuda else ""))
    for i, length in enumerate(args.lengths):
        batch = synthetic_batch(vocabs, length, 10, seed=i)
        res_l = time_models(models, [batch], max(3, args.rounds), args.warmup, device, amp)
        (tb, mb), (tp, mp) = res_l["BiLSTM-CRF"], res_l["PSA (both)"]
        # the two [B, L, L, d] tanh activations kept for backward (d = 150 and 300), fp32
        att = 10 * length * length * (150 + 300) * (2 if args.bf16 else 4) / 2 ** 20
        mem = f" {mb:.0f} | {mp:.0f} |" if cuda else ""
        print(f"| {length} | {1e3 * tb:.1f} | {1e3 * tp:.1f} | {tp / tb:.2f} | {1e3 * (tp - tb):.1f} "
              f"| {att:.1f} |{mem}")
    print(f"\npsa_ratio_real={res['PSA (both)'][0] / base:.3f}")


if __name__ == "__main__":
    main()
