"""Shared fixtures: hermetic environment, tiny corpora, corpus-data skipping."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one thread is faster, and parallel tests don't thrash
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DATA_ROOT = Path(os.environ.get("NER_ZOO_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def corpus_dir(name: str) -> Path:
    """The folder of a real corpus, or skip the test when it is absent."""
    path = DATA_ROOT / name
    if not path.is_dir() or not any(p.name != "PROVENANCE.md" for p in path.iterdir()):
        pytest.skip(f"corpus {name!r} not available under {DATA_ROOT}")
    return path


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    import torch  # here, not at import: the pytest-xdist controller then never loads torch (~3 s per run)

    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    cache = os.environ.get("NER_ZOO_CACHE") or str(tmp_path_factory.getbasetemp() / "ner_zoo_cache")
    monkeypatch.setenv("NER_ZOO_CACHE", cache)


@pytest.fixture
def sample_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "ner_zoo" / "data" / "sample"


# --- a trained model to use (tests/test_model_use.py, test_docs_api.py, test_serve.py) ------------------------------
USE_MODEL = {"class_path": "ner_zoo.models.BiLSTMCRF",
             "init_args": {"words": {"dim": 16}, "lstm_hidden": 16,
                           "char_encoder": {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8}},
                           "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.02}}}}
USE_DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 96}}


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """``(cli, best checkpoint, folder)``: a tiny BiLSTM-CRF fitted and tested on the sample corpus, once per test
    process (its run record is in the folder)."""
    from battery import build

    tmp = tmp_path_factory.mktemp("use")
    c = build(USE_MODEL, USE_DATA, tmp, trainer={"max_epochs": 4}, subcommand="fit")
    c.trainer.test(c.model, datamodule=c.datamodule, ckpt_path="best", verbose=False)
    return c, Path(c.trainer.checkpoint_callback.best_model_path), tmp


@pytest.fixture(scope="session")
def exported(trained, tmp_path_factory):
    """``trained``'s checkpoint exported to a folder (``ner-zoo export``)."""
    from ner_zoo.api.export import export

    return export(trained[1], tmp_path_factory.mktemp("exp") / "model")


# --- the numeric tier (`make test-kernels`) -------------------------------------------------------------------------
#: the units whose verdicts rest on float arithmetic: training trajectories, equal runs, fast paths equal to their
#: references within a tolerance. Every test_model_* module and every ModelBattery class is numeric too.
NUMERIC_MODULES = {
    "test_adding_a_model_guide", "test_battery", "test_casing", "test_crf", "test_docs_outputs", "test_document_context",
    "test_fast_paths", "test_hcr_memory", "test_lazy_rows", "test_long_documents", "test_old_checkpoints",
    "test_onnx", "test_precision", "test_resume", "test_span_transformer", "test_spans",
    "test_step_ops", "test_token_encoder", "test_transformer_encoder",
}


def pytest_collection_modifyitems(config, items):
    from battery import ModelBattery

    for item in items:
        module = item.module.__name__.rpartition(".")[2] if getattr(item, "module", None) else ""
        numeric = module in NUMERIC_MODULES or module.startswith("test_model_")
        if numeric or (item.cls is not None and issubclass(item.cls, ModelBattery)):
            item.add_marker(pytest.mark.numeric)


def pytest_report_header(config):
    """The kernel set in use, so that a failure report says which CPU kernels rounded it."""
    import platform

    import torch

    chosen = " ".join(f"{k}={os.environ[k]}" for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR")
                      if k in os.environ)
    return f"CPU kernels: {torch.backends.cpu.get_cpu_capability()} ({chosen or 'defaults'}) on {platform.machine()}"


# --- the command tests' fitted model and config (cli_cases.py) ---------------------------------------------------
@pytest.fixture(scope="session")
def fitted(tmp_path_factory):
    """``(config, best checkpoint, folder)``: a tiny BiLSTM-CRF fitted through ``ner-zoo fit`` once per test
    process, for the command tests that read it (never write into its folder)."""
    import sys

    from cli_cases import TRAIN, config
    from ner_zoo.cli.main import main

    tmp = tmp_path_factory.mktemp("fitted")
    cfg = config(tmp, train=TRAIN * 3, epochs=2)
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        assert main(["fit", "--config", str(cfg)]) == 0
    finally:
        sys.argv = argv
    return cfg, tmp / "ckpt" / "best.ckpt", tmp


@pytest.fixture(scope="module")
def fit_config(tmp_path_factory):
    """A tiny fit config in a folder of its own per test module (tests fit with it and count what it wrote)."""
    from cli_cases import config

    return config(tmp_path_factory.mktemp("cfg"))
