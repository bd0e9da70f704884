"""Cost of PSA's two context fusion layers: training time per step vs the same-recipe BiLSTM-CRF.

Models (paper sizes, word vectors 50d as in our configs): char BiLSTM 30 -> 2 x 50, word BiLSTM 2 x 150,
CRF over BIOES tags; PSA adds fusion layer #1 (d = 150) and #2 (d = 300). The baseline is PSA with both
fusion layers off (identical to ``BiLSTMCRF``). One training step = forward, CRF NLL, backward, gradient
clipping at 5, SGD with momentum 0.9. All models run the same batches in the same process, taking turns
round by round; each cell is the median over the timed rounds (mean step time within a round) after warm-up.

Part 1 times CoNLL-2003 training batches (batch 10, length-bucketed as in the configs) when
``$NER_ZOO_DATA/conll2003`` exists, else the bundled sample corpus; it also estimates seconds per epoch.
Part 2 sweeps the sentence length (every sentence of the batch has length L) to show the O(L^2) growth
of the attention; on CUDA it also reports peak memory. Prints markdown tables; the last line is
``psa_ratio_real=<x>`` (PSA time / baseline time on part 1).

Usage: ``python benchmarks/psa_cost.py [--device cpu|cuda] [--lengths 10 20 40 80 160] [--rounds 5]
[--batches 30] [--threads N] [--bf16]``. On a shared 2-core CPU pass ``--threads 1``
(with more threads than free cores, the intra-op threads spin and every step gets many times slower).
"""

from __future__ import annotations

import torch
from harness import batches_heading, load_train_batches, make_parser, setup, time_models
from ner_zoo.data.batching import Batch
from ner_zoo.models.psa import PSA
from ner_zoo.modules import CharBiLSTM
from ner_zoo.modules.embeddings import Words

VARIANTS = {"BiLSTM-CRF": dict(fuse_input=False, fuse_output=False),
            "PSA fusion #1 only": dict(fuse_input=True, fuse_output=False),
            "PSA fusion #2 only": dict(fuse_input=False, fuse_output=True),
            "PSA (both)": dict(fuse_input=True, fuse_output=True)}


def char_encoder(n: int) -> CharBiLSTM:
    return CharBiLSTM(n, char_dim=30, hidden=50)


def make_models(vocabs: dict, device: torch.device, names: list[str]) -> dict:
    models = {}
    for name in names:
        torch.manual_seed(0)
        model = PSA(vocabs=vocabs, words=Words(dim=50), lstm_hidden=150, dropout=0.55, char_encoder=char_encoder,
                    **VARIANTS[name]).to(device).train()
        models[name] = (model, torch.optim.SGD(model.parameters(), lr=0.015, momentum=0.9))
    return models


def synthetic_batch(vocabs: dict, length: int, size: int, seed: int) -> Batch:
    """``size`` sentences of exactly ``length`` random words (chars 3-9 per word), all tags ``O``."""
    g = torch.Generator().manual_seed(seed)
    n_words, n_chars = len(vocabs["words"]["tokens"]) + 2, len(vocabs["chars"]["tokens"]) + 2
    words = torch.randint(2, n_words, (size, length), generator=g)
    char_len = torch.randint(3, 10, (size, length), generator=g)
    chars = torch.randint(2, n_chars, (size, length, 9), generator=g) * (torch.arange(9) < char_len[..., None])
    mask = torch.ones(size, length, dtype=torch.bool)
    tags = torch.full((size, length), vocabs["tags"].index("O"))
    return Batch([], torch.arange(size), words, chars, mask, tags)


def main() -> None:
    ap = make_parser(__doc__.split("\n\n")[0], batches=30, batches_help="real batches timed in part 1", rounds=5,
                     bf16_help="bf16 autocast (LSTMs and CRF stay fp32)")
    ap.add_argument("--lengths", type=int, nargs="+", default=[10, 20, 40, 80, 160])
    args = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    device, amp, where = setup(args)
    print(f"# PSA cost ({where}; {'bf16 autocast' if args.bf16 else 'fp32'}; batch 10; torch {torch.__version__})\n")

    dm, batches, per_epoch, corpus = load_train_batches(args.batches)
    vocabs = dm.vocabs
    models = make_models(vocabs, device, list(VARIANTS))
    res = time_models(models, batches, args.rounds, args.warmup, device, amp, clip=5.0)
    base = res["BiLSTM-CRF"][0]
    print(f"{batches_heading(corpus, batches, per_epoch)}\n")
    cuda = device.type == "cuda"
    print("| model | ms / step | ratio vs BiLSTM-CRF | est. s / epoch |" + (" peak MiB |" if cuda else ""))
    print("|---|---:|---:|---:|" + ("---:|" if cuda else ""))
    for name, (t, mem) in res.items():
        extra = f" {mem:.0f} |" if mem is not None else ""
        print(f"| {name} | {1e3 * t:.1f} | {t / base:.2f} | {t * per_epoch:.0f} |{extra}")

    print("\n## Sentence length sweep (every sentence of the batch has length L)\n")
    models = {n: models[n] for n in ("BiLSTM-CRF", "PSA (both)")}
    print("| L | BiLSTM-CRF ms | PSA ms | ratio | PSA extra ms | attention tensors MiB |"
          + (" peak MiB base | peak MiB PSA |" if cuda else ""))
    print("|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if cuda else ""))
    for i, length in enumerate(args.lengths):
        batch = synthetic_batch(vocabs, length, 10, seed=i)
        res_l = time_models(models, [batch], max(3, args.rounds), args.warmup, device, amp, clip=5.0)
        (tb, mb), (tp, mp) = res_l["BiLSTM-CRF"], res_l["PSA (both)"]
        # the two [B, L, L, d] tanh activations kept for backward (d = 150 and 300), fp32
        att = 10 * length * length * (150 + 300) * (2 if args.bf16 else 4) / 2 ** 20
        mem = f" {mb:.0f} | {mp:.0f} |" if cuda else ""
        print(f"| {length} | {1e3 * tb:.1f} | {1e3 * tp:.1f} | {tp / tb:.2f} | {1e3 * (tp - tb):.1f} "
              f"| {att:.1f} |{mem}")
    print(f"\npsa_ratio_real={res['PSA (both)'][0] / base:.3f}")


if __name__ == "__main__":
    main()
