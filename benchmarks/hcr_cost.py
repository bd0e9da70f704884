"""Training cost of HCR's sentence and document levels relative to the IntNet-BiLSTM-CRF base, and the
memory's footprint, in one process.

Time: the four Table 5 variants (base, + sentence, + document, all) with the configs' sizes (GloVe-sized
50-d words, IntNet 160-d, BiLSTM 2 x 128, sentence BiLSTM 2 x 64, label kernel 55, T = 500, cosine) run
the same CoNLL-2003 training batches (batch 10, length-bucketed, BIOES; the sample corpus when CoNLL-2003
is absent). One step = forward, summed CRF loss, backward, SGD (lr 0.015), as in the recipe. The memory
indexes the whole training split and is pre-filled (every slot written, as after the first epoch), so
queries run at their steady-state cost and every step also writes its tokens' slots. Models are
interleaved per round; each time is the median over rounds after warm-up. The paper reports +19% training
time for the memory at T = 500 ("document" vs "base" here).

Footprint: the memory buffers for CoNLL-2003 and OntoNotes 5 training data (train words only in the
vocabulary), computed from the real index: keys (word_dim floats) and values (2 x hidden floats) per slot,
plus the index (slot of every training token, sentence offsets, first slot and count per word type). For
comparison, the official code's layout: one slot per token of train + dev + test, 100-d keys, no cap.

Prints markdown tables; the last line is ``memory_ratio=<x>`` (document time / base time).

Usage: ``NER_ZOO_DATA=/work/shared/data python benchmarks/hcr_cost.py [--device cpu|cuda] [--batches 20]
[--rounds 3] [--threads N] [--slots 500] [--no-footprint]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ner_zoo.data.batching import Batch  # noqa: E402
from ner_zoo.models.hcr import HCR  # noqa: E402
from ner_zoo.modules.intnet import IntNet  # noqa: E402
from ner_zoo.modules.memory import KeyValueTokenMemory  # noqa: E402

VARIANTS = {"base": dict(sentence_level=False, document_level=False),
            "sentence": dict(sentence_level=True, document_level=False),
            "document": dict(sentence_level=False, document_level=True),
            "all": dict(sentence_level=True, document_level=True)}
WORD_DIM, HIDDEN = 50, 128


def data_root() -> Path:
    return Path(os.environ.get("NER_ZOO_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def load(n_batches: int):
    """Data module, the first bucketed training batches, batches per epoch, corpus name."""
    from ner_zoo.data.corpora import CoNLL2003, SampleCorpus

    kw = dict(tag_scheme="bioes", batch_size=10, bucket=True, normalize_digits=True)
    if (data_root() / "conll2003" / "eng.train").exists():
        dm, name = CoNLL2003(data_dir=str(data_root() / "conll2003"), **kw), "CoNLL-2003 train"
    else:
        dm, name = SampleCorpus(**kw), "sample corpus (CoNLL-2003 not found)"
    loader = dm._loader(dm.sentences("train"), train=True, collate=dm.vocabularies.collator())
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == n_batches:
            break
    return dm, batches, len(loader), name


def make_models(dm, device: torch.device, slots: int) -> dict:
    models = {}
    train = dm.sentences("train")
    for key, flags in VARIANTS.items():
        torch.manual_seed(0)
        model = HCR(vocabs=dm.vocabs, word_dim=WORD_DIM, hidden=HIDDEN, dropout=0.5, char_encoder=IntNet,
                    sentence_hidden=64, label_kernel=55, memory_slots=slots, loss_reduction="sum", **flags)
        model.prepare(train)  # label embeddings, memory index
        if model.memory is not None:  # steady state: every slot written once
            g = torch.Generator().manual_seed(1)
            with torch.no_grad():
                mem = model.memory
                mem.keys.copy_(model.embedder.words.embedding.weight[_slot_words(mem)])
                mem.values.copy_(torch.randn(mem.values.shape, generator=g) * 0.1)
                mem.written.fill_(True)
        model = model.to(device).train()
        models[key] = (model, torch.optim.SGD(model.parameters(), lr=0.015, weight_decay=1e-8))
    return models


def _slot_words(mem: KeyValueTokenMemory) -> torch.Tensor:
    """The word type owning each slot."""
    return torch.repeat_interleave(torch.arange(mem.num_words), mem.word_count.cpu())


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_step(model: HCR, opt: torch.optim.Optimizer, batch: Batch) -> None:
    opt.zero_grad(set_to_none=True)
    model.compute_loss(batch).backward()
    opt.step()


def measure(models: dict, batches: list[Batch], rounds: int, warmup: int, device: torch.device) -> dict:
    batches = [b.to(device) for b in batches]
    times = {k: [] for k in models}
    peak = {k: 0.0 for k in models}
    for r in range(warmup + rounds):
        for key, (model, opt) in models.items():
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            sync(device)
            t0 = time.perf_counter()
            for batch in batches:
                train_step(model, opt, batch)
            sync(device)
            if r >= warmup:
                times[key].append((time.perf_counter() - t0) / len(batches))
            if device.type == "cuda":
                peak[key] = max(peak[key], torch.cuda.max_memory_allocated() / 2 ** 20)
    out = {}
    for key, (model, _) in models.items():
        mem = model.memory
        out[key] = dict(time=statistics.median(times[key]), params=sum(p.numel() for p in model.parameters()),
                        buffers=sum(mem.nbytes().values()) / 2 ** 20 if mem is not None else 0.0,
                        peak=peak[key] if device.type == "cuda" else None)
    return out


def footprint(slots: int) -> list[tuple]:
    """Rows: corpus, train tokens, word types, slots, MiB of keys+values (50-d and 100-d keys), index MiB,
    total MiB (50-d), official layout MiB."""
    from ner_zoo.data.corpora import CoNLL2003, OntoNotes5

    rows = []
    for cls, sub, name in ((CoNLL2003, "conll2003", "CoNLL-2003"), (OntoNotes5, "ontonotes5", "OntoNotes 5")):
        if not (data_root() / sub).is_dir():
            rows.append((name, None))
            continue
        dm = cls(data_dir=str(data_root() / sub), normalize_digits=True)
        vocab = dm.vocabularies.words
        ids = {s: [vocab.lookup_indices(x.tokens) for x in dm.sentences(s)] for s in ("train", "dev", "test")}
        mem = KeyValueTokenMemory(len(vocab), 1, 1, max_slots=slots)
        mem.build({"train": ids["train"]})
        n_train = sum(len(x) for x in ids["train"])
        n_all = sum(len(x) for split in ids.values() for x in split)
        index = sum(v for k, v in mem.nbytes().items() if k not in ("keys", "values"))
        kv = lambda kd: mem.num_slots * (kd + 2 * HIDDEN) * 4  # noqa: E731  fp32 keys and values
        official = n_all * (100 + 2 * HIDDEN) * 4
        rows.append((name, dict(tokens=n_train, all_tokens=n_all, types=int((mem.word_count > 0).sum()),
                                slots=mem.num_slots, kv50=kv(WORD_DIM), kv100=kv(100), index=index,
                                total=kv(WORD_DIM) + index, official=official)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batches", type=int, default=20, help="real batches per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--slots", type=int, default=500, help="T, slots per word type")
    ap.add_argument("--no-footprint", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"# HCR training cost ({where}; fp32; batch 10; T = {args.slots}; torch {torch.__version__})\n")

    dm, batches, per_epoch, corpus = load(args.batches)
    lengths = [int(b.mask.sum(1).max()) for b in batches]
    res = measure(make_models(dm, device, args.slots), batches, args.rounds, args.warmup, device)
    base = res["base"]
    cuda = device.type == "cuda"
    print(f"## {corpus}: {len(batches)} bucketed batches (max length {min(lengths)}-{max(lengths)}), "
          f"{per_epoch} batches per epoch; median of {args.rounds} rounds\n")
    print("| variant | ms / step | time ratio | est. s / epoch | parameters | memory buffers MiB |"
          + (" peak CUDA MiB |" if cuda else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|" if cuda else ""))
    for key, r in res.items():
        extra = f" {r['peak']:.0f} |" if cuda else ""
        print(f"| {key} | {1e3 * r['time']:.1f} | {r['time'] / base['time']:.2f} | {r['time'] * per_epoch:.0f} "
              f"| {r['params']:,} | {r['buffers']:.1f} |{extra}")

    if not args.no_footprint:
        print(f"\n## Memory footprint (T = {args.slots}, values 2 x {HIDDEN} fp32, training tokens only)\n")
        print("| corpus | train tokens | word types | slots | keys+values MiB (50-d) | keys+values MiB (100-d) "
              "| index MiB | total MiB (50-d) | official layout MiB (all splits, 100-d, no cap) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        mib = 2 ** 20
        for name, r in footprint(args.slots):
            if r is None:
                print(f"| {name} | not found under {data_root()} | | | | | | | |")
                continue
            print(f"| {name} | {r['tokens']:,} | {r['types']:,} | {r['slots']:,} | {r['kv50'] / mib:.1f} "
                  f"| {r['kv100'] / mib:.1f} | {r['index'] / mib:.1f} | {r['total'] / mib:.1f} "
                  f"| {r['official'] / mib:.1f} |")
    print(f"\nmemory_ratio={res['document']['time'] / base['time']:.3f}")


if __name__ == "__main__":
    main()
