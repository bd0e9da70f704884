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

import torch
from harness import batches_heading, data_root, load_train_batches, make_parser, setup, time_models
from ner_zoo.data.batching import Batch
from ner_zoo.models.hcr import HCR
from ner_zoo.modules.embeddings import Words
from ner_zoo.modules.intnet import IntNet
from ner_zoo.modules.memory import KeyValueTokenMemory

VARIANTS = {"base": dict(sentence_level=False, document_level=False),
            "sentence": dict(sentence_level=True, document_level=False),
            "document": dict(sentence_level=False, document_level=True),
            "all": dict(sentence_level=True, document_level=True)}
WORD_DIM, HIDDEN = 50, 128


def make_models(dm, device: torch.device, slots: int) -> dict:
    models = {}
    train = dm.sentences("train")
    for key, flags in VARIANTS.items():
        torch.manual_seed(0)
        model = HCR(vocabs=dm.vocabs, words=Words(dim=WORD_DIM), lstm_hidden=HIDDEN, dropout=0.5, char_encoder=IntNet,
                    sentence_hidden=64, label_kernel=55, memory_slots=slots, loss_reduction="sum", **flags)
        model.prepare(train, {})  # label embeddings, memory index
        if model.memory is not None:  # steady state: every slot written once
            g = torch.Generator().manual_seed(1)
            with torch.no_grad():
                mem = model.memory
                mem.keys.copy_(model.tokens.words.embedding.weight[_slot_words(mem)])
                mem.values.copy_(torch.randn(mem.values.shape, generator=g) * 0.1)
                mem.written.fill_(True)
        model = model.to(device).train()
        models[key] = (model, torch.optim.SGD(model.parameters(), lr=0.015, weight_decay=1e-8))
    return models


def _slot_words(mem: KeyValueTokenMemory) -> torch.Tensor:
    """The word type owning each slot."""
    return torch.repeat_interleave(torch.arange(mem.num_words), mem.word_count.cpu())


def measure(models: dict, batches: list[Batch], rounds: int, warmup: int, device: torch.device) -> dict:
    """Per model: median step time, parameters, memory buffer MiB, CUDA peak."""
    timed = time_models(models, batches, rounds, warmup, device, sync_each_step=False)
    out = {}
    for key, (model, _) in models.items():
        mem = model.memory
        out[key] = dict(time=timed[key][0], params=sum(p.numel() for p in model.parameters()),
                        buffers=sum(mem.nbytes().values()) / 2 ** 20 if mem is not None else 0.0,
                        peak=timed[key][1])
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
    ap = make_parser(__doc__.split("\n\n")[0], batches=20, batches_help="real batches per round", rounds=3)
    ap.add_argument("--slots", type=int, default=500, help="T, slots per word type")
    ap.add_argument("--no-footprint", action="store_true")
    args = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    device, _, where = setup(args)
    print(f"# HCR training cost ({where}; fp32; batch 10; T = {args.slots}; torch {torch.__version__})\n")

    dm, batches, per_epoch, corpus = load_train_batches(args.batches, tag_scheme="bioes", normalize_digits=True)
    res = measure(make_models(dm, device, args.slots), batches, args.rounds, args.warmup, device)
    base = res["base"]
    cuda = device.type == "cuda"
    print(f"{batches_heading(corpus, batches, per_epoch)}; median of {args.rounds} rounds\n")
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
