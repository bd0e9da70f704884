"""Training cost of DSpERT relative to its shallow max-pool model (L~ = 0), and the batched span Transformer
against a naive per-span loop, same inputs, one process.

Model: a random BERT built offline (default hidden 128, 4 layers, 4 heads, FFN 512; ``--minilm`` uses the
offline MiniLM-L6 instead), DSpERT heads at the paper's sizes (BiLSTM 2 x 200, width 25, FFN 300),
boundary-smoothing loss. Batches: synthetic sentences whose words are one sub-word each (so the length is
in sub-words), batch 8, two gold entities per sentence. One training step = forward, loss, backward, clip
at 5, AdamW. Each time is the median over timed rounds after one warm-up round; models are interleaved.

Memory: ``activations MiB`` = bytes of the distinct non-parameter tensors autograd saves for backward in
one step (``torch.autograd.graph.saved_tensors_hooks``): exact and device-independent (tracemalloc does
not see torch's allocator). With ``checkpoint: true`` the span blocks' saved tensors are recomputed, and
this number is what checkpointing saves.

Prints markdown tables; the last line is ``dspert_ratio=<x>`` (time ratio at the largest setting).

Usage: ``OMP_NUM_THREADS=1 python benchmarks/dspert_cost.py [--threads 1] [--rounds 3] [--minilm]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ner_zoo.data.schema import Sentence, Span  # noqa: E402
from ner_zoo.models.dspert import DSpERT  # noqa: E402
from ner_zoo.modules.span_transformer import SpanTransformer  # noqa: E402
from ner_zoo.modules.transformer import TransformerEncoder  # noqa: E402
from ner_zoo.testing.tiny_bert import build_tiny_bert, sample_words  # noqa: E402


def bert_dir(tmp: Path, hidden: int, layers: int) -> Path:
    from transformers import BertConfig, BertModel

    path = build_tiny_bert(tmp / "bert")
    config = BertConfig.from_pretrained(path)
    config.update(dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                       intermediate_size=4 * hidden, max_position_embeddings=512))
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    return path


def vocabs() -> dict:
    from ner_zoo.data import SampleCorpus

    dm = SampleCorpus(max_sentences=8)
    dm.setup("fit")
    return dm.vocabs


def make_batch(model: DSpERT, length: int, bsz: int = 8) -> object:
    words = [w for w in sample_words() if w.isalpha() and len(w) > 3]
    label = model.vocabs.labels[0]
    sents = [Sentence([words[(7 * b + i) % len(words)] for i in range(length)],
                      [Span(1, 3, label), Span(length // 2, length // 2 + 1, label)]) for b in range(bsz)]
    return model.collate(list(enumerate(sents)))


def saved_bytes(model: DSpERT, batch) -> int:
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() not in params:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model.compute_loss(batch)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())


def step(model: DSpERT, opt, batch) -> None:
    opt.zero_grad(set_to_none=True)
    model.compute_loss(batch).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()


def timed(fn, rounds: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def model_costs(path: str, voc: dict, settings: list[tuple[int, int]], rounds: int) -> list[dict]:
    rows = []
    for K, length in settings:
        out = {"K": K, "length": length}
        for name, extra in (("shallow", dict(depth=0)), ("dspert", {}), ("dspert_ckpt", dict(checkpoint=True))):
            torch.manual_seed(0)
            encoder = TransformerEncoder(path, max_subwords_per_word=5, plm_dropout=0.2)  # DSpERT's defaults
            model = DSpERT(vocabs=voc, encoder=encoder, max_width=K, **extra).train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            batch = make_batch(model, length)
            out[name] = (timed(lambda: step(model, opt, batch), rounds), saved_bytes(model, batch) / 2 ** 20)
        rows.append(out)
    return rows


def batched_vs_loop(path: str, rounds: int) -> list[dict]:
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(path).eval()
    rows = []
    for K, length in ((4, 16), (8, 32)):
        torch.manual_seed(0)
        ids = torch.randint(5, bert.config.vocab_size, (2, length))
        with torch.no_grad():
            hidden = list(bert(input_ids=ids, output_hidden_states=True).hidden_states)
        sizes = list(range(2, K + 1))
        res = {"K": K, "length": length, "spans": sum(2 * (length - k + 1) for k in sizes)}
        for name, pack in (("per_size", False), ("packed", True)):
            span = SpanTransformer.from_pretrained(bert, pack=pack).eval()
            with torch.no_grad():
                res[name] = timed(lambda: span(hidden, sizes), rounds)
        with torch.no_grad():
            res["loop"] = timed(lambda: span.forward_per_span(hidden, sizes), 1)
        rows.append(res)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--minilm", action="store_true", help="the offline MiniLM-L6 instead of a random BERT")
    args = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        if args.minilm:
            from ner_zoo.modules.transformer import MINILM, resolve_model
            path, what = resolve_model(MINILM), "MiniLM-L6 (384-d, 6 layers)"
        else:
            path = str(bert_dir(Path(tmp), args.hidden, args.layers))
            what = f"random BERT ({args.hidden}-d, {args.layers} layers)"
        print(f"# DSpERT training cost (CPU, {args.threads} thread(s); {what}; batch 8; torch {torch.__version__})\n")
        settings = [(4, 16), (8, 16), (16, 16), (8, 32), (8, 64), (16, 64)]
        rows = model_costs(path, vocabs(), settings, args.rounds)
        print(f"Median of {args.rounds} rounds; shallow = same model with L~ = 0 (max-pooled span window).\n")
        print("| K | sub-words | shallow ms/step | DSpERT ms/step | time ratio | +ckpt ms/step | shallow act. MiB "
              "| DSpERT act. MiB | act. ratio | +ckpt act. MiB |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            (ts, ms), (td, md), (tc, mc) = r["shallow"], r["dspert"], r["dspert_ckpt"]
            print(f"| {r['K']} | {r['length']} | {1e3 * ts:.0f} | {1e3 * td:.0f} | {td / ts:.2f} | {1e3 * tc:.0f} "
                  f"| {ms:.1f} | {md:.1f} | {md / ms:.2f} | {mc:.1f} |")
        print("\n## Span Transformer forward (no grad, batch 2): batched vs naive per-span loop\n")
        print("| K | sub-words | spans | per-size ms | packed ms | per-span loop ms | loop / per-size |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for r in batched_vs_loop(path, args.rounds):
            print(f"| {r['K']} | {r['length']} | {r['spans']} | {1e3 * r['per_size']:.1f} | {1e3 * r['packed']:.1f} "
                  f"| {1e3 * r['loop']:.0f} | {r['loop'] / r['per_size']:.0f} |")
        last = rows[-1]
        print(f"\ndspert_ratio={last['dspert'][0] / last['shallow'][0]:.2f}")


if __name__ == "__main__":
    main()
