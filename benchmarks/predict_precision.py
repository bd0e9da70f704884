"""Checkpoints predicting a test split in fp32 and in bf16 (issue 46, item 5): test F1 of each, how many
sentences' spans differ, and sentences per second, rounds interleaved in one process.

    OMP_NUM_THREADS=1 python benchmarks/predict_precision.py --model CKPT_OR_FOLDER [CKPT ...] --test FILE.conll
        [--precisions 32 bf16] [--rounds 2] [--batch-size 32] [--sentences N]

Several ``--model``s (the seeds of one recipe): one row per checkpoint and precision, then per precision the
largest and the mean F1 difference from the first precision (the ``within 0.1`` rule of
``ner_zoo.hardware.BF16_EQUAL_PREDICTION``).

The model is loaded once per precision with ``ner_zoo.load(model, precision=P)`` (autocast on the CPU; LSTMs
and CRFs stay fp32, ``ner_zoo.modules.precision``); the words of ``--test`` (a CoNLL file of the checkpoint's
corpus, read by the project's reader in the checkpoint's tag scheme) go in as token lists. F1: the project's
span F1 (exact match, micro) against the file's gold spans. Judge bf16's speed only on a host whose line says
``avx512_bf16 yes`` or ``amx_tile yes`` (or a bf16 GPU); elsewhere it is emulated.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from host import host_line  # noqa: E402  (after the path above)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, nargs="+", help="checkpoints or exported folders")
    ap.add_argument("--test", required=True, help="a CoNLL file with gold tags (word first, tag last)")
    ap.add_argument("--precisions", nargs="+", default=["32", "bf16"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--sentences", type=int, default=None, help="the first N sentences only")
    ap.add_argument("--scheme", default="iob1", help="the file's tag scheme (CoNLL-2003's files: iob1)")
    args = ap.parse_args()

    import ner_zoo
    from ner_zoo.data.readers.conll import read_conll
    from ner_zoo.metrics.functional import span_prf

    print(host_line(), flush=True)
    gold_sentences = read_conll(args.test, scheme=args.scheme)[: args.sentences]
    words = [s.tokens for s in gold_sentences]
    gold = [{(sp.start, sp.end, sp.label) for sp in s.spans} for s in gold_sentences]
    base = args.precisions[0]
    print(f"{len(words)} sentences of {args.test}, batch {args.batch_size}, {args.rounds} round(s)")
    print(f"| model | precision | test F1 | F1 - {base} | sentences with other spans than {base} | median s | "
          "sentences/s |\n|---|---|---:|---:|---:|---:|---:|", flush=True)
    deltas: dict[str, list[float]] = {p: [] for p in args.precisions[1:]}
    for model in args.model:
        f1 = measure(ner_zoo, model, words, gold, args, span_prf)
        for p, (score, differ, sec) in f1.items():
            delta = score - f1[base][0]
            if p != base:
                deltas[p].append(delta)
            print(f"| {model} | {p} | {score:.2f} | {delta:+.2f} | {differ} | {sec:.2f} | {len(words) / sec:.1f} |",
                  flush=True)
    for p, values in deltas.items():
        worst = max(values, key=abs)
        print(f"{p} - {base} over {len(values)} model(s): largest {worst:+.2f}, mean {statistics.fmean(values):+.3f}; "
              f"within 0.1 of {base}: {'yes' if abs(worst) <= 0.1 else 'no'}")


def measure(ner_zoo, model: str, words, gold, args, span_prf) -> dict:
    """precision -> (test F1 in percent, sentences whose spans differ from the first precision's, median seconds)."""
    taggers = {p: ner_zoo.load(model, batch_size=args.batch_size, precision=p) for p in args.precisions}
    spans, seconds = {}, {p: [] for p in args.precisions}
    for r in range(args.rounds):
        for p in (args.precisions if r % 2 == 0 else args.precisions[::-1]):
            t = time.perf_counter()
            out = taggers[p](tokens=words)
            seconds[p].append(time.perf_counter() - t)
            spans[p] = [{(e.token_start, e.token_end, e.label) for e in sent} for sent in out]
    base = args.precisions[0]
    return {p: (span_prf(spans[p], gold)["f1"] * 100, sum(a != b for a, b in zip(spans[p], spans[base])),
                statistics.median(seconds[p])) for p in args.precisions}


if __name__ == "__main__":
    main()
