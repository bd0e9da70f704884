"""Training sentences per second with ``data.batch_tokens`` budgets against batches of 10 sentences.

The model is ``configs/baselines/conll2003.yaml``'s (CoNLL-2003; the sample corpus when it is absent); each
mode trains on the same ``--sentences`` training sentences (one pass: forward, backward, clip 5, SGD with
momentum), batched by the training loader of that mode (``batch_size: 10`` with length buckets, or each
``--budgets`` value as ``batch_tokens``); the modes alternate within each round on one model, in one process.
Larger batches take fewer, larger steps: this measures throughput, not accuracy after an epoch.

Usage: ``python benchmarks/batch_tokens.py [--sentences 1000] [--budgets 150 300] [--rounds 3] [--threads 1]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ner_zoo.training.optim import fused_if_unset  # noqa: E402
from throughput import baseline_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--budgets", type=int, nargs="+", default=[150, 300])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    _, dm, corpus, model = baseline_model(a.threads)
    sentences = dm.train_sentences()[: a.sentences]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = fused_if_unset(torch.optim.SGD(params, lr=1e-4, momentum=0.9))
    modes = [("batch_size 10", None)] + [(f"batch_tokens {b}", b) for b in a.budgets]
    loaders = {}
    for name, budget in modes:
        dm.batch_tokens = budget
        loaders[name] = [b for b in dm._loader(sentences, train=True, collate=dm.vocabularies.collator())]
    dm.batch_tokens = None

    def one_pass(batches) -> float:
        start = time.perf_counter()
        for batch in batches:
            loss = model.compute_loss(batch)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 5.0)
            optimizer.step()
        return len(sentences) / (time.perf_counter() - start)

    one_pass(loaders["batch_size 10"][:5])  # warm-up
    rates: dict[str, list[float]] = {name: [] for name, _ in modes}
    for _ in range(a.rounds):
        for name, _ in modes:
            rates[name].append(one_pass(loaders[name]))
    base = statistics.median(rates["batch_size 10"])
    print(f"## Training throughput by batching ({corpus}; {len(sentences)} sentences, {torch.get_num_threads()} "
          f"thread(s), median of {a.rounds} interleaved rounds)\n")
    print("| batching | steps | sentences / step | padded tokens / step | sentences/s | ratio |\n"
          "|---|---:|---:|---:|---:|---:|")
    for name, _ in modes:
        batches = loaders[name]
        padded = statistics.mean(b.mask.numel() for b in batches)
        rate = statistics.median(rates[name])
        print(f"| {name} | {len(batches)} | {len(sentences) / len(batches):.1f} | {padded:.0f} | {rate:.1f} | "
              f"{rate / base:.2f} |")


if __name__ == "__main__":
    main()
