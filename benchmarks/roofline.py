"""Each model's training step and prediction against the host's measured GEMM peak (issue 46, item 1).

Prints the host line (CPU model, ISA flags avx2 / avx512f / avx512_bf16 / AMX, or the GPU), then the GEMM peak:
``torch.matmul`` of ``[768, 384] x [384, 1536]`` (2 x 768 x 384 x 1536 = 0.91 GFLOP) in fp32 and in bf16, on one
thread and on all threads (the fastest of ``--gemm-reps``, after three warm-up calls). Then, for each model (the packaged configs: BiLSTM-CRF,
PSA, HCR, MIN, TransformerTagger on CoNLL-2003; the span classifier, Locate-and-Label, the biaffine model and
DSpERT on GENIA; ``--data.init_args.max_sentences`` keeps the corpus load short), one training batch of
``--batch-size`` sentences (the config's own batch size when not given) is timed:

* training step: ``compute_loss`` + ``backward`` + the config's optimiser step, the fastest of ``--reps`` after one
  warm-up, the same batch each time;
* prediction: ``model.decode`` in eval mode under ``torch.no_grad`` on the same batch.

FLOPs are counted on that batch with ``torch.utils.flop_counter.FlopCounterMode`` (matrix products,
convolutions, attention) plus the fused LSTM layers, which it does not see (:func:`rnn_flops_mode`: 2 x 4H(I + H)
per token, direction and layer forward, twice that backward, padded time steps included: the work the kernels
do). Element-wise work (layer norm, activations, dropout, the CRF's log-sum-exp, the optimiser) is not counted:
it is what keeps a step below the GEMM peak. Achieved FLOP/s = FLOPs /
fastest time; "of peak" is that over the GEMM peak in the precision used at the thread count used. ``--bf16``
runs both under ``torch.autocast(device, torch.bfloat16)`` and compares with the bf16 peak: judge its speed only
on a host whose line says ``avx512_bf16 yes`` or ``amx_tile yes`` (or a bf16 GPU); elsewhere bf16 is emulated.

    OMP_NUM_THREADS=1 python benchmarks/roofline.py [--models bilstm_crf psa ...] [--threads 1] [--reps 5]
        [--batch-size N] [--bf16] [--device cpu|cuda] [--max-sentences 200] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from host import host_line  # noqa: E402

CONFIGS = {
    "bilstm_crf": "configs/baselines/conll2003.yaml", "psa": "configs/psa/conll2003.yaml",
    "hcr": "configs/hcr/conll2003.yaml", "min": "configs/min/conll2003.yaml",
    "transformer_tagger": "configs/transformer_tagger/conll2003.yaml",
    "span_classifier": "configs/span_classifier/genia.yaml", "locate_and_label": "configs/locate_and_label/genia.yaml",
    "biaffine_ner": "configs/biaffine_ner/genia.yaml", "dspert": "configs/dspert/genia.yaml",
}
GEMM = (768, 384, 1536)


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def gemm_peak(dtype, threads: int, reps: int, device: str = "cpu") -> float:
    """FLOP/s of ``[768, 384] x [384, 1536]`` in ``dtype`` on ``threads`` threads: the fastest of ``reps`` after
    three warm-up calls (oneDNN builds its bf16 kernels on the first). The fastest, not the median, for the GEMM
    and for the models alike: on a shared host a median counts the time a process waited for a core, and the
    peak came out below the models' own rate (a "117 %" share at load 6)."""
    import torch

    torch.set_num_threads(threads)
    m, k, n = GEMM
    a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)
    for _ in range(3):
        torch.matmul(a, b)
    times = []
    for _ in range(reps):
        sync(device)
        t = time.perf_counter()
        torch.matmul(a, b)
        sync(device)
        times.append(time.perf_counter() - t)
    return 2 * m * k * n / min(times)


def rnn_flops_mode():
    """A dispatch mode counting the fused LSTM layers' FLOPs, which FlopCounterMode does not see (oneDNN's
    ``mkldnn_rnn_layer`` and its backward): 2 x tokens x (|W_ih| + |W_hh|) forward per layer and direction, twice
    that backward (padded time steps included: the work the kernel does)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    forward = {torch.ops.aten.mkldnn_rnn_layer.default}
    backward = {torch.ops.aten.mkldnn_rnn_layer_backward.default}

    class RnnFlops(TorchDispatchMode):
        flops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in forward or func in backward:
                x, w_ih, w_hh = args[0], args[1], args[2]
                tokens = x.numel() // x.shape[-1]
                self.flops += 2 * tokens * (w_ih.numel() + w_hh.numel()) * (2 if func in backward else 1)
            return func(*args, **(kwargs or {}))

    return RnnFlops()


def build(config: str, args):
    """Model, optimiser and one training batch of ``config`` (through the CLI, as ``ner-zoo fit`` builds them)."""
    from ner_zoo.cli.lightning_cli import cli_in_process

    os.environ.setdefault("NER_ZOO_DATA", str(ROOT.parent / "shared" / "data"))
    root = tempfile.mkdtemp(prefix="roofline-")
    argv = ["--config", config, "--trainer.accelerator", args.device, "--trainer.devices", "1",
            "--trainer.logger", "false", "--trainer.default_root_dir", root, "--record.enabled", "false",
            "--data.init_args.max_sentences", str(args.max_sentences)]
    argv += ["--data.init_args.batch_size", str(args.batch_size)] if args.batch_size else []
    cli = cli_in_process(argv, run=False)
    dm, model = cli.datamodule, cli.model
    dm.use_model(model)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    model = model.to(args.device)
    batch = batch.to(args.device) if hasattr(batch, "to") else batch
    model.trainer = cli.trainer  # configure_optimizers reads the trainer (a schedule's total steps)
    try:
        opt = model.configure_optimizers()
    except Exception:  # noqa: BLE001 - a schedule that needs a running fit: the config's optimiser alone
        from ner_zoo.training import optim

        opt = optim.optimizers_for(model, model.optimizer_factory, None)  # as fused as in a fit
    if isinstance(opt, dict):
        opt = opt["optimizer"]
    elif isinstance(opt, (list, tuple)):
        opt = opt[0][0] if isinstance(opt[0], (list, tuple)) else opt[0]
    return model, opt, batch


def measure(name: str, args) -> dict:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model, opt, batch = build(CONFIGS[name], args)
    autocast = (torch.autocast(args.device.split(":")[0], torch.bfloat16) if args.bf16
                else torch.autocast(args.device.split(":")[0], enabled=False))

    def train_step():
        model.train()
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = model.compute_loss(batch)
        loss.backward()
        opt.step()

    def predict():
        model.eval()
        with torch.no_grad(), autocast:
            model.decode(batch)

    out = {"model": name, "sentences": len(batch)}
    mask = getattr(batch, "mask", None)
    out["tokens"] = int(mask.sum()) if isinstance(mask, torch.Tensor) else None
    for what, fn in (("train", train_step), ("predict", predict)):
        with FlopCounterMode(display=False) as counter, rnn_flops_mode() as rnn:
            fn()
        flops = counter.get_total_flops() + rnn.flops
        times = []
        for _ in range(args.reps):
            sync(args.device)
            t = time.perf_counter()
            fn()
            sync(args.device)
            times.append(time.perf_counter() - t)
        sec = min(times)
        out[what] = {"ms": round(sec * 1e3, 1), "gflop": round(flops / 1e9, 3), "gflops": round(flops / sec / 1e9, 2),
                     "lstm_share": round(rnn.flops / flops, 2) if flops else 0.0}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1") or 1))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--gemm-reps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--max-sentences", type=int, default=200)
    ap.add_argument("--bf16", action="store_true", help="run the models under bf16 autocast (a host with bf16)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    import torch

    torch.manual_seed(0)
    print(host_line(), flush=True)
    every = os.cpu_count() or 1
    peaks = {}
    for dtype, label in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        for threads in sorted({1, every}):
            reps = args.gemm_reps if dtype == torch.float32 else max(3, args.gemm_reps // 4)
            peaks[label, threads] = gemm_peak(dtype, threads, reps, args.device)
            print(f"GEMM {GEMM[0]}x{GEMM[1]}x{GEMM[2]} {label}, {threads} thread(s): "
                  f"{peaks[label, threads] / 1e9:.1f} GFLOP/s (load {os.getloadavg()[0]:.2f})", flush=True)
    torch.set_num_threads(args.threads)
    precision = "bf16" if args.bf16 else "fp32"
    peak = peaks.get((precision, args.threads)) or gemm_peak(torch.bfloat16 if args.bf16 else torch.float32,
                                                             args.threads, args.gemm_reps, args.device)
    torch.set_num_threads(args.threads)
    print(f"\n{precision} peak at {args.threads} thread(s): {peak / 1e9:.1f} GFLOP/s\n")
    print("| model | batch (sentences, tokens) | precision | train step ms | GFLOP | GFLOP/s | of peak | "
          "predict ms | GFLOP | GFLOP/s | of peak | LSTM share (train) | load |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in args.models:
        load0 = os.getloadavg()[0]
        try:
            r = measure(name, args)
        except Exception as e:  # noqa: BLE001 - one row says why
            print(f"| {name} | error: {type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''} "
                  f"|||||||||||| ", flush=True)
            continue
        t, p = r["train"], r["predict"]
        print(f"| {name} | {r['sentences']}, {r['tokens']} | {precision} | {t['ms']} | {t['gflop']} | {t['gflops']} | "
              f"{100 * t['gflops'] * 1e9 / peak:.1f} % | {p['ms']} | {p['gflop']} | {p['gflops']} | "
              f"{100 * p['gflops'] * 1e9 / peak:.1f} % | {t['lstm_share']:.2f} | "
              f"{load0:.1f}-{os.getloadavg()[0]:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
