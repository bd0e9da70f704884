"""Start-up cost of the commands that do not train, as ratios against ``python -c "import torch"``, measured in
one run with the commands interleaved (round-robin, ``--rounds`` times) so machine load hits all alike.

    python benchmarks/startup.py --model runs/quickstart/RUN/checkpoints/best.ckpt --rounds 7

Commands: ``ner-zoo score`` on the sample test split written as a prediction file (805 tokens), ``ner-zoo
predict`` on 3 raw-text sentences (to stdout), the same ``predict`` with the real Lightning
(``NER_ZOO_REAL_LIGHTNING=1``, what every command paid before issue 28), ``ner-zoo --help``, and the Python API:
``import ner_zoo; ner_zoo.load(MODEL)("...")`` on one sentence, the same with the real Lightning, and on the model
exported with ``--format onnx`` (onnxruntime, no torch; exported here first when onnxruntime is installed and the
model is a tagger; ``--onnx DIR`` names one). Reports the
median wall time and CPU time (user + system, of the child) per command and each median's ratio to the torch
import's. Goals (issue 28): score within 1.5x, predict within 2x. docs/benchmarks.md records runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one run; the command must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def export_onnx(model: str, folder: Path) -> str | None:
    """``model`` exported with ``--format onnx`` into ``folder``; None where that is not possible (say why)."""
    try:
        import onnxruntime  # noqa: F401

        from ner_zoo.api.export import export
        from ner_zoo.errors import CheckpointError

        return str(export(model, folder, format="onnx"))
    except (ImportError, CheckpointError) as e:
        print(f"no ONNX run: {e}", file=sys.stderr)
        return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="runs/quickstart/RUN/checkpoints/best.ckpt", help="a checkpoint or exported folder")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--onnx", help="a folder exported with --format onnx (default: export --model into a temporary one)")
    a = p.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    model = str(Path(a.model).resolve())
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, str(ROOT))
        from ner_zoo.data.readers import read_conll
        from ner_zoo.data.writers import write_conll

        sample = ROOT / "ner_zoo" / "data" / "sample" / "test.conll"
        sents = read_conll(sample, token_column=0, label_column=-1)
        write_conll(Path(tmp) / "pred.conll", sents, [s.spans for s in sents], with_gold=True)
        (Path(tmp) / "three.txt").write_text("Anna Berg visited Paris on Monday.\nShares of Globex rose in Florence.\n"
                                            "John Smith works for the World Bank in Washington.\n")
        cli = [py, "-m", "ner_zoo.cli.main"]
        commands = {
            "import torch": ([py, "-c", "import torch"], env),
            "ner-zoo score (805 tokens)": (cli + ["score", "pred.conll"], env),
            "ner-zoo predict (3 sentences)": (cli + ["predict", "--model", model, "--input", "three.txt", "--output",
                                                     "-", "--accelerator", "cpu"], env),
            "predict with Lightning imported": (cli + ["predict", "--model", model, "--input", "three.txt",
                                                       "--output", "-", "--accelerator", "cpu"],
                                                dict(env, NER_ZOO_REAL_LIGHTNING="1")),
            "ner-zoo --help": (cli + ["--help"], env),
        }
        api = "import sys, ner_zoo; ner_zoo.load(sys.argv[1], device='cpu')('Anna Berg visited Paris on Monday.')"
        commands["ner_zoo.load + 1 sentence (API)"] = ([py, "-c", api, model], env)
        commands["the same with Lightning imported"] = ([py, "-c", api, model], dict(env, NER_ZOO_REAL_LIGHTNING="1"))
        onnx = a.onnx or export_onnx(model, Path(tmp) / "onnx")
        if onnx:
            commands["ner_zoo.load + 1 sentence, ONNX folder"] = ([py, "-c", api, str(Path(onnx).resolve())], env)
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
        load_start = os.getloadavg()
        for _ in range(a.rounds):
            for name, (cmd, e) in commands.items():
                runs[name].append(timed(cmd, e, tmp))
    base_wall = statistics.median(w for w, _ in runs["import torch"])
    base_cpu = statistics.median(c for _, c in runs["import torch"])
    out = {"rounds": a.rounds, "load_average_start": load_start, "load_average": os.getloadavg(), "cpus": os.cpu_count(), "commands": {}}
    print(f"{'command':40} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6}")
    for name, vals in runs.items():
        wall, cpu = statistics.median(w for w, _ in vals), statistics.median(c for _, c in vals)
        out["commands"][name] = {"wall_median": round(wall, 3), "wall_ratio": round(wall / base_wall, 2),
                                 "cpu_median": round(cpu, 3), "cpu_ratio": round(cpu / base_cpu, 2),
                                 "walls": [round(w, 3) for w, _ in vals]}
        print(f"{name:40} {wall:7.2f} {wall / base_wall:6.2f} {cpu:7.2f} {cpu / base_cpu:6.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
