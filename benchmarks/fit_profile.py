"""Where a real zoo fit's training steps go: ``torch.profiler`` over steps A..B of ``ner-zoo fit``, as op counts
and self CPU times per step.

The fit is ``--config`` (default the CoNLL-2003 BiLSTM-CRF baseline) on ``$NER_ZOO_DATA/conll2003`` (or
``--data-dir``), one epoch, no validation, no logger, no progress bar; the profiler runs from the start of batch
``--start`` to the end of batch ``--stop - 1``, then the fit stops. Op counts per step do not depend on the
machine's load, so they compare two commits on a busy host; the milliseconds and shares do, and come with the
load average. ``--cprofile FILE`` writes a cProfile of the same steps instead (the Python side).

Usage: ``python benchmarks/fit_profile.py [--start 50] [--stop 150] [--rows 60] [--threads 1] [--cprofile FILE]
[-- extra ner-zoo fit arguments]``
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lightning.pytorch.callbacks import Callback  # noqa: E402

from ner_zoo.cli.lightning_cli import NERZooCLI, cli_in_process  # noqa: E402


class StepProfile(Callback):
    def __init__(self, start: int, stop: int, rows: int, cprofile: str | None):
        self.start, self.stop, self.rows, self.cprofile = start, stop, rows, cprofile
        self.profiler = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == self.start:
            self.profiler = (cProfile.Profile() if self.cprofile else
                             torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]))
            self.t0 = time.perf_counter()
            self.profiler.enable() if self.cprofile else self.profiler.__enter__()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx != self.stop - 1 or self.profiler is None:
            return
        n, wall = self.stop - self.start, time.perf_counter() - self.t0
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        if self.cprofile:
            self.profiler.disable()
            self.profiler.dump_stats(self.cprofile)
            print(f"# {n} steps, {1000 * wall / n:.2f} ms per step under cProfile, load {load}; wrote {self.cprofile}")
        else:
            self.profiler.__exit__(None, None, None)
            events = self.profiler.key_averages()
            total = sum(e.self_cpu_time_total for e in events)
            calls = sum(e.count for e in events)
            print(f"# {n} steps: {1000 * wall / n:.2f} ms per step under the profiler, {calls / n:.1f} op calls per "
                  f"step, load average {load}\n\n| op | calls / step | self ms / step | share |\n|---|---:|---:|---:|")
            for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[: self.rows]:
                print(f"| `{e.key[:70]}` | {e.count / n:.1f} | {e.self_cpu_time_total / 1000 / n:.3f} | "
                      f"{100 * e.self_cpu_time_total / total:.1f} % |")
        trainer.should_stop = True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--start", type=int, default=50)
    ap.add_argument("--stop", type=int, default=150)
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--config", default="configs/baselines/conll2003.yaml")
    ap.add_argument("--data-dir", default=str(Path(os.environ.get("NER_ZOO_DATA", ROOT.parent / "shared" / "data"))
                                              / "conll2003"))
    ap.add_argument("--cprofile", default=None)
    ap.add_argument("extra", nargs="*", help="after --: more ner-zoo fit arguments")
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(a.threads)
    callback = StepProfile(a.start, a.stop, a.rows, a.cprofile)

    class CLI(NERZooCLI):
        def before_fit(self) -> None:
            self.trainer.callbacks.append(callback)

    with tempfile.TemporaryDirectory(prefix="fit_profile-") as root:
        cli_in_process(["fit", "--config", a.config, "--trainer.max_epochs", "1", "--test_after_fit", "false",
                        "--data.init_args.data_dir", a.data_dir, "--trainer.default_root_dir", root,
                        "--trainer.logger", "false", "--trainer.limit_val_batches", "0",
                        "--trainer.enable_progress_bar", "false", "--record.path", f"{root}/results.json", *a.extra],
                       cli_class=CLI)


if __name__ == "__main__":
    main()
