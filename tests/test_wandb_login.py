"""Whether a fit logs to W&B online is wandb's own answer (issue 44): after ``wandb login`` (default server) or
``wandb login --host URL`` in an isolated ``HOME``, the fit's W&B run is online; with no key at all it is
offline, with one line saying so. Before: ner-zoo looked for a netrc entry of ``api.wandb.ai`` only, while
wandb 0.31 logs in to ``api.forge.coreweave.com`` by default and keeps a ``--host`` server in its settings
file, so both logged-in users were forced offline. No network is needed: the decision is read, not used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("wandb")

ROOT = Path(__file__).resolve().parents[1]
KEY = "k" * 40  # wandb's format check: 40+ word characters
WANDB = str(Path(sys.executable).with_name("wandb"))
# the fit's wandb.init, replaced: prints the mode wandb would run in, then runs disabled (no network)
DRIVER = """
import sys, wandb
from wandb.sdk import wandb_setup
real = wandb.init
def init(**kw):
    print("W&B mode:", kw.get("mode") or wandb_setup.singleton().settings.mode, flush=True)
    return real(**{**kw, "mode": "disabled"})
wandb.init = init
from ner_zoo.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
DECISION = "from ner_zoo.results.wandb_export import wandb_login; l = wandb_login(); print(l.mode, l.base_url)"


def isolated_env(tmp_path: Path, **extra) -> dict:
    """A user with an empty ``HOME``: no W&B variables, wandb's netrc and settings file in that ``HOME``."""
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WANDB_") and k not in ("NETRC", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), OMP_NUM_THREADS="1", WANDB_SILENT="true",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **extra)
    return env


def wandb_login_cli(env: dict, *args: str) -> None:
    out = subprocess.run([WANDB, "login", "--no-verify", *args, KEY], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def decision(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", DECISION], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.process  # runs the real `wandb login` and fresh interpreters: ~12 s
def test_wandb_login_default_and_host_and_no_key_decide_the_mode(tmp_path):
    home = tmp_path / "home"
    env = isolated_env(tmp_path)
    assert decision(env).stdout.split() == ["offline", "https://api.forge.coreweave.com"]  # no key at all
    wandb_login_cli(env)
    assert "machine api.forge.coreweave.com" in (home / ".netrc").read_text()  # what wandb 0.31 writes
    assert decision(env).stdout.split()[0] == "online"

    other = tmp_path / "other"
    env = isolated_env(other)
    wandb_login_cli(env, "--host", "https://wandb.corp.internal")
    assert "base_url = https://wandb.corp.internal" in (other / "home" / ".config" / "wandb" / "settings").read_text()
    assert decision(env).stdout.split() == ["online", "https://wandb.corp.internal"]

    # the variables, as wandb reads them
    bare = isolated_env(tmp_path / "bare")
    assert decision({**bare, "WANDB_API_KEY": KEY}).stdout.split()[0] == "online"
    assert decision({**bare, "WANDB_MODE": "offline", "WANDB_API_KEY": KEY}).stdout.split()[0] == "offline"
    assert decision({**bare, "WANDB_MODE": "disabled"}).stdout.split()[0] == "disabled"
    assert decision({**bare, "WANDB_BASE_URL": "https://wandb.corp.internal"}).stdout.split()[0] == "offline"
    out = decision({**bare, "WANDB_API_KEY": "short"})
    assert out.returncode == 1 and "W&B settings:" in out.stderr.strip().splitlines()[-1]  # bad key: named


def fit_mode(cwd: Path, env: dict) -> tuple[str, str]:
    """The W&B mode of a 1-epoch fit with ``configs/logging/wandb.yaml``, and its stderr."""
    from test_wandb_offline import TAGGER, TRAINER

    (cwd / "tiny.yaml").write_text(yaml.safe_dump({**TAGGER, "trainer": {**TRAINER, "max_epochs": 1}}))
    out = subprocess.run([sys.executable, "-c", DRIVER, "fit", "--config", "tiny.yaml", "--config",
                          str(ROOT / "configs" / "logging" / "wandb.yaml")], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    modes = [line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith("W&B mode: ")]
    assert len(modes) == 1, out.stdout[-2000:]
    return modes[0], out.stderr


@pytest.mark.wandb
def test_a_fit_is_online_after_either_wandb_login_and_offline_without_a_key(tmp_path):
    for name, login in (("default", ()), ("host", ("--host", "https://wandb.corp.internal"))):
        folder = tmp_path / name
        folder.mkdir()
        env = isolated_env(folder)
        wandb_login_cli(env, *login)
        mode, err = fit_mode(folder, env)
        assert mode == "online" and "W&B offline" not in err, name  # before: offline in both
    folder = tmp_path / "nokey"
    folder.mkdir()
    mode, err = fit_mode(folder, isolated_env(folder))
    assert mode == "offline"
    assert [line for line in err.splitlines() if "W&B offline" in line] == [
        "ner-zoo: W&B offline: wandb has no API key for https://api.forge.coreweave.com (run `wandb login`, or "
        "set WANDB_API_KEY); upload later with `wandb sync`"]
