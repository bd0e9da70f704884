"""Run a matrix of ``ner-zoo fit`` jobs in parallel (several seeds and models on one machine / GPU).

    python tools/run_matrix.py configs/experiments/<matrix>.yaml --out runs/matrix [--jobs 16] [--budget 540]

The matrix file lists runs: ``name``, ``configs`` (passed as repeated ``--config``), ``args`` (extra CLI
arguments), ``seeds`` and an optional per-run ``max_time``. Each run gets its own folder
``<out>/<name>-s<seed>/`` with ``results.json`` (see ``ner_zoo.training.records``), a CSV log and
``log.txt``. ``--budget`` (seconds) stops every run by wall clock (Lightning ``max_time``) so that the
whole matrix ends in time; the best checkpoint is then tested. Small models leave a GPU mostly idle, so
many runs share one card; each process uses one CPU thread.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml


def commands(matrix: list[dict], out: Path, budget: int | None, extra: list[str]) -> list[tuple[str, list[str]]]:
    jobs = []
    for run in matrix:
        for seed in run.get("seeds", [42]):
            name = f"{run['name']}-s{seed}"
            folder = out / name
            cmd = [sys.executable, "-m", "ner_zoo.cli.main", "fit"]
            for c in run["configs"]:
                cmd += ["--config", c]
            seconds = run.get("max_time") or budget
            cmd += ["--seed_everything", str(seed), "--test_after_fit", "true",
                    "--trainer.default_root_dir", str(folder),
                    "--trainer.logger", json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger",
                                                    "init_args": {"save_dir": str(folder), "name": "csv"}}),
                    "--trainer.enable_progress_bar", "false",
                    "--checkpoint.dirpath", str(folder / "checkpoints"),
                    "--record.path", str(folder / "results.json")]
            if run.get("variant"):
                cmd += ["--variant", run["variant"]]
            if seconds:
                cmd += ["--trainer.max_time", time.strftime("00:%H:%M:%S", time.gmtime(int(seconds)))]
            cmd += [str(a) for a in run.get("args", [])] + extra
            jobs.append((name, cmd))
    return jobs


def run_status(folder: Path) -> str:
    """``interrupted`` or ``failed``, as the run's ``results.json`` records it (``failed`` when there is none)."""
    for record in folder.rglob("results.json"):
        try:
            status = json.loads(record.read_text()).get("status")
        except (OSError, ValueError, AttributeError):
            continue
        if status in ("interrupted", "failed"):
            return status
    return "failed"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("matrix", type=Path)
    p.add_argument("--out", type=Path, default=Path("runs/matrix"))
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--budget", type=int, help="wall-clock seconds of training per run (Lightning max_time)")
    p.add_argument("--only", nargs="*", help="run only these run names")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="arguments appended to every run")
    a = p.parse_args()
    matrix = yaml.safe_load(a.matrix.read_text())
    if a.only:
        matrix = [r for r in matrix if r["name"] in a.only]
    jobs = commands(matrix, a.out, a.budget, a.extra)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    running: list[tuple[str, subprocess.Popen, float]] = []
    pending, failed = list(jobs), []
    start = time.time()
    while pending or running:
        while pending and len(running) < a.jobs:
            name, cmd = pending.pop(0)
            (a.out / name).mkdir(parents=True, exist_ok=True)
            log = open(a.out / name / "log.txt", "w")
            log.write(" ".join(cmd) + "\n")
            log.flush()
            running.append((name, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), time.time()))
        time.sleep(2)
        for item in list(running):
            name, proc, t0 = item
            if proc.poll() is not None:
                running.remove(item)
                status = "ok" if proc.returncode == 0 else f"{run_status(a.out / name).upper()} rc={proc.returncode}"
                if proc.returncode:
                    failed.append(name)
                print(f"[{time.time() - start:6.0f}s] {name}: {status} ({time.time() - t0:.0f}s)", flush=True)
    print(f"{len(jobs) - len(failed)}/{len(jobs)} runs ok" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
