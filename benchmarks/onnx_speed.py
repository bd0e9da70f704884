"""ONNX against PyTorch prediction, one process, rounds interleaved (issue 46, item 4).

A checkpoint (default: the quickstart BiLSTM-CRF) is loaded with ``ner_zoo.load`` (PyTorch) and exported with
``--format onnx`` into a temporary folder, loaded again (onnxruntime + numpy). Both tag the same ``--sentences``
pre-tokenized sentences (the first of CoNLL-2003 ``eng.testb``, or the sample corpus repeated), batch
``--batch-size``, in rounds ``pytorch, onnx, onnx (per-sentence decode), ...``; the per-sentence variant is the old
decoding (``viterbi``/``marginals`` one sentence at a time) on the same session, to show what the batched decoding
buys. The outputs are checked equal (spans; scores within 1e-4) before anything is timed. ``--ort-threads`` sets
onnxruntime's intra-op threads (default: what ``ner_zoo.load`` gives, ``OMP_NUM_THREADS`` where set, else
onnxruntime's own, all physical cores); torch uses ``OMP_NUM_THREADS``.

    OMP_NUM_THREADS=1 python benchmarks/onnx_speed.py --model CKPT [--sentences 2000] [--rounds 5]
        [--batch-size 32] [--ort-threads 1] [--ort-opt all|extended|basic|disable]

Prints the host line, one line per run with the load average, and ``onnx_ratio=`` (PyTorch seconds / ONNX seconds,
medians: above 1, ONNX is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from host import host_line  # noqa: E402


def sentences(n: int) -> list[list[str]]:
    from ner_zoo.data.readers.conll import read_conll

    conll = Path(os.environ.get("NER_ZOO_DATA", ROOT.parent / "shared" / "data")) / "conll2003" / "eng.testb"
    if conll.is_file():
        rows = [list(s.tokens) for s in read_conll(conll) if len(s.tokens)]
    else:
        sample = ROOT / "ner_zoo" / "data" / "sample" / "test.conll"
        rows = [list(s.tokens) for s in read_conll(sample, token_column=0, label_column=-1) if len(s.tokens)]
    return [rows[i % len(rows)] for i in range(n)]


def per_sentence_decode(model):
    """The decoding before the batched one: ``viterbi``/``marginals`` per sentence (for the A/B only)."""
    import numpy as np

    from ner_zoo.api.onnx import marginals, viterbi
    from ner_zoo.data.tagging import tags_to_spans

    def decode(rows, left=None, right=None):
        out = []
        for row, em in zip(rows, model.emissions(rows, left, right)):
            em = em[: len(row)].astype(np.float64)
            ids = viterbi(em, *model.crf)
            probs = marginals(em, *model.crf)
            tags = [model.vocabs.tags[i] for i in ids]
            picked = probs[np.arange(len(ids)), ids]
            spans = tags_to_spans(tags)
            out.append((spans, [min(1.0, max(0.0, float(picked[s.start:s.end].mean()))) for s in spans]))
        return out

    return decode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a checkpoint or exported PyTorch folder")
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--ort-threads", type=int, default=None, help="onnxruntime intra-op threads (default: its own)")
    ap.add_argument("--ort-opt", choices=["all", "extended", "basic", "disable"], default=None)
    ap.add_argument("--no-old", action="store_true", help="leave out the per-sentence decoding run")
    args = ap.parse_args()
    import onnxruntime as ort
    import torch

    import ner_zoo
    from ner_zoo.api.export import export

    print(host_line(), flush=True)
    rows = sentences(args.sentences)
    with tempfile.TemporaryDirectory(prefix="onnx_speed-") as tmp:
        folder = export(args.model, Path(tmp) / "onnx", format="onnx")
        pt = ner_zoo.load(args.model, device="cpu", batch_size=args.batch_size)
        ox = ner_zoo.load(folder, batch_size=args.batch_size)
        if args.ort_threads is not None or args.ort_opt is not None:
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            if args.ort_threads is not None:
                opts.intra_op_num_threads = args.ort_threads
            if args.ort_opt is not None:
                opts.graph_optimization_level = {
                    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}[args.ort_opt]
            ox.model.session = ort.InferenceSession(str(Path(folder) / "model.onnx"), opts,
                                                    providers=["CPUExecutionProvider"])
        old = None
        if not args.no_old and ox.model.crf is not None:
            old = ner_zoo.load(folder, batch_size=args.batch_size)
            old.model.session = ox.model.session
            old.model.decode = per_sentence_decode(old.model)
        runners = {"pytorch": pt, "onnx": ox, **({"onnx per-sentence decode": old} if old else {})}

        def ents(res):
            return [[(e.start, e.end, e.label) for e in r] for r in res]

        want = pt(tokens=rows)
        for name, tagger in runners.items():  # equal outputs first
            got = tagger(tokens=rows)
            assert ents(got) == ents(want), f"{name}: other spans than PyTorch"
            worst = max((abs(a.score - b.score) for g, w in zip(got, want) for a, b in zip(g, w)), default=0.0)
            assert worst < 1e-4, f"{name}: scores {worst} from PyTorch's"
        print(f"# {len(rows)} sentences, {sum(map(len, rows))} tokens, batch {args.batch_size}, torch threads "
              f"{torch.get_num_threads()}, onnxruntime intra-op threads "
              f"{ox.model.session.get_session_options().intra_op_num_threads or 'default'}, graph optimisation "
              f"{args.ort_opt or 'default'}; outputs equal (spans; scores within 1e-4)", flush=True)
        times: dict[str, list[float]] = {k: [] for k in runners}
        for r in range(1, args.rounds + 1):
            for name, tagger in runners.items():
                load = os.getloadavg()[0]
                t = time.perf_counter()
                tagger(tokens=rows)
                times[name].append(time.perf_counter() - t)
                print(f"round {r} {name}: {times[name][-1]:.3f} s (load {load:.2f}-{os.getloadavg()[0]:.2f})",
                      flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("medians: " + ", ".join(f"{k} {v:.3f} s ({len(rows) / v:.0f} sent/s)" for k, v in med.items()))
    if old:
        print(f"old_onnx_ratio={med['pytorch'] / med['onnx per-sentence decode']:.2f}")
    print(f"onnx_ratio={med['pytorch'] / med['onnx']:.2f}")


if __name__ == "__main__":
    main()
