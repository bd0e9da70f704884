"""A SLURM job on one CPU machine, for the cluster tests: stand-in ``srun`` and ``scontrol`` on ``PATH`` and
the job's variables, and :class:`SignalAtStep`, a callback that sends this process the signals a cluster
sends (``NER_ZOO_TEST_SIGNALS="USR1@4,TERM@11"``: SIGUSR1 after global step 4, SIGTERM after step 11; each
once per job folder, so a resumed segment does not get it again).

* ``srun``: sets one task's variables (rank 0 of 1) and runs the command; with ``SRUN_RECORD=<file>`` it
  only writes its arguments and the job's node count there (the 2 x 8 rendering test).
* ``scontrol requeue <job>``: logs the call to ``$SCONTROL_LOG`` and ends the job as SLURM does, with
  SIGTERM to the process that asked.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from lightning.pytorch.callbacks import Callback

SRUN = """#!/bin/bash
if [[ -n "${SRUN_RECORD:-}" ]]; then
  { echo "nodes=$SLURM_NNODES"; printf '%s\\n' "$@"; } > "$SRUN_RECORD"; exit 0
fi
while [[ "$1" == --* ]]; do shift; done   # srun's own options
export SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NTASKS=1 SLURM_NTASKS_PER_NODE=1 SLURM_NODELIST=localhost
exec "$@"
"""
SCONTROL = """#!/bin/bash
echo "$@" >> "${SCONTROL_LOG:-/dev/null}"
kill -TERM $PPID
"""


def install(bin_dir: Path) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, text in (("srun", SRUN), ("scontrol", SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


class SignalAtStep(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        for item in filter(None, os.environ.get("NER_ZOO_TEST_SIGNALS", "").split(",")):
            name, step = item.split("@")
            done = Path(trainer.default_root_dir) / f".sent-{name}@{step}"
            if trainer.global_step == int(step) and not done.exists():
                done.touch()
                print(f"emulation: SIG{name} at step {step}", file=sys.stderr, flush=True)
                os.kill(os.getpid(), getattr(signal, f"SIG{name}"))
