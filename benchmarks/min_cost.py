"""Training cost of MIN (and its ablations) relative to its NER-module-only baseline, same batches, one process.

Models use the configs' sizes (word vectors 50d, char BiLSTM 25 -> 2 x 25, every BiLSTM 2 x 100, max segment
6, BIOES NER CRF, IO type CRF). "NER module only" is MIN with the boundary and type modules off (= BiLSTM-CRF
with the same inputs). One training step = forward, joint loss, backward, gradient clipping at 5, Adam.
All models run the same CoNLL-2003 training batches (batch 10, length-bucketed as in the configs; the
sample corpus when CoNLL-2003 is absent), with the sub-task targets made by the collator beforehand.
Models are interleaved per round; each time is the median over timed rounds after warm-up.

Memory, stated per column:
* ``activations MiB``: bytes of the distinct tensors autograd saves for backward during one step (through
  ``torch.autograd.graph.saved_tensors_hooks``; parameters excluded; the CRFs' forward-backward buffers,
  kept outside autograd, are not counted), the maximum over the batches. Exact and device-independent.
* ``params + Adam MiB``: parameters, their gradients and Adam's two moments (4 x parameter bytes).
* ``peak CUDA MiB`` (CUDA only): ``torch.cuda.max_memory_allocated`` over the batches of a model.

Prints markdown tables; the last line is ``min_ratio=<x>`` (MIN time / NER-module-only time).

Usage: ``python benchmarks/min_cost.py [--device cpu|cuda] [--batches 20] [--rounds 3] [--threads N]
[--variants ner_only min ...] [--bf16]``
"""

from __future__ import annotations

import torch
from harness import batches_heading, load_train_batches, make_parser, saved_activation_bytes, setup, time_models
from ner_zoo.data.batching import Batch
from ner_zoo.data.datamodule import Vocabularies
from ner_zoo.models.min import MIN, MINCollator, type_tag_names
from ner_zoo.modules import CharBiLSTM
from ner_zoo.modules.embeddings import Words

VARIANTS = {"ner_only": ("NER module only", dict(use_boundary=False, use_type=False)),
            "no_boundary": ("w/o boundary", dict(use_boundary=False)),
            "no_type": ("w/o type", dict(use_type=False)),
            "no_interaction": ("w/o interaction", dict(use_interaction=False)),
            "min": ("MIN", {})}


def char_encoder(n: int) -> CharBiLSTM:
    return CharBiLSTM(n, char_dim=25, hidden=25)


def make_models(vocabs: dict, device: torch.device, names: list[str]) -> dict:
    models = {}
    for key in names:
        torch.manual_seed(0)
        model = MIN(vocabs=vocabs, words=Words(dim=50), lstm_hidden=100, dropout=0.5, char_encoder=char_encoder,
                    **VARIANTS[key][1]).to(device).train()
        models[key] = (model, torch.optim.Adam(model.parameters(), lr=0.01))
    return models


def min_collator(dm) -> MINCollator:
    """The data module's collator plus MIN's sub-task targets (IO type tags, full pointer support)."""
    return MINCollator(Vocabularies.from_dict(dm.vocabs).collator(), type_tag_names(dm.labels, "io"), "io", None)


def measure(models: dict, batches: list[Batch], rounds: int, warmup: int, device: torch.device, amp) -> dict:
    """Per model: median step time, activations and parameter/optimizer MiB, parameters, CUDA peak."""
    batches = [b.to(device) for b in batches]
    timed = time_models(models, batches, rounds, warmup, device, amp, clip=5.0)
    out = {}
    for key, (model, _) in models.items():
        act = max(saved_activation_bytes(model, b, amp) for b in batches) / 2 ** 20
        n_params = sum(p.numel() for p in model.parameters())
        state = 4 * sum(p.numel() * p.element_size() for p in model.parameters()) / 2 ** 20
        out[key] = dict(time=timed[key][0], act=act, params=n_params, state=state, peak=timed[key][1])
    return out


def main() -> None:
    ap = make_parser(__doc__.split("\n\n")[0], batches=20, batches_help="real batches per round", rounds=3,
                     bf16_help="bf16 autocast (LSTMs and CRFs stay fp32)")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    device, amp, where = setup(args)
    names = ["ner_only"] + [v for v in args.variants if v != "ner_only"]
    print(f"# MIN training cost ({where}; {'bf16 autocast' if args.bf16 else 'fp32'}; batch 10; "
          f"torch {torch.__version__})\n")

    dm, batches, per_epoch, corpus = load_train_batches(args.batches, collate=min_collator)
    res = measure(make_models(dm.vocabs, device, names), batches, args.rounds, args.warmup, device, amp)
    base = res["ner_only"]
    cuda = device.type == "cuda"
    print(f"{batches_heading(corpus, batches, per_epoch)}; median of {args.rounds} rounds\n")
    print("| model | ms / step | time ratio | est. s / epoch | parameters | params + Adam MiB | activations MiB "
          "| activation ratio |" + (" peak CUDA MiB | peak ratio |" if cuda else ""))
    print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if cuda else ""))
    for key, r in res.items():
        extra = f" {r['peak']:.0f} | {r['peak'] / base['peak']:.2f} |" if cuda else ""
        print(f"| {VARIANTS[key][0]} | {1e3 * r['time']:.1f} | {r['time'] / base['time']:.2f} "
              f"| {r['time'] * per_epoch:.0f} | {r['params']:,} | {r['state']:.1f} | {r['act']:.1f} "
              f"| {r['act'] / base['act']:.2f} |{extra}")
    if "min" in res:
        print(f"\nmin_ratio={res['min']['time'] / base['time']:.3f}")


if __name__ == "__main__":
    main()
