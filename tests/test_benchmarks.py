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
import os
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


def _last(argv: list[str], flag: str) -> str | None:
    """The value the CLI sees for ``flag`` (the last occurrence wins in jsonargparse); None where it is not given."""
    return argv[len(argv) - 1 - argv[::-1].index(flag) + 1] if flag in argv else None


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
    assert _last(fit, "--trainer.precision") is None and _last(fit, "--trainer.max_steps") == "-1"


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
    for setting in ("default", "best"):  # both settings by default; --zoo-args last in each
        assert json.loads(_line(lines, f"zoo-fit[{setting}]"))[-len(ZOO_ARGS):] == ZOO_ARGS
        assert "--zoo-args" not in json.loads(_line(lines, f"peer-train[{setting}]"))
    assert "--torch-compile" in json.loads(_line(lines, "peer-train[best]"))
    assert "--torch-compile" not in json.loads(_line(lines, "peer-train[default]"))


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


# ---------------------------------------------------------------- vs_hf settings: default and best (issue 46 item 3)


def _vs_hf_workers(monkeypatch, native: bool, *argv: str):
    """The driver's args on a host whose bf16 is (not) native, and per setting the workers' parsed arguments."""
    import ner_zoo.hardware

    monkeypatch.setattr(ner_zoo.hardware, "native_bf16", lambda device="cpu", flags=None: native)
    vs_hf = _script("vs_hf")
    args = vs_hf.parser().parse_args(["--model", "MODEL", *argv])
    args.work, args.data_dir = "WORK", "DATA"
    workers = {}
    for setting in args.settings:
        for kind, extra in (("zoo-train", {}), ("peer-train", {}), ("zoo-predict", {"checkpoint": "CKPT"}),
                            ("peer-predict", {"model_dir": "DIR"})):
            workers[setting, kind] = vs_hf.parser().parse_args(vs_hf.worker_command(kind, args, setting, **extra)[2:])
    return vs_hf, args, workers


def test_vs_hf_best_on_a_native_bf16_host_reaches_every_worker(monkeypatch):
    """Best where bf16 is native: the Trainer gets ``bf16=True`` and ``torch_compile=True``, the pipeline
    ``dtype=bfloat16`` and a compiled model, the zoo ``bf16-mixed`` and bf16 prediction; default keeps none."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import inspect

    vs_hf, args, w = _vs_hf_workers(monkeypatch, True)
    assert args.settings == ["default", "best"]
    names = inspect.signature(transformers.TrainingArguments).parameters
    for setting, on in (("default", False), ("best", True)):
        peer = w[setting, "peer-train"]
        assert peer.setting == setting and (peer.bf16, peer.torch_compile) == (on, on)
        kwargs = vs_hf.peer_training_kwargs(peer, Path("OUT"))
        assert set(kwargs) <= set(names)  # every one a TrainingArguments option of the installed version
        assert (kwargs["bf16"], kwargs["torch_compile"]) == (on, on)
        assert kwargs["max_grad_norm"] == 1.0 and kwargs["per_device_train_batch_size"] == 32  # the recipe stays
        fit = vs_hf.zoo_fit_argv(w[setting, "zoo-train"], Path("ROOT"))
        assert _last(fit, "--trainer.precision") == ("bf16-mixed" if on else None)  # default: the host's own
        assert not any("CompileModules" in a for a in fit)  # bf16 alone is the zoo's faster where native
        assert w[setting, "zoo-predict"].zoo_precision == ("bf16" if on else "auto")
        assert w[setting, "zoo-train"].zoo_precision == w[setting, "zoo-predict"].zoo_precision  # dev F1 alike
        pp = w[setting, "peer-predict"]
        assert vs_hf.pipeline_kwargs(pp) == ({"dtype": torch.bfloat16} if on else {})

        class Pipe:  # what best_pipeline touches of a pipeline: its model
            model = torch.nn.Linear(2, 2)

        compiled = vs_hf.best_pipeline(Pipe(), pp).model
        assert isinstance(compiled, torch._dynamo.eval_frame.OptimizedModule) is on


def test_vs_hf_best_without_native_bf16_skips_it_and_compiles_the_zoo(monkeypatch):
    vs_hf, args, w = _vs_hf_workers(monkeypatch, False, "--settings", "best")
    assert args.settings == ["best"] and "bf16 skipped" in vs_hf.setting_options("best", args)["note"]
    peer = w["best", "peer-train"]
    assert (peer.bf16, peer.torch_compile) == (False, True)
    kwargs = vs_hf.peer_training_kwargs(peer, Path("OUT"))
    assert (kwargs["bf16"], kwargs["torch_compile"]) == (False, True)
    fit = vs_hf.zoo_fit_argv(w["best", "zoo-train"], Path("ROOT"))
    assert _last(fit, "--trainer.precision") is None  # the host's default: fp32 where bf16 is not native
    callback = json.loads(next(a for a in fit if a.startswith("--trainer.callbacks+=")).partition("=")[2])
    assert callback == {"class_path": "ner_zoo.training.CompileModules", "init_args": {"modules": ["encoder.model"]}}
    assert w["best", "zoo-predict"].zoo_precision == "auto"  # ner_zoo.hardware.default_precision decides


def test_vs_hf_emulated_bf16_is_measured_only_when_asked_and_labelled(monkeypatch):
    vs_hf, args, w = _vs_hf_workers(monkeypatch, False, "--settings", "best", "--emulated-bf16")
    assert "EMULATED" in vs_hf.setting_options("best", args)["note"]
    assert w["best", "peer-train"].bf16 and w["best", "peer-predict"].bf16
    assert _last(vs_hf.zoo_fit_argv(w["best", "zoo-train"], Path("ROOT")), "--trainer.precision") == "bf16-mixed"


def test_vs_hf_zoo_best_args_come_before_the_zoo_args(monkeypatch):
    vs_hf, args, w = _vs_hf_workers(monkeypatch, False, "--zoo-best-args", "--data.init_args.batch_tokens 500",
                                    "--zoo-args", *ZOO_ARGS)
    best = w["best", "zoo-train"].zoo_args
    assert best == ["--data.init_args.batch_tokens", "500", *ZOO_ARGS]  # the user's --zoo-args last: they win
    assert w["default", "zoo-train"].zoo_args == ZOO_ARGS  # best's arguments stay out of default
    fit = vs_hf.zoo_fit_argv(w["best", "zoo-train"], Path("ROOT"))
    assert _last(fit, "--data.init_args.batch_tokens") == "140"


def test_vs_hf_step_timing_leaves_compilations_out_of_steady():
    vs_hf = _script("vs_hf")
    ends, t = [], 0.0
    for step_s in [120.0, 1.0, 1.0, 90.0, 1.0, 1.0, 1.0]:  # a compile, then a recompile at a new shape
        t += step_s
        ends.append(t)
    got = vs_hf.step_timing(0.0, ends)
    assert got["steps"] == 7 and got["train_s"] == 215.0 and got["steps_per_s"] == round(7 / 215, 3)
    assert got["steady_steps_per_s"] == 1.0 and got["compile_steps"] == 2 and got["compile_s"] == 210.0
    assert vs_hf.predict_timing(10, 2.0, 1.0) == {"sentences": 10, "seconds": 2.0, "sentences_per_s": 5.0,
                                                  "warm_seconds": 1.0, "warm_sentences_per_s": 10.0}


def test_predict_precision_takes_several_checkpoints_and_sums_up(trained, tmp_path):
    """One row per checkpoint and precision, then the largest difference per precision and the 0.1 verdict."""
    cli, best, _ = trained
    lines = []
    for sentence in cli.datamodule.sentences("test")[:12]:
        tags = ["O"] * len(sentence.tokens)
        for span in sentence.spans:
            tags[span.start:span.end] = [f"B-{span.label}"] + [f"I-{span.label}"] * (span.end - span.start - 1)
        lines += [f"{w} {t}" for w, t in zip(sentence.tokens, tags)] + [""]
    test = tmp_path / "test.conll"
    test.write_text("\n".join(lines))
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "predict_precision.py"), "--model", str(best),
                          str(best), "--test", str(test), "--scheme", "iob2", "--rounds", "1"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith(f"| {best} |")]
    assert [r.split(" | ")[1] for r in rows] == ["32", "bf16", "32", "bf16"]
    assert "bf16 - 32 over 2 model(s): largest" in out.stdout and "within 0.1 of 32:" in out.stdout
