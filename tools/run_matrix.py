"""Run a matrix of ``ner-zoo fit`` jobs in parallel (several seeds and models on one machine / GPU).

    python tools/run_matrix.py configs/experiments/<matrix>.yaml --out runs/matrix [--jobs 16] [--budget 540]
        [--only name1,name2] [--seeds 1,2] [--dry-run]

The matrix file lists runs: ``name``, ``configs`` (passed as repeated ``--config``), ``args`` (extra CLI
arguments), ``seeds`` and an optional per-run ``max_time``. Each run gets its own folder
``<out>/<name>-s<seed>/`` with ``results.json`` (see ``ner_zoo.run.recorder``), a CSV log and
``log.txt``. ``--budget`` (seconds) stops every run by wall clock (Lightning ``max_time``) so that the
whole matrix ends in time; the best checkpoint is then tested. Small models leave a GPU mostly idle, so
many runs share one card; each process uses one CPU thread. ``--only`` and ``--seeds`` run part of a matrix
(one sitting of several; ``ner-zoo compare`` pairs records across sittings). With a GPU, the packing (runs
per card, peak memory and mean utilisation sampled with ``nvidia-smi``) is printed at the end and written
to ``<out>/packing.json``.

``--slurm`` runs the matrix on a SLURM cluster instead: it writes ``<out>/matrix-<content hash>.sbatch``, a job
array with one task (one run, ``--slurm-gpus`` GPUs) per command line written inside the script (run folder,
TAB, arguments), and submits it with ``sbatch`` (``--dry-run``: writes and prints the ``sbatch`` command only).
sbatch keeps the script as submitted, so rendering the matrix again (``--only``, other seeds) never changes
what a requeued task of an earlier array runs. Extra
``#SBATCH`` options (partition, account, time) go in ``--slurm-opt``. A requeued task resumes its run from
the newest checkpoint in its folder (``--ckpt_path last``), so a user reproduces a table on their cluster
with one command, e.g. ``python tools/run_matrix.py configs/experiments/repro_<...>.yaml --out runs/repro
--slurm --slurm-opt=--partition=gpu``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
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


def select(matrix: list[dict], only: list[str] | None, seeds: list[str] | None) -> list[dict]:
    """The runs named in ``only`` (comma- or space-separated), each with just the ``seeds`` it lists."""
    names = {n for item in only or [] for n in item.split(",") if n}
    wanted = {int(x) for item in seeds or [] for x in item.split(",") if x}
    unknown = names - {r["name"] for r in matrix}
    if unknown:
        raise SystemExit(f"--only: no run named {sorted(unknown)} in the matrix")
    out = []
    for run in matrix:
        if names and run["name"] not in names:
            continue
        kept = [s for s in run.get("seeds", [42]) if not wanted or s in wanted]
        if kept:
            out.append({**run, "seeds": kept})
    return out


def gpu_sample() -> list[tuple[float, float, float]] | None:
    """(memory used MiB, memory total MiB, utilisation %) per GPU from nvidia-smi; None without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total,utilization.gpu",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode:
        return None
    return [tuple(float(x) for x in line.split(",")) for line in out.stdout.strip().splitlines()]


class Packing:
    """Peak memory and mean utilisation of each GPU while the matrix runs, and the most runs at once."""

    def __init__(self):
        self.peak: list[float] = []
        self.total: list[float] = []
        self.util: list[list[float]] = []
        self.most_running = 0

    def sample(self, running: int) -> None:
        self.most_running = max(self.most_running, running)
        gpus = gpu_sample()
        for i, (used, total, util) in enumerate(gpus or []):
            if i == len(self.peak):
                self.peak.append(0.0), self.total.append(total), self.util.append([])
            self.peak[i] = max(self.peak[i], used)
            self.util[i].append(util)

    def report(self) -> dict:
        gpus = [{"gpu": i, "peak_memory_mib": self.peak[i], "memory_mib": self.total[i],
                 "mean_utilisation_pct": round(sum(u) / len(u), 1)} for i, u in enumerate(self.util) if u]
        return {"most_runs_at_once": self.most_running, "gpus": gpus}


ARRAY = """#!/bin/bash
# {n} runs of {matrix}, one per array task (tools/run_matrix.py --slurm); requeued tasks resume.
# The commands are in this script, which sbatch keeps from submission: a requeued task runs its own line.
#SBATCH --job-name={name}
#SBATCH --array=0-{last}{throttle}
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gpus-per-task={gpus}
#SBATCH --cpus-per-task=4
#SBATCH --mem=32G
#SBATCH --requeue
#SBATCH --signal=SIGUSR1@120
#SBATCH --output={out}/slurm-%A_%a.out
{extra}set -euo pipefail
IFS=$'\\t' read -r FOLDER ARGS < <(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" <<'COMMANDS'
{commands}COMMANDS
)
mkdir -p "$FOLDER"
eval "set -- $ARGS"
export NER_ZOO_DATA=${{NER_ZOO_DATA:-$PWD/data}} PYTHONFAULTHANDLER=1 OMP_NUM_THREADS=${{OMP_NUM_THREADS:-4}}
export NER_ZOO_MATRIX={matrix_id}
echo "== task $SLURM_ARRAY_TASK_ID of job ${{SLURM_ARRAY_JOB_ID:-}}, restart ${{SLURM_RESTART_COUNT:-0}}" >> "$FOLDER/log.txt"
srun ${{NER_ZOO_PYTHON:-python}} "$@" --ckpt_path last >> "$FOLDER/log.txt" 2>&1
"""


def matrix_id(matrix: Path) -> str:
    """``"<path> <sha256>"`` of the matrix file, which every run's record keeps per segment (``NER_ZOO_MATRIX``):
    ``ner-zoo compare`` then tells when the matrix changed while its runs ran."""
    return f"{matrix.as_posix()} {hashlib.sha256(matrix.read_bytes()).hexdigest()}"


def slurm_array(jobs: list[tuple[str, list[str]]], matrix: Path, out: Path, gpus: int, options: list[str],
                parallel: int | None) -> Path:
    """Write ``<out>/matrix-<hash>.sbatch``, a job array with one run per task and the commands inside it, named
    by its content: rendering another selection into the same folder writes another script and changes
    nothing a submitted array (or its requeued tasks) runs. Returns the script."""
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{out / name}\t{shlex.join(cmd[1:])}\n" for name, cmd in jobs)
    text = ARRAY.format(n=len(jobs), matrix=matrix, matrix_id=shlex.quote(matrix_id(matrix)), name=f"ner-zoo-{matrix.stem}", last=len(jobs) - 1,
                        throttle=f"%{parallel}" if parallel else "", gpus=gpus, out=out, commands=lines,
                        extra="".join(f"#SBATCH {o}\n" for o in options))
    script = out / f"matrix-{hashlib.sha256(text.encode()).hexdigest()[:12]}.sbatch"
    script.write_text(text)
    return script


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("matrix", type=Path)
    p.add_argument("--out", type=Path, default=Path("runs/matrix"))
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--budget", type=int, help="wall-clock seconds of training per run (Lightning max_time)")
    p.add_argument("--only", nargs="*", help="run only these run names (comma- or space-separated)")
    p.add_argument("--seeds", nargs="*", help="run only these seeds of each run (comma- or space-separated)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--slurm", action="store_true", help="submit the matrix as a SLURM job array (one run per task)")
    p.add_argument("--slurm-gpus", type=int, default=1, help="GPUs per array task (default 1)")
    p.add_argument("--slurm-opt", action="append", default=[], help="an extra #SBATCH option, e.g. --partition=gpu")
    p.add_argument("--slurm-parallel", type=int, help="at most this many array tasks at once")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="arguments appended to every run")
    a = p.parse_args()
    matrix = select(yaml.safe_load(a.matrix.read_text()), a.only, a.seeds)
    jobs = commands(matrix, a.out, a.budget, a.extra)
    if a.slurm:
        script = slurm_array(jobs, a.matrix, a.out, a.slurm_gpus, a.slurm_opt, a.slurm_parallel)
        print(f"sbatch {script}  # {len(jobs)} array tasks, one run each")
        return 0 if a.dry_run else subprocess.run(["sbatch", str(script)]).returncode
    if a.dry_run:
        print("\n".join(" ".join(cmd) for _, cmd in jobs))
        return 0
    packing = Packing()
    last_sample = 0.0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "NER_ZOO_MATRIX": matrix_id(a.matrix)}
    running: list[tuple[str, subprocess.Popen, float]] = []
    pending, failed = list(jobs), []
    start = time.time()
    while pending or running:
        while pending and len(running) < a.jobs:
            name, cmd = pending.pop(0)
            (a.out / name).mkdir(parents=True, exist_ok=True)
            log = open(a.out / name / "log.txt", "a")  # a rerun adds to the log, never replaces it
            log.write(" ".join(cmd) + "\n")
            log.flush()
            running.append((name, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), time.time()))
        time.sleep(2)
        if time.time() - last_sample > 30:
            packing.sample(len(running))
            last_sample = time.time()
        for item in list(running):
            name, proc, t0 = item
            if proc.poll() is not None:
                running.remove(item)
                status = "ok" if proc.returncode == 0 else f"{run_status(a.out / name).upper()} rc={proc.returncode}"
                if proc.returncode:
                    failed.append(name)
                print(f"[{time.time() - start:6.0f}s] {name}: {status} ({time.time() - t0:.0f}s)", flush=True)
    print(f"{len(jobs) - len(failed)}/{len(jobs)} runs ok" + (f"; failed: {failed}" if failed else ""))
    report = packing.report()
    for g in report["gpus"]:
        print(f"GPU {g['gpu']}: up to {report['most_runs_at_once']} runs at once, peak memory "
              f"{g['peak_memory_mib']:.0f} / {g['memory_mib']:.0f} MiB, mean utilisation {g['mean_utilisation_pct']}%")
    if report["gpus"]:
        (a.out / "packing.json").write_text(json.dumps(report, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
