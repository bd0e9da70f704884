"""What ``ner-zoo fit`` prints (:mod:`ner_zoo.cli.quiet`): the quickstart, run as a user runs it, checked line by
line against an allow list (no Lightning tips, no repeated dependency warnings, no callback-override notice, no
all-zero FLOPs column, one test table); its last line names the run folder and the best checkpoint; ``--verbose``
brings Lightning's output back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: every line the quickstart may print on stdout (stderr: none)
ALLOWED = [
    r"BiLSTMCRF: [\d.]+ [KM]? ?parameters \([\d.]+ [KM]? ?trainable\)",
    r"(Epoch \d+/\d+|Validation|Sanity Checking|Testing)\b.*",  # the progress bar's last state
    r" +(\d+:\d\d:\d\d|[\d.]+it/s)\b.*",  # its tail, where rich wrapped the line at the console's 80 columns
    r"type +prec +rec +f1 +support",  # the project's per-type table
    r"(LOC|MISC|ORG|PER|micro) +[\d.]+ +[\d.]+ +[\d.]+ +\d+",
    r"",
    r"The model on sentences it has never seen:",
    r"  (\S+ )*\S+",
    r"run folder: runs/quickstart/BiLSTMCRF-SampleCorpus/\d{8}-\d{6} \(best checkpoint: checkpoints/best\.ckpt\)",
]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NER_ZOO_VERBOSE"}
    return subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, env={**env, "OMP_NUM_THREADS": "1"}, timeout=600)


def lines(text: str) -> list[str]:
    return [part.rstrip() for line in text.split("\n") for part in line.split("\r")]


@pytest.mark.process
def test_quickstart_prints_only_the_allowed_lines_and_names_its_run_folder(tmp_path):
    done = run(["fit", "--config", "quickstart"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == "", done.stderr
    out = lines(done.stdout)
    bad = [line for line in out if not any(re.fullmatch(p, line) for p in ALLOWED)]
    assert not bad, bad
    assert sum(line.startswith("type ") for line in out) == 1  # one test table: the project's
    assert sum("parameters" in line for line in out) == 1
    last = [line for line in out if line and not re.match(ALLOWED[1], line)][-1]
    folder = re.fullmatch(r"run folder: (\S+) \(best checkpoint: (\S+)\)", last)
    assert folder, last
    assert (tmp_path / folder[1] / folder[2]).is_file() and (tmp_path / folder[1] / "results.json").is_file()


@pytest.mark.process
def test_verbose_brings_lightnings_output_back(tmp_path):
    from cli_cases import config

    (tmp_path / "quiet").mkdir()
    (tmp_path / "loud").mkdir()
    quiet = run(["fit", "--config", str(config(tmp_path / "quiet"))], tmp_path / "quiet")
    loud = run(["fit", "--config", str(config(tmp_path / "loud")), "--verbose"], tmp_path / "loud")
    assert quiet.returncode == loud.returncode == 0, loud.stderr[-2000:]
    assert "GPU available" not in quiet.stderr + quiet.stdout and "Tip:" not in quiet.stderr + quiet.stdout
    assert "GPU available" in loud.stderr and "Tip:" in loud.stderr and "LeafSpec" in loud.stderr
    assert "LeafSpec" not in quiet.stderr
    assert "FLOPs" not in quiet.stdout and "run folder: " in quiet.stdout


def test_quiet_is_undone_after_a_command():
    """The CLI runs in the tests' process too: the loggers' levels and environment come back as they were."""
    import logging

    from ner_zoo.cli.quiet import ENV, is_quiet, quiet, wants_verbose

    level = logging.getLogger("lightning.pytorch").level
    env = {k: os.environ.get(k) for k in ENV}
    with quiet():
        assert is_quiet() and logging.getLogger("lightning.pytorch").level == logging.WARNING
    assert not is_quiet() and logging.getLogger("lightning.pytorch").level == level
    assert {k: os.environ.get(k) for k in ENV} == env
    assert wants_verbose(["fit", "--verbose", "--config", "c"]) == (["fit", "--config", "c"], True)
    assert wants_verbose(["test", "--verbose", "false"]) == (["test"], False)
    assert wants_verbose(["fit"])[1] is False
