"""One BiLSTM-CRF training step on one very long sentence: packed vs unpacked LSTMs, and split at
``max_train_length`` (issue 19, item 5).

The sentence is consecutive CoNLL-2003 training sentences joined (their gold spans shifted) up to each
``--lengths`` value; the model is the baseline config's (random word vectors: the cost is the same). Each
row is one forward + backward of ``compute_loss``: with the packed LSTM path (before issue 19), with the
unpacked one (now), and now on the pieces ``ner_zoo.data.lengths.split_sentence`` makes at
``--max-train-length`` tokens, batched together as the training loader would (length buckets).

Usage: ``python benchmarks/long_sentences.py [--lengths 1000 4000 8000] [--max-train-length 250] [--threads 1]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ner_zoo.modules.char_encoders as char_encoders  # noqa: E402
import ner_zoo.modules.rnn as rnn  # noqa: E402
from ner_zoo.data.lengths import split_sentence  # noqa: E402
from ner_zoo.data.schema import Sentence, Span  # noqa: E402
from step_breakdown import UNPACKED, packed  # noqa: E402
from throughput import baseline_model  # noqa: E402


def joined(train: list[Sentence], length: int) -> Sentence:
    tokens, spans = [], []
    for s in train:
        if len(tokens) + len(s) > length:
            break
        spans += [Span(sp.start + len(tokens), sp.end + len(tokens), sp.label) for sp in s.spans]
        tokens += s.tokens
    return Sentence(tokens=tokens, spans=spans)


def timed(model, batch) -> float:
    t = time.perf_counter()
    model.compute_loss(batch).backward()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[1000, 4000, 8000])
    ap.add_argument("--max-train-length", type=int, default=250)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    _, dm, corpus, model = baseline_model(a.threads)
    collate = dm.vocabularies.collator()
    k = a.max_train_length
    print(f"## One training step on one long sentence ({corpus}; {torch.get_num_threads()} thread(s))\n")
    print(f"| tokens | packed (before) s | unpacked (now) s | now, max_train_length {k} (pieces) s |\n"
          "|---:|---:|---:|---:|")
    for length in a.lengths:
        sent = joined(dm.sentences("train"), length)
        rnn.bilstm = char_encoders.bilstm = packed
        before = timed(model, collate([(0, sent)]))
        rnn.bilstm = char_encoders.bilstm = UNPACKED
        now = timed(model, collate([(0, sent)]))
        pieces = split_sentence(sent, k)
        split = timed(model, collate(list(enumerate(pieces))))
        print(f"| {len(sent):,} | {before:.2f} | {now:.2f} | {split:.2f} ({len(pieces)}) |", flush=True)


if __name__ == "__main__":
    main()
