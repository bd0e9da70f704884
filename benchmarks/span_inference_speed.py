"""Inference speed of Locate-and-Label vs the exhaustive span classifier on the same encoder, and the number
of span proposals Locate-and-Label keeps per gold entity after brief training.

Both models: random 50-d word embeddings, char BiLSTM (25 per direction), BiLSTM 200 per direction, heads
with 150 hidden units; widths 1..11 (GENIA's setting: the classifier enumerates 1..11, Locate-and-Label
evaluates every seed of length 1..11, then filter + regressor + classifier on the adjusted spans, duplicate
merging, crossing removal and Soft-NMS). Sentences: GENIA dev (the nested test fixture when GENIA is
absent), batches of 32 in corpus order; ``decode`` (everything from batch to span lists) under
``torch.no_grad``, rounds interleaved, median per model. Weights are random, so the number of candidates
reaching Locate-and-Label's decoding differs from a trained model's (reported).

With ``--train-steps N`` (default 200), a Locate-and-Label model of the same size is trained for N steps
(Adam 1e-3, batch 16) on GENIA train and the proposals (filter-kept, legal seeds) per gold entity on dev
are counted (the paper reports about 3).

Usage: ``NER_ZOO_DATA=/work/shared/data python benchmarks/span_inference_speed.py [--threads 1]
[--sentences 512] [--rounds 3] [--train-steps 200]``. Prints markdown tables; ``ratio`` = classifier time /
Locate-and-Label time (> 1: Locate-and-Label is faster).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import data_root  # noqa: E402
from ner_zoo.data.corpora import GENIA, JsonDataModule  # noqa: E402
from ner_zoo.models.locate_and_label import LocateAndLabel  # noqa: E402
from ner_zoo.models.span_classifier import ExhaustiveSpanClassifier  # noqa: E402
from ner_zoo.modules import CharBiLSTM  # noqa: E402
from ner_zoo.modules.embeddings import Words  # noqa: E402

WIDTH = 11
COMMON = dict(words=Words(dim=50), char_encoder=partial(CharBiLSTM, char_dim=25, hidden=25), lstm_hidden=200, ffn_dim=150)


def load(batch_size: int):
    genia = data_root() / "genia"
    if (genia / "dev.jsonlines").exists():
        return GENIA(data_dir=str(genia), batch_size=batch_size), "GENIA"
    fixture = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "nested"
    return JsonDataModule(data_dir=str(fixture), train_file="train.jsonlines", dev_file="dev.jsonlines",
                          test_file="test.jsonlines", batch_size=batch_size), "nested test fixture (GENIA absent)"


def make(vocabs, seed: int = 0) -> dict:
    torch.manual_seed(seed)
    lal = LocateAndLabel(vocabs=vocabs, train_widths=list(range(1, WIDTH + 1)), max_width=WIDTH,
                         score_threshold=0.45, **COMMON)
    torch.manual_seed(seed)
    esc = ExhaustiveSpanClassifier(vocabs=vocabs, max_width=WIDTH, width_dim=25, **COMMON)
    return {"Locate-and-Label": lal.eval(), "Exhaustive classifier": esc.eval()}


def candidates(model: LocateAndLabel, batches) -> int:
    with torch.no_grad():
        return sum(int(model.eval_proposals(b)[2].sum()) for b in batches)


def time_decode(models: dict, batches, rounds: int) -> dict:
    times = {k: [] for k in models}
    with torch.no_grad():
        for name, model in models.items():  # warm-up
            model.decode(batches[0])
        for _ in range(rounds):
            for name, model in models.items():
                t = time.perf_counter()
                for b in batches:
                    model.decode(b)
                times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def proposals_per_gold(dm, steps: int, eval_batches) -> tuple[float, float, float]:
    torch.manual_seed(1)
    model = LocateAndLabel(vocabs=dm.vocabs, train_widths=list(range(1, WIDTH + 1)), max_width=WIDTH,
                           score_threshold=0.45, dropout=0.2, embed_dropout=0.2, **COMMON).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = dm._loader(dm.sentences("train"), train=True, collate=model.collate)
    done, t0 = 0, time.perf_counter()
    while done < steps:
        for batch in loader:
            opt.zero_grad()
            model.compute_loss(batch).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            done += 1
            if done == steps:
                break
    model.eval()
    kept = sum(model.count_proposals(b) for b in eval_batches)
    gold = sum(len(s.spans) for b in eval_batches for s in b.sentences)
    tp = pred = 0
    with torch.no_grad():
        for b in eval_batches:
            for s, p in zip(b.sentences, model.decode(b)):
                tp += len(set(p) & set(s.spans))
                pred += len(p)
    f1 = 2 * tp / max(1, pred + gold)
    return kept / max(1, gold), f1, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=200)
    args = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(args.threads)
    dm, corpus = load(16)
    dm.setup("fit")
    models = make(dm.vocabs)
    sents = dm.sentences("dev")[: args.sentences]
    collate = models["Locate-and-Label"].collate
    batches = [collate(list(enumerate(sents[i:i + args.batch_size]))) for i in range(0, len(sents), args.batch_size)]
    secs = time_decode(models, batches, args.rounds)
    n = len(sents)
    print(f"## Inference on {corpus} dev: {n} sentences, batch {args.batch_size}, CPU {torch.get_num_threads()} "
          f"thread(s), random weights, widths 1..{WIDTH}\n")
    print("| model | sentences/s | ms/batch | ratio (classifier time / this) |\n|---|---|---|---|")
    for name, s in secs.items():
        print(f"| {name} | {n / s:.1f} | {1000 * s / len(batches):.1f} | {secs['Exhaustive classifier'] / s:.2f} |")
    cand = candidates(models["Locate-and-Label"], batches)
    print(f"\nLocate-and-Label candidates entering decoding (random weights): {cand / n:.1f} per sentence")
    if args.train_steps > 0:
        per_gold, f1, secs_train = proposals_per_gold(dm, args.train_steps, batches)
        print(f"\n## Proposals after {args.train_steps} training steps (batch 16, {secs_train:.0f} s incl. eval)\n")
        print("| proposals kept per gold entity (dev) | dev F1 (tiny, briefly trained) |\n|---|---|")
        print(f"| {per_gold:.2f} | {100 * f1:.2f} |")


if __name__ == "__main__":
    main()
