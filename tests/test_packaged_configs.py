"""Configs ship inside the package and are named from any folder: ``--config baselines/conll2003`` (with or without
``.yaml`` and a leading ``configs/``) is the packaged file unless a local file of that name exists;
``ner-zoo configs`` lists them. (The installed wheel is tested in ``tests/test_wheel.py``.)"""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from ner_zoo.cli.main import main
from ner_zoo.cli.packaged_configs import PACKAGED, packaged_names, resolve_config_args

ROOT = Path(__file__).resolve().parents[1]
MAIN = str(PACKAGED / "baselines" / "conll2003.yaml")


def test_configs_are_package_data_and_the_checkout_folder_links_there():
    assert PACKAGED == ROOT / "ner_zoo" / "configs" and not PACKAGED.is_symlink()
    assert (ROOT / "configs").resolve() == PACKAGED
    assert "configs/**/*.yaml" in (ROOT / "pyproject.toml").read_text()


@pytest.mark.parametrize("name", ["baselines/conll2003", "baselines/conll2003.yaml",
                                  "configs/baselines/conll2003.yaml", "./configs/baselines/conll2003"])
def test_names_resolve_to_the_packaged_copy_from_any_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_config_args(["fit", "--config", name, "-c", name, f"--config={name}"]) == \
        ["fit", "--config", MAIN, "-c", MAIN, f"--config={MAIN}"]


def test_a_local_file_wins_and_unknown_names_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "conll2003.yaml").write_text("seed_everything: 1\n")
    assert resolve_config_args(["--config", "baselines/conll2003.yaml"]) == ["--config", "baselines/conll2003.yaml"]
    assert resolve_config_args(["--config", "baselines/conll2003"]) == ["--config", MAIN]  # no local file named so
    for other in ("nope/missing.yaml", "../baselines/conll2003.yaml", "/abs/quickstart.yaml"):
        assert resolve_config_args(["--config", other]) == ["--config", other]
    assert resolve_config_args(["--trainer.max_epochs", "quickstart"]) == ["--trainer.max_epochs", "quickstart"]


def test_matrix_files_name_packaged_configs(tmp_path, monkeypatch):
    """The ``configs`` a run matrix (``experiments/*.yaml``) lists resolve from any folder."""
    monkeypatch.chdir(tmp_path)
    names = [c for m in PACKAGED.glob("experiments/*.yaml") for run in (yaml.safe_load(m.read_text()) or [])
             if isinstance(run, dict) for c in run.get("configs", [])]
    assert names
    for name in names:
        assert resolve_config_args(["--config", name])[1].startswith(str(PACKAGED)), name


def test_configs_command_lists_every_packaged_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["configs"]) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["config", "model", "dataset", "paper"]
    assert sorted(ln.split()[0] for ln in lines[1:]) == packaged_names()
    assert len(lines) - 1 == len(packaged_names()) == len(list(PACKAGED.rglob("*.yaml")))
    row = next(ln for ln in lines if ln.startswith("baselines/conll2003 "))
    assert row.split()[1:] == ["BiLSTMCRF", "CoNLL2003", "90.94"]
    with redirect_stdout(out := io.StringIO()):
        assert main(["configs", "--path"]) == 0
    assert Path(out.getvalue().strip()) == PACKAGED


def test_fit_print_config_by_name_from_an_empty_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        main(["fit", "--config", "psa/conll2003", "--config", "psa/ablations/no_fusion", "--print_config"])
    printed = yaml.safe_load(out.getvalue())
    assert printed["model"]["class_path"].endswith("PSA") and printed["data"]["class_path"].endswith("CoNLL2003")
