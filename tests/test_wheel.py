"""The built wheel, installed outside the checkout, trains from an empty folder: ``ner-zoo configs`` lists the
packaged configs, and ``ner-zoo fit --config baselines/conll2003 --data <HF dataset on disk>`` resolves the packaged
config and reads the dataset. The code run is the wheel's (checked), not the checkout's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hf_copies import save_copies
from ner_zoo.data import SampleCorpus

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.wheel


def run(args: list[str], cwd: Path, site: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NER_ZOO_DATA")}
    env.update(PYTHONPATH=str(site), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project built as a wheel from a copy of its sources and installed into a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "ner_zoo", src / "ner_zoo", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True, timeout=300)
    wheel = next((tmp / "dist").glob("ner_zoo-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp / "site"), str(wheel)], check=True,
                   capture_output=True, timeout=300)
    return tmp / "site"


def test_wheel_ships_configs_and_lists_them(installed, tmp_path):
    where = run(["-c", "import ner_zoo; print(ner_zoo.__file__)"], tmp_path, installed).stdout.strip()
    assert Path(where).is_relative_to(installed)
    packaged = sorted(p.relative_to(ROOT / "ner_zoo" / "configs") for p in (ROOT / "ner_zoo" / "configs").rglob("*.yaml"))
    shipped = sorted(p.relative_to(installed / "ner_zoo" / "configs") for p in (installed / "ner_zoo" / "configs").rglob("*.yaml"))
    assert shipped == packaged and len(shipped) > 50
    listing = run(["-m", "ner_zoo.cli.main", "configs"], tmp_path, installed).stdout
    assert "baselines/conll2003" in listing and "90.94" in listing and "dspert/ablations/shallow" in listing


def test_fit_packaged_config_on_hf_dataset_from_an_empty_folder(installed, tmp_path):
    splits = {s: SampleCorpus().sentences(s) for s in ("train", "dev", "test")}
    saved, _ = save_copies(splits, tmp_path / "data")
    work = tmp_path / "empty"
    work.mkdir()
    (work / "data.yaml").write_text(yaml.safe_dump({"class_path": "ner_zoo.data.HFCorpus",
                                                    "init_args": {"source": str(saved)}}))
    out = run(["-m", "ner_zoo.cli.main", "fit", "--config", "baselines/conll2003", "--data", "data.yaml",
               "--trainer.max_epochs", "1", "--trainer.limit_train_batches", "3", "--trainer.limit_val_batches", "2",
               "--trainer.limit_test_batches", "2", "--trainer.enable_progress_bar", "false"], work, installed)
    assert "micro" in out.stdout  # test_after_fit's per-type table
    record = next((work / "runs").rglob("results.json"))
    assert '"status": "completed"' in record.read_text()
    assert str(installed / "ner_zoo" / "configs" / "baselines" / "conll2003.yaml") in record.read_text()
