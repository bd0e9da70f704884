"""Lightning's per-step cost: ``Trainer.fit`` against a plain loop on the same model and loader, interleaved.

The model, data and trainer settings are those of ``configs/baselines/conll2003.yaml`` (clip 5, SGD with
momentum, fused as in a fit). Each round runs ``--steps`` training steps twice on the same model: once as
``Trainer.fit`` (progress bar on, no logger, no validation, no checkpoints) timed from the first batch's start
to the last batch's end, and once as a plain loop (``compute_loss``, ``backward``, clip, ``step``) over the
same training loader. The ratio ``fit ms / loop ms`` is Lightning's share on top of the model's own work.

Usage: ``python benchmarks/lightning_overhead.py [--steps 150] [--rounds 3] [--threads 1] [--profile FILE]``
(``--profile``: a cProfile of one more fit, written to FILE).
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import sys
import time
from pathlib import Path

import lightning.pytorch as pl
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ner_zoo.cli.lightning_cli import cli_in_process  # noqa: E402


class StepClock(pl.Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == 0:
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.end, self.steps = time.perf_counter(), batch_idx + 1


def fit_ms(model, dm, steps: int, progress: bool = True) -> float:
    clock = StepClock()
    trainer = pl.Trainer(max_epochs=1, limit_train_batches=steps + 1, limit_val_batches=0, logger=False,
                         enable_checkpointing=False, gradient_clip_val=5.0, callbacks=[clock],
                         enable_progress_bar=progress, enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(model, datamodule=dm)
    return (clock.end - clock.start) / (clock.steps - 1) * 1000  # the first batch's own time is excluded


def loop_ms(model, dm, steps: int) -> float:
    optimizer = model.configure_optimizers()
    optimizer = optimizer["optimizer"] if isinstance(optimizer, dict) else optimizer
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    start = None
    for i, batch in enumerate(dm.train_dataloader()):
        if i == 1:
            start = time.perf_counter()
        if i > steps:
            break
        loss = model.compute_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 5.0)
        optimizer.step()
    return (time.perf_counter() - start) / steps * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--config", default=str(ROOT / "configs" / "baselines" / "conll2003.yaml"))
    ap.add_argument("--profile", default=None)
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(a.threads)
    cli = cli_in_process(["--config", a.config, "--trainer.logger", "false"], run=False)
    model, dm = cli.model, cli.datamodule
    fits, loops = [], []
    for _ in range(a.rounds):
        fits.append(fit_ms(model, dm, a.steps))
        loops.append(loop_ms(model, dm, a.steps))
        print(f"# fit {fits[-1]:.2f} ms/step, plain loop {loops[-1]:.2f} ms/step", flush=True)
    if a.profile:
        cProfile.runctx("fit_ms(model, dm, a.steps)", globals(), locals(), a.profile)
    fit, loop = statistics.median(fits), statistics.median(loops)
    print(f"\n| | ms/step (median of {a.rounds}) |\n|---|---:|\n| Trainer.fit | {fit:.2f} |\n"
          f"| plain loop | {loop:.2f} |\n| fit / loop | {fit / loop:.3f} |")


if __name__ == "__main__":
    main()
