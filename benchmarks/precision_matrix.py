"""Every paper config, a short fit in each precision, on one device: one call, one table (issue 27).

    python benchmarks/precision_matrix.py [--configs A.yaml B.yaml+overlay.yaml ...]
        [--precisions bf16-mixed 16-mixed 32-true] [--steps 30] [--accelerator gpu] [--out precision.md]

For each config x precision, a fresh process builds the run through the CLI (``ner-zoo fit`` with the config,
``--trainer.precision P``, one device) and trains ``--steps`` optimiser steps of the first epoch, no
validation. The table says: ``ok`` or the one-line refusal of a model that cannot train in that precision
(:mod:`ner_zoo.run.precision`) or the first line of an error; whether every training loss was
finite; steps per second after ``--warmup`` steps (the rates compare precisions of one config on one card,
measured in one call); the peak GPU memory allocated (CUDA) or the process's peak RSS (CPU). The device name
heads the table. Default configs: the paper configs of ``make bench`` (corpora under ``$NER_ZOO_DATA``).
``--extra`` arguments go to every fit (e.g. ``--data.init_args.max_sentences 200``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = [
    "configs/baselines/conll2003.yaml", "configs/psa/conll2003.yaml", "configs/hcr/conll2003.yaml",
    "configs/min/conll2003.yaml", "configs/transformer_tagger/conll2003.yaml", "configs/span_classifier/genia.yaml",
    "configs/locate_and_label/genia.yaml", "configs/biaffine_ner/genia.yaml", "configs/dspert/genia.yaml",
]
PRECISIONS = ["bf16-mixed", "16-mixed", "32-true"]


def fit_argv(config: str, precision: str, steps: int, accelerator: str, extra: list[str], root: str) -> list[str]:
    """The CLI arguments of one fit; ``--extra`` last, so it overrides the rest."""
    args = [x for c in config.split("+") for x in ("--config", c)]
    return args + ["--trainer.precision", precision, "--trainer.accelerator", accelerator, "--trainer.devices", "1",
                   "--trainer.max_steps", str(steps), "--trainer.max_epochs", "1", "--trainer.limit_val_batches",
                   "0", "--trainer.num_sanity_val_steps", "0", "--trainer.enable_progress_bar", "false",
                   "--trainer.logger", "false", "--test_after_fit", "false", "--checkpoint.monitor", "null",
                   "--trainer.default_root_dir", root, "--record.enabled", "false", *extra]


def one_command(config: str, precision: str, a: argparse.Namespace) -> list[str]:
    """The command line of one config x precision's process; ``--extra`` last (it takes the rest of the line)."""
    return [sys.executable, __file__, "--one", config, precision, "--steps", str(a.steps), "--warmup",
            str(a.warmup), "--accelerator", a.accelerator, "--extra", *a.extra]


def one(config: str, precision: str, steps: int, warmup: int, accelerator: str, extra: list[str]) -> dict:
    """Build and train one config in this process; the measurements as a dict."""
    import lightning.pytorch as pl
    import torch

    from ner_zoo.cli.lightning_cli import cli_in_process
    from ner_zoo.errors import NerZooError

    class Probe(pl.Callback):
        def __init__(self):
            self.losses, self.t0, self.t1 = [], None, None

        def _sync(self):
            if torch.cuda.is_available():
                torch.cuda.synchronize()

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if trainer.global_step == warmup:
                self._sync()
                self.t0 = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            loss = outputs["loss"] if isinstance(outputs, dict) else outputs
            self.losses.append(float(loss.detach().float()))
            self._sync()
            self.t1 = time.perf_counter()

    args = fit_argv(config, precision, steps, accelerator, extra, tempfile.mkdtemp(prefix="precision-"))
    row = {"config": config, "precision": precision}
    try:
        cli = cli_in_process(args, run=False)
    except NerZooError as e:
        return {**row, "status": f"refused: {e}"}
    if str(cli.trainer.precision) != precision:  # Lightning runs 16-mixed on a CPU as bf16-mixed
        return {**row, "status": f"ran as {cli.trainer.precision}: {precision} is not available on this device"}
    probe = Probe()
    cli.trainer.callbacks.append(probe)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    try:
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    except Exception as e:  # noqa: BLE001 - reported in the table
        return {**row, "status": f"error: {type(e).__name__}: {str(e).strip().splitlines()[0][:160]}"}
    timed = len(probe.losses) - warmup
    rate = timed / (probe.t1 - probe.t0) if probe.t0 and timed > 0 else None
    peak = (torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available()
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {**row, "status": "ok", "steps": len(probe.losses),
            "loss_finite": all(math.isfinite(x) for x in probe.losses), "last_loss": probe.losses[-1],
            "steps_per_s": rate, "peak_mib": peak, "memory": "GPU allocated" if torch.cuda.is_available() else "RSS"}


def device_name(accelerator: str) -> str:
    import torch

    if accelerator != "cpu" and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    return f"CPU {platform.processor() or platform.machine()} (torch {torch.__version__})"


def table(rows: list[dict], device: str) -> str:
    lines = [f"Device: {device}", "", __import__("host").host_line(), "",
             "| config | precision | status | loss finite | steps/s | peak MiB |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        rate = f"{r['steps_per_s']:.1f}" if r.get("steps_per_s") else ""
        peak = f"{r['peak_mib']:.0f} ({r['memory']})" if r.get("peak_mib") else ""
        finite = "" if "loss_finite" not in r else "yes" if r["loss_finite"] else "**no**"
        lines.append(f"| {r['config']} | {r['precision']} | {r['status']} | {finite} | {rate} | {peak} |")
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", nargs="+", default=PAPER_CONFIGS, help="configs; A.yaml+B.yaml stacks files")
    p.add_argument("--precisions", nargs="+", default=PRECISIONS)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--accelerator", default="gpu")
    p.add_argument("--out", type=Path, default=Path("precision_matrix.md"))
    p.add_argument("--timeout", type=int, default=900, help="seconds per fit")
    p.add_argument("--one", nargs=2, metavar=("CONFIG", "PRECISION"), help=argparse.SUPPRESS)
    p.add_argument("--dry-run", action="store_true", help="print each process's command line and fit arguments")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="arguments appended to every fit")
    return p


def main() -> int:
    a = parser().parse_args()
    if a.dry_run:  # what would run (tests/test_benchmarks.py)
        for config in a.configs:
            for precision in a.precisions:
                cmd = one_command(config, precision, a)
                w = parser().parse_args(cmd[2:])
                print(f"one: {json.dumps(cmd)}")
                print(f"fit: {json.dumps(fit_argv(*w.one, w.steps, w.accelerator, w.extra, 'ROOT'))}")
        return 0
    if a.one:
        print("RESULT " + json.dumps(one(*a.one, a.steps, min(a.warmup, a.steps - 1), a.accelerator, a.extra)))
        return 0
    print(__import__("host").host_line(), flush=True)  # benchmarks/host.py: which machine
    rows = []
    for config in a.configs:
        for precision in a.precisions:
            cmd = one_command(config, precision, a)
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, cwd=ROOT,
                                     env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
                found = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
                row = json.loads(found[-1][7:]) if found else {
                    "config": config, "precision": precision,
                    "status": "error: " + ((out.stderr.strip().splitlines() or ["no output"])[-1])[:160]}
            except subprocess.TimeoutExpired:
                row = {"config": config, "precision": precision, "status": f"error: over {a.timeout} s"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    text = table(rows, device_name(a.accelerator))
    a.out.write_text(text)
    a.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
