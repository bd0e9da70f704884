"""The benchmark scripts' options reach the processes they are for (issue 46, item 1).

The drivers in ``benchmarks/`` start worker processes (``vs_hf.py``: the zoo's and the Trainer's training and
prediction; ``vs_reference.py``: the zoo's fit and the plain script; ``precision_matrix.py``: one fit per config x
precision). A driver option that never reaches its worker measures something other than what it says (``vs_hf.py
--zoo-args --trainer.precision bf16-mixed`` once measured fp32). Each test builds the worker's command line as the
driver does, parses it with the worker's own parser, and checks every option arrived, up to the arguments the
worker hands ``ner-zoo fit``; the ``process`` ones run the driver's ``--dry-run`` in a fresh process. No timing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _last(argv: list[str], flag: str) -> str:
    """The value the CLI sees for ``flag`` (the last occurrence wins in jsonargparse)."""
    return argv[len(argv) - 1 - argv[::-1].index(flag) + 1]


VS_HF_OPTIONS = ["--epochs", "2", "--max-steps", "7", "--batch-size", "8", "--encoder-lr", "3e-05",
                 "--head-lr", "0.002", "--device", "cpu", "--bf16", "--model", "MODEL", "--seed", "5",
                 "--predict-sentences", "11", "--dev-sentences", "13"]
ZOO_ARGS = ["--trainer.precision", "bf16-mixed", "--data.init_args.batch_tokens", "140"]


def test_vs_hf_worker_gets_every_option_and_the_zoo_args():
    vs_hf = _script("vs_hf")
    args = vs_hf.parser().parse_args([*VS_HF_OPTIONS, "--zoo-args", *ZOO_ARGS])
    args.work, args.data_dir = "WORK", "DATA"
    read = ["epochs", "max_steps", "batch_size", "encoder_lr", "head_lr", "device", "bf16", "model", "seed",
            "predict_sentences", "dev_sentences", "data_dir", "work"]
    for kind, extra in (("zoo-train", {}), ("peer-train", {}), ("zoo-predict", {"checkpoint": "CKPT"}),
                        ("peer-predict", {"model_dir": "DIR"})):
        cmd = vs_hf.worker_command(kind, args, **extra)
        worker = vs_hf.parser().parse_args(cmd[2:])
        assert worker.worker == kind
        assert {k: getattr(worker, k) for k in read} == {k: getattr(args, k) for k in read}, kind
        for key, value in extra.items():
            assert getattr(worker, key) == value
        assert worker.zoo_args == (ZOO_ARGS if kind == "zoo-train" else []), kind  # the bug: [] for zoo-train
    worker = vs_hf.parser().parse_args(vs_hf.worker_command("zoo-train", args)[2:])
    fit = vs_hf.zoo_fit_argv(worker, Path("ROOT"))
    assert fit[-len(ZOO_ARGS):] == ZOO_ARGS  # last: they override the recipe's own --trainer.precision 32-true
    assert _last(fit, "--trainer.precision") == "bf16-mixed"
    assert _last(fit, "--data.init_args.batch_size") == "8" and _last(fit, "--trainer.max_steps") == "7"
    assert _last(fit, "--model.init_args.pretrained_lr") == "3e-05"
    assert _last(fit, "--model.init_args.optimizer.init_args.lr") == "0.002"


def test_vs_hf_without_zoo_args_passes_none_and_keeps_the_recipe():
    vs_hf = _script("vs_hf")
    args = vs_hf.parser().parse_args(["--model", "MODEL"])
    args.work, args.data_dir = "WORK", "DATA"
    cmd = vs_hf.worker_command("zoo-train", args)
    assert "--zoo-args" not in cmd and "--bf16" not in cmd and "--max-steps" not in cmd
    fit = vs_hf.zoo_fit_argv(vs_hf.parser().parse_args(cmd[2:]), Path("ROOT"))
    assert _last(fit, "--trainer.precision") == "32-true" and _last(fit, "--trainer.max_steps") == "-1"


def test_vs_reference_zoo_worker_gets_the_config_and_the_zoo_args():
    vs_reference = _script("vs_reference")
    args = vs_reference.parser().parse_args(["--config", "configs/psa/conll2003.yaml", "--zoo-args", *ZOO_ARGS])
    cmd = vs_reference.zoo_command(args.config, Path("DATA"), Path("WORK"), args.zoo_args)
    worker = vs_reference.parser().parse_args(cmd[2:])
    assert worker.worker and worker.config == "configs/psa/conll2003.yaml" and worker.zoo_args == ZOO_ARGS
    assert (worker.data_dir, worker.work) == ("DATA", "WORK")
    fit = vs_reference.zoo_fit_argv(worker, Path("ROOT"))
    assert fit[-len(ZOO_ARGS):] == ZOO_ARGS and _last(fit, "--config") == "configs/psa/conll2003.yaml"


def test_precision_matrix_process_gets_its_options_and_the_extra_arguments():
    pm = _script("precision_matrix")
    a = pm.parser().parse_args(["--steps", "9", "--warmup", "2", "--accelerator", "cpu",
                                "--extra", "--data.init_args.max_sentences", "200"])
    cmd = pm.one_command("configs/baselines/conll2003.yaml", "bf16-mixed", a)
    w = pm.parser().parse_args(cmd[2:])
    assert (w.one, w.steps, w.warmup, w.accelerator, w.extra) == (
        ["configs/baselines/conll2003.yaml", "bf16-mixed"], 9, 2, "cpu", ["--data.init_args.max_sentences", "200"])
    fit = pm.fit_argv(*w.one, w.steps, w.accelerator, w.extra, "ROOT")
    assert fit[-2:] == ["--data.init_args.max_sentences", "200"]
    assert _last(fit, "--trainer.precision") == "bf16-mixed" and _last(fit, "--trainer.max_steps") == "9"


def _dry_run(script: str, *argv: str) -> list[str]:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *argv, "--dry-run"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def _line(lines: list[str], key: str) -> str:
    return next(x for x in lines if x.startswith(key + ": "))[len(key) + 2:]


@pytest.mark.process
def test_vs_hf_dry_run_shows_the_zoo_args_in_the_zoo_fit():
    """The command line as a user types it (``--dry-run`` before ``--zoo-args``, which takes the rest)."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "vs_hf.py"), "--model", "MODEL", "--threads",
                          "2", "--dry-run", "--zoo-args", *ZOO_ARGS], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert _line(lines, "threads") == "OMP_NUM_THREADS=2 MKL_NUM_THREADS=2"
    assert json.loads(_line(lines, "zoo-fit"))[-len(ZOO_ARGS):] == ZOO_ARGS
    assert "--zoo-args" not in json.loads(_line(lines, "peer-train"))


@pytest.mark.process
def test_vs_reference_dry_run_shows_the_zoo_args_and_threads():
    lines = _dry_run("vs_reference.py", "--threads", "2", "--steps", "30")
    assert _line(lines, "sentences") == "300"
    assert _line(lines, "threads") == "OMP_NUM_THREADS=2 MKL_NUM_THREADS=2"
    ref = json.loads(_line(lines, "reference"))
    assert ref[ref.index("--threads") + 1] == "2"


def test_dry_run_argument_order_is_free_before_zoo_args():
    """``--zoo-args`` takes the rest of the line: options after it are the zoo's, not the driver's."""
    vs_hf = _script("vs_hf")
    args = vs_hf.parser().parse_args(["--model", "M", "--zoo-args", "--trainer.precision", "bf16-mixed",
                                      "--dry-run"])
    assert not args.dry_run and args.zoo_args[-1] == "--dry-run"
    assert isinstance(vs_hf.parser(), argparse.ArgumentParser)


def test_roofline_counts_the_fused_lstm_layers_flops():
    """FlopCounterMode sees no FLOPs in oneDNN's LSTM; roofline.py's dispatch mode counts them: 2 x tokens x
    (|W_ih| + |W_hh|) per layer and direction forward, twice that backward."""
    torch = pytest.importorskip("torch")
    roofline = _script("roofline")
    lstm = torch.nn.LSTM(20, 16, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(3, 7, 20, requires_grad=True)
    with roofline.rnn_flops_mode() as rnn:
        out = lstm(x)[0]
    forward = sum(2 * 3 * 7 * 4 * 16 * (i + 16) * 2 for i in (20, 32))
    if rnn.flops == 0:
        pytest.skip("this build runs the LSTM without oneDNN's fused layer (FlopCounterMode counts its products)")
    assert rnn.flops == forward
    with roofline.rnn_flops_mode() as rnn:
        out.sum().backward()
    assert rnn.flops == 2 * forward
