"""Where a BiLSTM-CRF training step spends its time, each part beside its plain (pre-issue-19) form.

The model and batches are those of ``configs/baselines/conll2003.yaml`` (CoNLL-2003 train, batch 10, length
buckets; the sample corpus when CoNLL-2003 is absent). Each pair runs interleaved on the same batches in one
process, so the ratios hold on a busy machine even when the milliseconds do not:

* collation: ids built for every sentence of the batch (what each step did before; now the first epoch
  only) vs padding ids cached once per sentence;
* char BiLSTM, forward + backward: packed over every word of the batch vs unpacked over its distinct words;
* word BiLSTM, forward + backward: packed vs unpacked (each row reversed within its length for the
  backward direction);
* dropout (0.5 on the embeddings and on the BiLSTM output), forward + backward: ``nn.Dropout`` (CPU
  ``bernoulli_``) vs :class:`ner_zoo.modules.dropout.Dropout` (mask from ``rand``, same distribution);
* CRF NLL forward + backward, for reference;
* gradient clipping (norm 5): ``clip_grad_norm_`` over every gradient vs ``clip_grad_norm_rows`` reading only
  the word-embedding rows the batch looked up (the others are zero);
* SGD with momentum: the per-parameter loop vs the fused kernel;
* a whole step (forward, backward, clip, SGD) with the plain parts vs the fast ones;
* the reference script's step (``../shared/reference/bilstm_crf.py``, imported: its model, batching, CRF,
  clipping and SGD) on the same sentences with the same vocabulary sizes, beside the zoo's whole step.

Lightning's own per-step cost (hooks, logging, progress bar) is not in these rows: compare ``vs_reference.py``.

With ``--profile``, ``torch.profiler``'s top operators (self CPU time) of the zoo's whole step and of the
reference's step follow the table.

Usage: ``python benchmarks/step_breakdown.py [--batches 40] [--rounds 3] [--threads 1] [--reference PATH]
[--profile] [--top 15]``
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ner_zoo.modules.char_encoders as char_encoders  # noqa: E402
from ner_zoo.modules.dropout import Dropout  # noqa: E402
import ner_zoo.modules.rnn as rnn  # noqa: E402
from ner_zoo.training.optim import clip_grad_norm_rows, fused_if_unset  # noqa: E402
from throughput import baseline_model  # noqa: E402

UNPACKED = rnn.bilstm


def packed(lstm, x, lengths):
    """The plain path: pack, run, unpack."""
    out = lstm(pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False))[0]
    return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]


MODEL = None  # the model whose dropout plain_paths switches


def plain_paths(on: bool) -> None:
    """Packed LSTMs everywhere, the char BiLSTM over every word (no distinct-word pass) and ``nn.Dropout``,
    when ``on``."""
    rnn.bilstm = char_encoders.bilstm = packed if on else UNPACKED
    if MODEL is not None:
        MODEL.dropout.__class__ = torch.nn.Dropout if on else Dropout


def load_reference(path: Path, model, dm, groups):
    """A function running the reference script's training step on ``groups``: its own model (word vocabulary
    as large as the zoo's, the same char and tag ids), batching, CRF, clipping and plain SGD."""
    spec = importlib.util.spec_from_file_location("reference_bilstm_crf", path)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    vocabs = dm.vocabularies
    forms = sorted({t for g in groups for _, s in g for t in s.tokens})
    form_id = {w: i for i, w in enumerate(forms)}
    form_chars = torch.zeros(len(forms), max(map(len, forms)), dtype=torch.long)
    for w, i in form_id.items():
        form_chars[i, :len(w)] = torch.tensor([vocabs.chars.stoi.get(c, 1) for c in w])
    form_len = torch.tensor([len(w) for w in forms])
    collate = vocabs.collator()
    data = [(collate.sentence_ids(s)[0].tolist(), [form_id[t] for t in s.tokens], collate.sentence_ids(s)[3].tolist())
            for g in groups for _, s in g]
    net = ref.BiLSTMCRF(torch.randn(len(vocabs.words), model.tokens.words.output_dim), len(vocabs.chars),
                        form_chars, form_len, model.num_tags, hidden=model.lstm.lstm.hidden_size)
    opt = torch.optim.SGD(net.parameters(), lr=0.015, momentum=0.9)
    batches = [list(range(i, i + len(g))) for i, g in zip(range(0, len(data), 10), groups)]

    def step():
        for idx in batches:
            w, f, y, mask, lengths = ref.make_batch(idx, data)
            loss = net.loss(w, f, y, mask, lengths)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
            opt.step()
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference" / "bilstm_crf.py")
    ap.add_argument("--profile", action="store_true", help="torch.profiler's top operators of both steps")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    _, dm, corpus, model = baseline_model(a.threads)
    global MODEL
    MODEL = model
    loader = dm._loader(dm.sentences("train"), train=True)
    train = dm.sentences("train")
    groups = [[(i, train[i]) for i in batch] for batch in list(loader.sampler)[:a.batches]]  # whole batches
    warm = dm.vocabularies.collator()
    batches = [warm(g) for g in groups]
    chars = model.tokens.chars
    char_dropout = chars.dropout.p

    def collate_cold():
        fresh = dm.vocabularies.collator()
        for g in groups:
            fresh(g)

    def collate_warm():
        for g in groups:
            warm(g)

    def char_step(plain: bool):
        plain_paths(plain)
        chars.dropout.p = 1e-12 if plain else char_dropout  # > 0: every word encoded, as before
        for b in batches:
            chars(b.chars).sum().backward()
        chars.dropout.p = char_dropout
        plain_paths(False)

    x_cache = [torch.randn(*b.words.shape, model.tokens.output_dim) for b in batches]

    def word_step(plain: bool):
        plain_paths(plain)
        for b, x in zip(batches, x_cache):
            model.lstm(x, b.mask).sum().backward()
        plain_paths(False)

    drop_inputs = [(x.clone().requires_grad_(), torch.randn(*b.words.shape, model.lstm.output_dim,
                                                            requires_grad=True)) for b, x in zip(batches, x_cache)]

    def dropout_step(plain: bool):
        plain_paths(plain)
        for x, h in drop_inputs:
            (model.dropout(x).sum() + model.dropout(h).sum()).backward()
        plain_paths(False)

    emissions = [torch.randn(*b.words.shape, model.num_tags, requires_grad=True) for b in batches]

    def crf_step():
        for b, e in zip(batches, emissions):
            model.crf.nll(e, b.tags, b.mask, reduction="mean").backward()

    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    plain_sgd = torch.optim.SGD(params, lr=1e-9, momentum=0.9)
    fused_sgd = fused_if_unset(torch.optim.SGD(params, lr=1e-9, momentum=0.9))

    def sgd_step(opt):
        for _ in batches:
            opt.step()

    embedding = model.tokens.words.embedding.weight
    rows = [torch.unique(b.words) for b in batches]

    def clip_step(plain: bool):
        for r in rows:
            if plain:
                torch.nn.utils.clip_grad_norm_(params, 5.0)
            else:
                clip_grad_norm_rows(params, 5.0, {id(embedding): r})

    def clip(plain: bool):
        touched = model.tokens.words.touched_rows()
        if plain or touched is None:
            torch.nn.utils.clip_grad_norm_(params, 5.0)
        else:
            clip_grad_norm_rows(params, 5.0, {id(touched[0]): touched[1]})

    def whole_step(plain: bool):
        opt = plain_sgd if plain else fused_sgd
        for g, b in zip(groups, batches):
            if plain:
                b = dm.vocabularies.collator()(g)
            plain_paths(plain)
            chars.dropout.p = 1e-12 if plain else char_dropout
            loss = model.compute_loss(b)
            opt.zero_grad()
            loss.backward()
            clip(plain)
            opt.step()
        chars.dropout.p = char_dropout
        plain_paths(False)

    reference_step = load_reference(a.reference, model, dm, groups) if a.reference.exists() else None

    parts = [("collation", collate_cold, collate_warm),
             ("char BiLSTM fwd+bwd", lambda: char_step(True), lambda: char_step(False)),
             ("word BiLSTM fwd+bwd", lambda: word_step(True), lambda: word_step(False)),
             ("dropout x2 fwd+bwd", lambda: dropout_step(True), lambda: dropout_step(False)),
             ("CRF NLL fwd+bwd", None, crf_step),
             ("clip grad norm 5", lambda: clip_step(True), lambda: clip_step(False)),
             ("SGD momentum step", lambda: sgd_step(plain_sgd), lambda: sgd_step(fused_sgd)),
             ("whole step (no Lightning)", lambda: whole_step(True), lambda: whole_step(False))]
    if reference_step is not None:
        parts.append(("reference script's step vs the zoo's", reference_step, lambda: whole_step(False)))
    times: dict = {(name, k): [] for name, *_ in parts for k in (0, 1)}
    for _ in range(a.rounds):
        for name, plain_fn, fast_fn in parts:
            for k, fn in ((0, plain_fn), (1, fast_fn)):
                if fn is None:
                    continue
                t = time.perf_counter()
                fn()
                times[(name, k)].append((time.perf_counter() - t) / len(batches) * 1000)
    print(f"## One training step, part by part ({corpus}; {len(batches)} batches of 10, "
          f"{torch.get_num_threads()} thread(s), median of {a.rounds} interleaved rounds)\n")
    print("| part | plain (or reference) ms/step | now ms/step | speed-up |\n|---|---:|---:|---:|")
    for name, plain_fn, _ in parts:
        now = statistics.median(times[(name, 1)])
        if plain_fn is None:
            print(f"| {name} | | {now:.2f} | |")
            continue
        before = statistics.median(times[(name, 0)])
        print(f"| {name} | {before:.2f} | {now:.2f} | {before / now:.2f}x |")
    if a.profile:
        from harness import print_profile

        for name, fn in (("zoo whole step", lambda: whole_step(False)), ("reference step", reference_step)):
            if fn is not None:
                print_profile(f"{name}, {len(batches)} steps", fn, a.top)

if __name__ == "__main__":
    main()
