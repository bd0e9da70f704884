"""Precisions on CPU (issue 27): a ``16-mixed`` fit (fp16 autocast, which torch also runs on CPU), the one-line
refusal of a precision a model cannot train in, and the one-call device script on a tiny config."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ner_zoo.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--config", str(ROOT / "configs" / "quickstart.yaml"), "--trainer.max_epochs", "1",
         "--data.init_args.max_sentences", "24", "--trainer.enable_progress_bar", "false", "--test_after_fit", "false",
         "--trainer.enable_model_summary", "false"]


@pytest.fixture(autouse=True)
def _argv(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])


def test_16_mixed_on_cpu_is_recorded_as_what_ran(tmp_path):
    """Lightning runs ``16-mixed`` on a CPU as ``bf16-mixed`` (it warns): the record says what ran."""
    assert main(["fit", *QUICK, "--trainer.precision", "16-mixed", "--trainer.default_root_dir", str(tmp_path)]) == 0
    (record,) = [json.loads(p.read_text()) for p in tmp_path.rglob("results.json")]
    assert record["precision"] == "bf16-mixed" and math.isfinite(record["best_val_f1"])
    assert all(math.isfinite(v) for v in record["best_val"].values())


@pytest.mark.parametrize("model", ["bilstm_crf", "span"])
def test_fp16_autocast_training_steps_on_cpu_are_finite(tmp_path, model):
    """What ``16-mixed`` does on a GPU, on CPU: forward under fp16 autocast, scaled backward, optimiser step."""
    import torch

    from battery import SAMPLE_DATA, build
    from test_cli import MODEL
    from test_wandb_offline import SPAN

    cli = build(MODEL if model == "bilstm_crf" else SPAN["model"], SAMPLE_DATA, tmp_path)
    net = cli.model.train()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    for batch, _ in zip(cli.datamodule.train_dataloader(), range(3)):
        with torch.autocast("cpu", dtype=torch.float16):
            loss = net.compute_loss(batch)
        assert torch.isfinite(loss), loss
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    assert all(torch.isfinite(p).all() for p in net.parameters())


def test_a_precision_the_model_cannot_train_in_is_refused_with_one_line(tmp_path, capsys):
    """Before: ``bf16-true`` ended in a oneDNN ``RuntimeError`` traceback from the LSTM."""
    assert main(["fit", *QUICK, "--trainer.precision", "bf16-true", "--trainer.default_root_dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("ner-zoo: error: BiLSTMCRF cannot train in precision bf16-true: its LSTM, LinearChainCRF "
                       "compute in fp32 and need fp32 weights; use bf16-mixed, 16-mixed or 32-true")


@pytest.mark.slow
def test_precision_matrix_script_writes_the_table(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "precision_matrix.py"), "--configs",
                          "configs/quickstart.yaml", "--precisions", "32-true", "bf16-true", "--steps", "3", "--warmup",
                          "1", "--accelerator", "cpu", "--out", str(tmp_path / "p.md"), "--extra",
                          "--data.init_args.max_sentences", "40"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads((tmp_path / "p.json").read_text())
    assert [(r["precision"], r["status"].split(":")[0]) for r in rows] == [("32-true", "ok"), ("bf16-true", "refused")]
    assert rows[0]["loss_finite"] and rows[0]["steps"] == 3 and rows[0]["steps_per_s"] > 0
    assert (tmp_path / "p.md").read_text().startswith("Device: CPU")


@pytest.mark.parametrize("native", [True, False])
def test_an_unset_precision_is_the_hosts_default_for_the_model_and_kept_on_resume(tmp_path, monkeypatch, native):
    """A TransformerTagger fit without ``--trainer.precision`` trains in bf16-mixed exactly where bf16 is native
    (issue 46: its bf16 quality was measured equal), says why in the record, keeps that precision when resumed on
    a host that would choose otherwise, and its checkpoint predicts in the same precision through ner_zoo.load."""
    import yaml
    from tiny_bert import build_tiny_bert

    import ner_zoo
    from ner_zoo import hardware
    from ner_zoo.testing.tiny import tiny_model

    bert = build_tiny_bert(tmp_path / "bert")
    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: native)
    config = tmp_path / "tagger.yaml"
    config.write_text(yaml.safe_dump({
        "model": tiny_model("transformer_tagger", bert),
        "data": {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 16}},
        "trainer": {"max_epochs": 1, "accelerator": "cpu", "enable_progress_bar": False,
                    "enable_model_summary": False, "default_root_dir": str(tmp_path / "runs")}}))
    assert main(["fit", "--config", str(config)]) == 0
    (path,) = (tmp_path / "runs").rglob("results.json")
    record = json.loads(path.read_text())
    expected = "bf16-mixed" if native else "32-true"
    assert record["precision"] == expected
    assert record["precision_reason"].startswith(f"default for cpu: {'bf16' if native else 'fp32'}: ")  # and why
    assert yaml.safe_load((path.parent / "config.yaml").read_text())["trainer"]["precision"] == expected

    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: not native)  # another host
    assert main(["fit", "--config", str(config), "--trainer.max_epochs", "2", "--ckpt_path", "last"]) == 0
    resumed = json.loads(path.read_text())
    assert resumed["precision"] == expected and "kept on resume" in resumed["precision_reason"]

    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: native)
    best = next(path.parent.rglob("best*.ckpt"))
    assert ner_zoo.load(best, device="cpu").precision == ("bf16" if native else "32")
    assert ner_zoo.load(best, device="cpu", precision="32").precision == "32"


def test_a_precision_given_is_kept_whatever_the_host(tmp_path, monkeypatch):
    from ner_zoo import hardware

    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: True)
    assert main(["fit", *QUICK, "--trainer.precision", "32-true", "--trainer.default_root_dir", str(tmp_path)]) == 0
    (record,) = [json.loads(p.read_text()) for p in tmp_path.rglob("results.json")]
    assert record["precision"] == "32-true" and record["precision_reason"] == "given by the config or command line"


def test_a_model_not_measured_in_bf16_trains_in_fp32_on_a_bf16_host(tmp_path, monkeypatch):
    from ner_zoo import hardware

    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: True)
    assert main(["fit", *QUICK, "--trainer.default_root_dir", str(tmp_path)]) == 0  # the quickstart BiLSTM-CRF
    (record,) = [json.loads(p.read_text()) for p in tmp_path.rglob("results.json")]
    assert record["precision"] == "32-true" and "BiLSTMCRF's bf16 training quality was not" in record["precision_reason"]


def test_predict_says_when_the_hosts_default_is_bf16(tmp_path, monkeypatch, capsys):
    """``ner-zoo predict`` on a bf16 host: the TransformerTagger predicts in bf16 and stderr says why; ``--precision
    32`` is silent about it."""
    import yaml
    from tiny_bert import build_tiny_bert

    from ner_zoo import hardware
    from ner_zoo.testing.tiny import tiny_model

    bert = build_tiny_bert(tmp_path / "bert")
    config = tmp_path / "tagger.yaml"
    config.write_text(yaml.safe_dump({
        "model": tiny_model("transformer_tagger", bert),
        "data": {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 8}},
        "trainer": {"max_epochs": 1, "accelerator": "cpu", "enable_progress_bar": False, "precision": "32-true",
                    "enable_model_summary": False, "default_root_dir": str(tmp_path / "runs")}}))
    assert main(["fit", "--config", str(config)]) == 0
    best = next((tmp_path / "runs").rglob("best*.ckpt"))
    (tmp_path / "in.txt").write_text("Anna Berg visited Paris.\n")
    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: True)
    capsys.readouterr()
    for extra, said in (([], True), (["--precision", "32"], False)):
        out = tmp_path / f"out{len(extra)}.jsonl"
        assert main(["predict", "--model", str(best), "--input", str(tmp_path / "in.txt"), "--output", str(out),
                     "--accelerator", "cpu", *extra]) == 0
        err = capsys.readouterr().err
        assert ("ner-zoo predict: bf16: this CPU computes bf16 natively" in err) is said, err
        assert out.read_text().count("\n") == 1


def test_a_run_started_before_the_host_default_resumes_in_fp32(tmp_path):
    """A run folder whose config.yaml says ``precision: null`` (Lightning's 32-true, before the default followed
    the host) keeps fp32 on resume; a folder without config.yaml gets the host's default."""
    from ner_zoo.run.precision import choose_precision

    def config():
        return {"trainer": {"precision": None, "accelerator": "cpu"},
                "model": {"class_path": "ner_zoo.models.transformer_tagger.TransformerTagger"}}

    (tmp_path / "config.yaml").write_text("trainer:\n  precision: null\n  max_epochs: 3\n")
    c = config()
    assert "kept on resume" in choose_precision(c, tmp_path, resuming=True) and c["trainer"]["precision"] == "32-true"
    c = config()
    assert choose_precision(c, tmp_path / "none", resuming=True).startswith("default for cpu")
    assert c["trainer"]["precision"] in ("32-true", "bf16-mixed")
