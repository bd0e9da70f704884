"""The non-GEMM work of a training step, option by option (issue 46, item 2): SDPA attention against the eager
one, the fused optimiser against ``foreach`` and the plain loop, and ``torch.compile`` of the encoder, each A/B in
one process on the same batch, rounds interleaved (A B, B A, ...), with the outputs compared before any timing.

* ``attention`` (TransformerTagger): the Hugging Face encoder's ``attn_implementation`` switched in place between
  ``sdpa`` (what ``from_pretrained`` picks, the zoo's default) and ``eager`` (softmax(QK^T)V as three ops).
  Equal outputs: the loss and the gradient of one step (dropout seeded alike), from the same weights, within
  ``1e-4`` relative (the gradient as one vector: a parameter whose gradient is near zero has no relative error).
* ``optimiser`` (each model's config optimiser): ``fused=True`` (the zoo's default, ``training.optim.fused_if_unset``)
  against ``foreach=True`` and the per-parameter loop. Equal outputs: the weights after 3 steps from the same
  start, their difference within ``1e-4`` of the fused update's norm (float rounding of the update's arithmetic).
* ``compile`` (TransformerTagger): ``torch.compile`` of the Hugging Face model against it uncompiled (the first
  compiled step, the compilation, is reported apart). Equal outputs: the loss within ``1e-4`` relative.

The step is ``compute_loss`` + ``backward`` + the optimiser step on one batch of the config's own size (the first
of the bucketed loader, as ``roofline.py`` builds it). Prints the host line, then per option each round's ms per
step and the median ratio ``other / default`` (above 1: the default is faster).

    OMP_NUM_THREADS=1 python benchmarks/fused_ab.py [--options attention optimiser compile] [--models ...]
        [--steps 4] [--rounds 4] [--max-sentences 200]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from host import host_line

CONFIGS = {"transformer_tagger": "configs/transformer_tagger/conll2003.yaml",
           "bilstm_crf": "configs/baselines/conll2003.yaml"}


def build(name: str, args):
    from roofline import build as roofline_build

    ns = argparse.Namespace(device="cpu", max_sentences=args.max_sentences, batch_size=None)
    return roofline_build(CONFIGS[name], ns)


def step(model, opt, batch) -> float:
    model.train()
    opt.zero_grad(set_to_none=True)
    loss = model.compute_loss(batch)
    loss.backward()
    opt.step()
    return float(loss.detach())


def timed(fn, steps: int) -> float:
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t) / steps * 1e3


def interleave(variants: dict, steps: int, rounds: int) -> dict[str, list[float]]:
    """ms per step of each variant (a callable doing one step), rounds in alternating order."""
    names = list(variants)
    for name in names:  # warm-up
        variants[name]()
    ms = {n: [] for n in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            ms[name].append(timed(variants[name], steps))
    return ms


def report(title: str, ms: dict[str, list[float]], default: str, check: str) -> None:
    print(f"\n{title} (load {os.getloadavg()[0]:.2f}); outputs: {check}")
    base = statistics.median(ms[default])
    for name, values in ms.items():
        med = statistics.median(values)
        print(f"  {name:>12}: {' '.join(f'{v:.1f}' for v in values)} ms/step, median {med:.1f}, "
              f"{name}/{default} = {med / base:.3f}", flush=True)


def make_optimizer(opt, mode: str):
    """``opt``'s class, groups and settings (the same parameter objects: ``load_state_dict`` copies in place),
    with ``fused``, ``foreach`` or the per-parameter loop."""
    flags = {"fused": {"fused": True, "foreach": None}, "foreach": {"foreach": True, "fused": False},
             "loop": {"foreach": False, "fused": False}}[mode]
    groups = [dict({k: v for k, v in g.items() if k not in ("fused", "foreach")}, **flags) for g in opt.param_groups]
    return type(opt)(groups)


def option_optimiser(name: str, args) -> None:
    import torch

    model, opt, batch = build(name, args)
    start = copy.deepcopy(model.state_dict())
    ends = {}
    for mode in ("fused", "foreach", "loop"):
        model.load_state_dict(start)
        o = make_optimizer(opt, mode)
        torch.manual_seed(0)
        for _ in range(3):
            step(model, o, batch)
        ends[mode] = {k: v.detach().clone() for k, v in model.state_dict().items()}
    moved = {k: ends["fused"][k] - start[k] for k in start if start[k].is_floating_point()}
    norm = sum(float(d.pow(2).sum()) for d in moved.values()) ** 0.5
    rel = max(sum(float((ends[m][k] - ends["fused"][k]).pow(2).sum()) for k in moved) ** 0.5 / norm
              for m in ("foreach", "loop"))
    check = (f"|weights - fused weights| after 3 steps = {rel:.1e} of |the fused update| "
             f"({'equal to rounding' if rel <= 1e-4 else 'DIFFER'})")
    model.load_state_dict(start)
    opts = {mode: make_optimizer(opt, mode) for mode in ("fused", "foreach", "loop")}
    ms = interleave({m: (lambda o=o: step(model, o, batch)) for m, o in opts.items()}, args.steps, args.rounds)
    report(f"{name}: optimiser {type(opt).__name__}", ms, "fused", check)


def option_attention(args) -> None:
    import torch

    model, opt, batch = build("transformer_tagger", args)
    hf = model.encoder.model
    start = copy.deepcopy(model.state_dict())
    grads = {}
    for impl in ("sdpa", "eager"):
        model.load_state_dict(start)
        hf.set_attn_implementation(impl)
        model.train()
        model.zero_grad(set_to_none=True)
        torch.manual_seed(0)
        loss = model.compute_loss(batch)
        loss.backward()
        grads[impl] = (float(loss.detach()), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    sdpa, eager = grads["sdpa"][1], grads["eager"][1]
    rel = (sum(float((eager[n] - g).pow(2).sum()) for n, g in sdpa.items()) ** 0.5
           / sum(float(g.pow(2).sum()) for g in sdpa.values()) ** 0.5)
    dloss = abs(grads["eager"][0] - grads["sdpa"][0]) / abs(grads["sdpa"][0])
    check = (f"loss rel diff {dloss:.1e}, |eager grads - sdpa grads| = {rel:.1e} of |sdpa grads| "
             f"({'equal to rounding' if max(dloss, rel) <= 1e-4 else 'DIFFER'})")
    model.load_state_dict(start)

    def with_impl(impl):
        def run():
            hf.set_attn_implementation(impl)
            step(model, opt, batch)
        return run

    ms = interleave({"sdpa": with_impl("sdpa"), "eager": with_impl("eager")}, args.steps, args.rounds)
    hf.set_attn_implementation("sdpa")
    report("transformer_tagger: attention", ms, "sdpa", check)


def option_compile(args) -> None:
    import torch

    model, opt, batch = build("transformer_tagger", args)
    plain = model.encoder.model
    compiled = torch.compile(plain)
    model.eval()
    with torch.no_grad():
        torch.manual_seed(0)
        a = float(model.compute_loss(batch))
        model.encoder.model = compiled
        t = time.perf_counter()
        b = float(model.compute_loss(batch))
        first = time.perf_counter() - t
    rel = abs(a - b) / abs(a)
    t = time.perf_counter()
    step(model, opt, batch)  # the training graph's compilation
    first_train = time.perf_counter() - t
    check = f"eval loss rel diff {rel:.1e} ({'equal' if rel <= 1e-4 else 'DIFFER'}); compiling took " \
            f"{first:.1f} s (eval) + {first_train:.1f} s (first training step)"

    def with_encoder(enc):
        def run():
            model.encoder.model = enc
            step(model, opt, batch)
        return run

    ms = interleave({"eager": with_encoder(plain), "compiled": with_encoder(compiled)}, args.steps, args.rounds)
    model.encoder.model = plain
    report("transformer_tagger: torch.compile of the encoder", ms, "eager", check)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--options", nargs="+", default=["attention", "optimiser", "compile"],
                    choices=["attention", "optimiser", "compile"])
    ap.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS),
                    help="models for the optimiser option")
    ap.add_argument("--steps", type=int, default=4, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--max-sentences", type=int, default=200)
    args = ap.parse_args()
    import torch

    torch.manual_seed(0)
    print(host_line(), f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)", flush=True)
    if "attention" in args.options:
        option_attention(args)
    if "optimiser" in args.options:
        for name in args.models:
            option_optimiser(name, args)
    if "compile" in args.options:
        option_compile(args)


if __name__ == "__main__":
    main()
