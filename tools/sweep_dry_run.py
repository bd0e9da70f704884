"""Check a W&B sweep file offline: sample trials as a ``wandb agent`` would and run their commands.

    python tools/sweep_dry_run.py configs/sweeps/<sweep>.yaml [--trials 2] [--seed 0] [--print] [--before-args ARG ...]

Only what the zoo's sweep files use is understood (``random``/``bayes``/``grid`` are all sampled at random
here): parameters with ``values``, ``value``, or ``distribution`` ``uniform``, ``log_uniform_values``,
``int_uniform``; ``command`` with ``${program}`` (``ner-zoo``, run as ``python -m ner_zoo.cli.main``),
``${args}`` (``--key=value``), ``${env}`` and ``${interpreter}``. Each trial runs with W&B offline and the
variables the agent sets (``WANDB_SWEEP_ID``, ``WANDB_RUN_ID``), so names and record folders are those a real
sweep gets. ``--before-args`` go just before ``${args}`` (a test passes a tiny model/data config there).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import yaml

REQUIRED = ("program", "method", "metric", "parameters", "command")


def load_sweep(path: Path) -> dict:
    sweep = yaml.safe_load(path.read_text())
    missing = [k for k in REQUIRED if k not in (sweep or {})]
    if missing:
        raise SystemExit(f"{path}: missing sweep key(s) {', '.join(missing)}")
    if "${args}" not in sweep["command"]:
        raise SystemExit(f"{path}: command has no ${{args}}: the sampled values would not reach the run")
    return sweep


def sample(spec: dict, rng: random.Random):
    if "value" in spec:
        return spec["value"]
    if "values" in spec:
        return rng.choice(spec["values"])
    kind, lo, hi = spec.get("distribution"), spec.get("min"), spec.get("max")
    if kind == "log_uniform_values":
        return math.exp(rng.uniform(math.log(lo), math.log(hi)))
    if kind == "uniform":
        return rng.uniform(lo, hi)
    if kind == "int_uniform":
        return rng.randint(lo, hi)
    raise SystemExit(f"parameter spec {spec} is not understood by this dry run")


def trial_command(sweep: dict, params: dict, before_args: list[str]) -> list[str]:
    program = [sys.executable, "-m", "ner_zoo.cli.main"] if sweep["program"] == "ner-zoo" else [sweep["program"]]
    cmd = []
    for part in sweep["command"]:
        if part == "${program}":
            cmd += program
        elif part == "${args}":
            cmd += before_args + [f"--{k}={v}" for k, v in params.items()]
        elif part == "${env}":
            cmd.append("/usr/bin/env")
        elif part == "${interpreter}":
            cmd.append(sys.executable)
        else:
            cmd.append(part)
    return cmd


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep", type=Path)
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--print", action="store_true", help="print the trial commands, run nothing")
    p.add_argument("--before-args", nargs=argparse.REMAINDER, default=[], help="arguments before ${args}")
    a = p.parse_args(argv)
    sweep, rng = load_sweep(a.sweep), random.Random(a.seed)
    print(f"metric: {sweep['metric']}, early_terminate: {sweep.get('early_terminate')}")
    for i in range(a.trials):
        params = {k: sample(v, rng) for k, v in sweep["parameters"].items()}
        run_id = "".join(rng.choices(string.ascii_lowercase + string.digits, k=8))
        cmd = trial_command(sweep, params, a.before_args)
        print(f"trial {i + 1} (run id {run_id}): {' '.join(cmd)}", flush=True)
        if a.print:
            continue
        env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SWEEP_ID": "dry-run", "WANDB_RUN_ID": run_id}
        code = subprocess.run(cmd, env=env).returncode
        if code:
            print(f"trial {i + 1} failed with exit code {code}", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
