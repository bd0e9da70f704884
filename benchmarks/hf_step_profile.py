"""Where a TransformerTagger training step spends its time, beside the Hugging Face Trainer's step on the same
sentences (the peer of ``vs_hf.py``), in one process, interleaved.

Both: MiniLM-L6 (the offline package), softmax head on the first sub-word of each word, AdamW with two
parameter groups, gradient norm clipped at 1.0, the same batches of 32 CoNLL-2003 training sentences in the zoo's
first-epoch order (length buckets). Parts timed per step (median ms over the batches, each round):

* zoo: collation (``model.collate``), tokenisation + alignment (``TransformerEncoder._align``), forward (encoder +
  head + loss), backward, clipping, optimiser step (the zoo's fused AdamW), ``zero_grad``;
* peer: ``DataCollatorForTokenClassification`` on pre-tokenised features (the guide tokenises the whole set up
  front with ``datasets.map``), forward (model + loss), backward, clipping, optimiser step (``torch.optim.AdamW``
  as ``vs_hf.py`` hands it to the Trainer: no ``fused``/``foreach`` given), ``zero_grad``.

Also the sub-word positions each runs (padding included) and, with ``--profile``, the top operators of
``torch.profiler`` over a few steps of each. With ``--predict N``: prediction on the first N test sentences,
interleaved rounds in this process, the zoo's Python API (``Tagger(model)(tokens=...)``, as ``ner_zoo.load``
returns it) against ``pipeline("token-classification", aggregation_strategy="first")`` on the same weights
(untrained head: the speed does not depend on it), sentences per second.

Usage: ``python benchmarks/hf_step_profile.py [--batches 8] [--rounds 2] [--threads 1] [--profile] [--predict N]``
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import build_model, load_data  # noqa: E402

from ner_zoo.training.base import fused_if_unset  # noqa: E402


def zoo_setup(threads: int):
    torch.set_num_threads(threads)
    config = yaml.safe_load((ROOT / "configs" / "transformer_tagger" / "conll2003.yaml").read_text())
    config["data"]["init_args"]["tag_scheme"] = "iob2"
    model_cfg = copy.deepcopy(config["model"])
    model_cfg["init_args"]["use_crf"] = False
    model_cfg["init_args"]["encoder"]["init_args"]["casing_dim"] = 0
    dm, _ = load_data(config)
    dm.setup("fit")
    torch.manual_seed(0)
    model = build_model(model_cfg, dm.vocabs).train()
    return dm, model


def first_batches(dm, n: int, size: int = 32):
    loader = dm._loader(dm.sentences("train"), train=True, collate=lambda items: items)
    out = []
    for items in loader:
        out.append(items)
        if len(out) == n:
            break
    return out


def peer_setup(model_dir: str, num_labels: int, groups, scheme_tags):
    from transformers import AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification

    tok = AutoTokenizer.from_pretrained(model_dir)
    feats = []
    for items in groups:  # the guide's tokenize_and_align, one batched call per group (up front, as datasets.map)
        words = [list(s.tokens) for _, s in items]
        enc = tok(words, truncation=True, is_split_into_words=True)
        rows = []
        for i, (_, s) in enumerate(items):
            tags, previous, row = scheme_tags(s), None, []
            for w in enc.word_ids(batch_index=i):
                row.append(-100 if w is None or w == previous else tags[w])
                previous = w
            rows.append(row)
        feats.append([{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
                       "token_type_ids": enc["token_type_ids"][i], "labels": rows[i]} for i in range(len(items))])
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_pretrained(model_dir, num_labels=num_labels).train()
    head = [p for n, p in model.named_parameters() if n.startswith("classifier")]
    body = [p for n, p in model.named_parameters() if not n.startswith("classifier")]
    opt = torch.optim.AdamW([{"params": body, "lr": 2e-5}, {"params": head, "lr": 1e-3}], weight_decay=0.01)
    return model, opt, DataCollatorForTokenClassification(tok), feats


def timed_parts(parts: dict, name: str, fn):
    start = time.perf_counter()
    out = fn()
    parts.setdefault(name, []).append(1000 * (time.perf_counter() - start))
    return out


def zoo_step(model, opt, items, parts):
    batch = timed_parts(parts, "collate", lambda: model.collate(items))
    enc = model.encoder
    timed_parts(parts, "tokenise+align", lambda: enc._align([s.tokens for s in batch.sentences],
                                                            [[]] * len(batch), [[]] * len(batch)))
    loss = timed_parts(parts, "forward+loss", lambda: model.compute_loss(batch))
    timed_parts(parts, "backward", loss.backward)
    timed_parts(parts, "clip", lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    timed_parts(parts, "optimizer", opt.step)
    timed_parts(parts, "zero_grad", opt.zero_grad)


def peer_step(model, opt, collator, feats, parts):
    batch = timed_parts(parts, "collate", lambda: collator(feats))
    loss = timed_parts(parts, "forward+loss", lambda: model(**batch).loss)
    timed_parts(parts, "backward", loss.backward)
    timed_parts(parts, "clip", lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    timed_parts(parts, "optimizer", opt.step)
    timed_parts(parts, "zero_grad", opt.zero_grad)


def whole(parts: dict) -> list[float]:
    keys = [k for k in parts if k != "tokenise+align"]  # inside forward+loss for the zoo
    return [sum(parts[k][i] for k in keys) for i in range(len(parts["collate"]))]


def predict_rounds(model, peer, tokenizer, dm, a) -> None:
    from transformers import pipeline

    from ner_zoo.api.tagger import Tagger

    words = [list(s.tokens) for s in dm.sentences("test")[:a.predict]]
    itos = model.vocabs.tags.itos
    peer.config.id2label, peer.config.label2id = dict(enumerate(itos)), {t: i for i, t in enumerate(itos)}
    tagger = Tagger(model.eval(), batch_size=64)
    pipe = pipeline("token-classification", model=peer.eval(), tokenizer=tokenizer, aggregation_strategy="first")
    texts = [" ".join(w) for w in words]
    runs = {"zoo": lambda: tagger(tokens=words), "peer": lambda: pipe(texts, batch_size=64)}
    got: dict = {k: [] for k in runs}
    for _ in range(a.rounds):
        for k, fn in runs.items():
            start = time.perf_counter()
            fn()
            got[k].append(len(words) / (time.perf_counter() - start))
    zoo, pip = statistics.median(got["zoo"]), statistics.median(got["peer"])
    print(f"\nprediction, {len(words)} test sentences, {a.rounds} interleaved rounds, load average "
          f"{os.getloadavg()[0]:.2f}: zoo API {', '.join(f'{x:.1f}' for x in got['zoo'])} sentences/s, pipeline "
          f"{', '.join(f'{x:.1f}' for x in got['peer'])}; predict_ratio (medians) = {zoo / pip:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="torch.profiler's top operators of each")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--predict", type=int, default=0, help="also prediction on the first N test sentences")
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    dm, model = zoo_setup(a.threads)
    opt = fused_if_unset(torch.optim.AdamW(model.parameter_groups(), lr=1e-3, weight_decay=0.01))
    opt.param_groups[1]["lr"] = 2e-5
    groups = first_batches(dm, a.batches + 1)
    collate = dm.vocabularies.collator()
    stoi = model.vocabs.tags.stoi

    def scheme_tags(s):
        return collate(([(0, s)])).tags[0].tolist()

    peer, popt, pcollate, feats = peer_setup(model.encoder.model.name_or_path, len(stoi), groups, scheme_tags)
    model.collate(groups[0])  # ids of these sentences built (the zoo does it for all before the epoch)
    for g in groups:
        model.collate(g)
    zoo_pos = [model.encoder._align([s.tokens for _, s in g], [[]] * len(g), [[]] * len(g)).input_ids.numel()
               for g in groups[1:]]
    peer_pos = [pcollate(f)["input_ids"].numel() for f in feats[1:]]
    real = [sum(len(f["input_ids"]) for f in fs) for fs in feats[1:]]
    print(f"# {a.batches} batches of {len(groups[1])} (first-epoch order, after 1 warm-up), {a.threads} thread(s), "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"# sub-word positions per batch (padding included): zoo {statistics.mean(zoo_pos):.0f}, peer "
          f"{statistics.mean(peer_pos):.0f}; real {statistics.mean(real):.0f}")
    zoo_step(model, opt, groups[0], {})
    peer_step(peer, popt, pcollate, feats[0], {})
    for r in range(1, a.rounds + 1):
        zp, pp = {}, {}
        for g, f in zip(groups[1:], feats[1:]):
            zoo_step(model, opt, g, zp)
            peer_step(peer, popt, pcollate, f, pp)
        print(f"\nround {r} (median ms per step), load average {os.getloadavg()[0]:.2f}\n")
        print("| part | zoo | peer |\n|---|---:|---:|")
        for k in dict.fromkeys([*zp, *pp]):
            z = f"{statistics.median(zp[k]):.1f}" if k in zp else ""
            p = f"{statistics.median(pp[k]):.1f}" if k in pp else ""
            print(f"| {k} | {z} | {p} |")
        zw, pw = statistics.median(whole(zp)), statistics.median(whole(pp))
        print(f"| whole step | {zw:.1f} | {pw:.1f} |\n\nstep ratio (peer ms / zoo ms) = {pw / zw:.2f}")
    if a.predict:
        predict_rounds(model, peer, pcollate.tokenizer, dm, a)
    if a.profile:
        from harness import print_profile

        for name, fn in (("zoo", lambda: [zoo_step(model, opt, g, {}) for g in groups[1:4]]),
                         ("peer", lambda: [peer_step(peer, popt, pcollate, f, {}) for f in feats[1:4]])):
            print_profile(f"{name}, 3 steps", fn, a.top)


if __name__ == "__main__":
    main()
