"""CRF speed: ner_zoo's LinearChainCRF against pytorch-crf (torchcrf.CRF), in one process.

NLL forward+backward (reduction "mean") and Viterbi decoding to Python lists, at batch 32 x length 40 x
17 tags and 32 x 128 x 9 (CoNLL-2003's tag counts in BIOES and IOB2; no constraints, random scores,
the same parameters in both). Lengths are random in [L/2, L]
with row 0 full length. The two implementations are interleaved call by call (alternating which goes
first); each time is the median of the timed runs after warm-up, the ratio is ours / theirs of those
medians (below 1: ours is faster), and "paired ratio" is the median of the per-run ratios (steadier on
a busy machine). Prints a markdown table and, as the last line, ``worst_ratio=<x>``, the worst of the
four ratios of medians.

Usage: ``python benchmarks/crf_speed.py [--runs 41] [--warmup 5] [--threads 2]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ner_zoo.modules.crf import LinearChainCRF, paths_to_lists  # noqa: E402

SHAPES = [(32, 40, 17), (32, 128, 9)]


def _inputs(B: int, L: int, T: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    emissions = torch.randn(B, L, T, generator=g).requires_grad_()
    lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
    lengths[0] = L
    mask = torch.arange(L) < lengths[:, None]
    tags = torch.randint(0, T, (B, L), generator=g)
    return emissions, tags, mask


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_shape(B: int, L: int, T: int, runs: int, warmup: int) -> list[tuple[str, float, float]]:
    from torchcrf import CRF

    torch.manual_seed(0)
    theirs = CRF(T, batch_first=True)
    ours = LinearChainCRF(T)
    with torch.no_grad():  # same parameters
        ours.start_transitions.copy_(theirs.start_transitions)
        ours.end_transitions.copy_(theirs.end_transitions)
        ours.transitions.copy_(theirs.transitions)
    em, tags, mask = _inputs(B, L, T, seed=B * 1000 + L)

    ref = -theirs(em, tags, mask=mask, reduction="sum")
    got = ours.nll(em, tags, mask, reduction="sum")
    rel = abs(got.item() - ref.item()) / abs(ref.item())
    if rel > 1e-5:
        raise SystemExit(f"NLL mismatch at {B}x{L}x{T}: ours {got.item()} theirs {ref.item()} (rel {rel:.2e})")
    with torch.no_grad():
        if paths_to_lists(ours.decode(em, mask), mask) != theirs.decode(em, mask):
            raise SystemExit(f"Viterbi paths differ at {B}x{L}x{T}")

    def nll_theirs():
        em.grad = None
        (-theirs(em, tags, mask=mask, reduction="mean")).backward()

    def nll_ours():
        em.grad = None
        ours.nll(em, tags, mask, reduction="mean").backward()

    def vit_theirs():
        with torch.no_grad():
            theirs.decode(em, mask)

    def vit_ours():
        with torch.no_grad():
            paths_to_lists(ours.decode(em, mask), mask)

    rows = []
    for name, a, b in [("NLL fwd+bwd", nll_ours, nll_theirs), ("Viterbi -> lists", vit_ours, vit_theirs)]:
        ta, tb = [], []
        for i in range(warmup + runs):
            if i % 2 == 0:  # alternate who goes first
                x, y = _timed(a), _timed(b)
            else:
                y, x = _timed(b), _timed(a)
            if i >= warmup:
                ta.append(x)
                tb.append(y)
        paired = statistics.median(x / y for x, y in zip(ta, tb))
        rows.append((f"{name} {B}x{L}x{T}", 1e3 * statistics.median(ta), 1e3 * statistics.median(tb), paired))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41, help="timed runs per cell (median reported)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed warm-up runs per cell")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = parser.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(args.threads)
    rows = []
    for shape in SHAPES:
        rows += bench_shape(*shape, runs=args.runs, warmup=args.warmup)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.runs} runs after "
          f"{args.warmup} warm-up\n")
    print("| case (B x L x T) | ner_zoo ms | pytorch-crf ms | ratio ours/theirs | paired ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, ours_ms, theirs_ms, paired in rows:
        print(f"| {name} | {ours_ms:.2f} | {theirs_ms:.2f} | {ours_ms / theirs_ms:.3f} | {paired:.3f} |")
    print(f"worst_ratio={max(o / t for _, o, t, _ in rows):.3f}")


if __name__ == "__main__":
    main()
