"""Span max-pooling and span decoding against simpler peers measured in the same process.

* ``span_max_pool`` (sparse table, two lookups per span) vs a width-limited gather (``[B, S, K, D]``
  then a masked max), forward + backward, on the exhaustive grid of widths ``1..K``.
* ``decode_batch`` (conflict matrices, vectorised fixed-point rounds, one call per batch of 32
  sentences) and ``decode_nested`` (the same per sentence) vs a pure-Python greedy loop over pairs.

Usage: ``python benchmarks/span_ops.py [--device cpu|cuda] [--repeat N] [--threads N]``. Prints markdown tables; the
ratio column is peer time / ours (> 1: ours is faster). Peak memory is reported on CUDA only.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from ner_zoo.modules.span_decoding import decode_batch, decode_nested
from ner_zoo.modules.spans import enumerate_spans, span_max_pool


def gather_max_pool(states, spans, mask, max_width):
    """The peer: gather every token of every span (padded to ``max_width``), then a masked max."""
    B, L, D = states.shape
    idx = spans[..., :1] + torch.arange(max_width, device=states.device)  # [B, S, K]
    inside = (idx < spans[..., 1:]) & mask.unsqueeze(-1)
    b = torch.arange(B, device=states.device).view(B, 1, 1)
    tokens = states[b, idx.clamp(max=L - 1)]  # [B, S, K, D]
    out = tokens.masked_fill(~inside.unsqueeze(-1), float("-inf")).max(2).values
    return out.masked_fill(~mask.unsqueeze(-1), 0.0)


def timed(fn, repeat, device):
    best, peak = float("inf"), 0
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
            peak = max(peak, torch.cuda.max_memory_allocated())
        best = min(best, time.perf_counter() - t)
    return best, peak


def pool_table(device, repeat):
    print("| B | L | D | K | sparse table ms | gather ms | ratio | table MiB | gather MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for B, L, D, K in [(16, 40, 400, 10), (32, 60, 400, 16), (8, 120, 1024, 16), (16, 200, 768, 25)]:
        torch.manual_seed(0)
        states = torch.randn(B, L, D, device=device, requires_grad=True)
        lengths = torch.randint(L // 2, L + 1, (B,), device=device)
        spans, mask = enumerate_spans(lengths, K, L)
        assert torch.equal(span_max_pool(states, spans, mask, K), gather_max_pool(states, spans, mask, K))

        def ours():
            span_max_pool(states, spans, mask, K).sum().backward()

        def peer():
            gather_max_pool(states, spans, mask, K).sum().backward()

        (t1, m1), (t2, m2) = timed(ours, repeat, device), timed(peer, repeat, device)
        mib = (lambda m: f"{m / 2**20:.0f}" if device == "cuda" else "-")
        print(f"| {B} | {L} | {D} | {K} | {1e3 * t1:.2f} | {1e3 * t2:.2f} | {t2 / t1:.2f} | {mib(m1)} | {mib(m2)} |")


def naive_nested(spans, scores):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    kept = []
    for i in order:
        s, e = spans[i]
        if all(not ((s < e2 and s2 < e) and not ((s <= s2 and e2 <= e) or (s2 <= s and e <= e2))) and (s, e) != (s2, e2)
               for s2, e2 in (spans[k] for k in kept)):
            kept.append(i)
    return kept


def decode_table(repeat):
    print("\n| candidates per sentence | sentences | decode_batch ms | decode_nested per sentence ms | python loop ms "
          "| ratio loop / batch |")
    print("|---|---|---|---|---|---|")
    rng = random.Random(0)
    for n in (5, 20, 80):
        sents = []
        for _ in range(256):
            sp = [(s, s + rng.randint(1, 6)) for s in (rng.randrange(40) for _ in range(n))]
            sents.append((sp, [rng.random() for _ in range(n)]))
        spans = torch.tensor([sp for sp, _ in sents])
        scores = torch.tensor([sc for _, sc in sents])
        keep = decode_batch(spans, scores, nested=True)
        assert all(sorted(naive_nested(sp, sc)) == keep[b].nonzero().squeeze(1).tolist()
                   for b, (sp, sc) in enumerate(sents))
        t0, _ = timed(lambda: [decode_batch(spans[i:i + 32], scores[i:i + 32], nested=True).tolist()
                               for i in range(0, len(sents), 32)], repeat, "cpu")
        t1, _ = timed(lambda: [decode_nested(spans[b], scores[b]) for b in range(len(sents))], repeat, "cpu")
        t2, _ = timed(lambda: [naive_nested(sp, sc) for sp, sc in sents], repeat, "cpu")
        print(f"| {n} | {len(sents)} (batches of 32) | {1e3 * t0:.1f} | {1e3 * t1:.1f} | {1e3 * t2:.1f} "
              f"| {t2 / t0:.2f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (1 avoids OpenMP stalls on an oversubscribed machine)")
    a = p.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    if a.threads:
        torch.set_num_threads(a.threads)
    print(f"device: {a.device}, torch {torch.__version__}, threads {torch.get_num_threads()}\n")
    pool_table(a.device, a.repeat)
    decode_table(a.repeat)


if __name__ == "__main__":
    main()
