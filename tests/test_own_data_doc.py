"""docs/own_data.md runs: its file blocks (```` ```lang file=PATH ````) are written into an empty folder and the
commands of its ``console`` blocks run there, a ``##`` section at a time, in the order shown. ``ner-zoo fit`` runs
are shortened (one epoch of two batches); nothing else is changed."""

from __future__ import annotations

import io
import re
import shlex
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from ner_zoo.cli.main import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "own_data.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.S | re.M)
SHORT = ["--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2", "--trainer.enable_progress_bar", "false",
         "--trainer.enable_model_summary", "false"]


def sections() -> dict[str, str]:
    parts = re.split(r"^## ", DOC.read_text(), flags=re.M)[1:]
    return {p.split("\n", 1)[0]: p for p in parts if "```console" in p}


def blocks(text: str) -> list[tuple[str, str, str]]:
    """``(language, file or "", body)`` of each fenced block."""
    out = []
    for lang, info, body in FENCE.findall(text):
        match = re.search(r"file=(\S+)", info)
        out.append((lang, match.group(1) if match else "", body))
    return out


def test_every_file_block_is_used_and_sections_found():
    assert len(sections()) == 4
    names = {f for _, f, _ in blocks(DOC.read_text()) if f}
    commands = " ".join(body for lang, _, body in blocks(DOC.read_text()) if lang == "console")
    assert all(Path(n).name in commands or Path(n).parent.name in commands or n.endswith(".txt") for n in names)


@pytest.mark.parametrize("section", list(sections()))
def test_section_runs(section, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])
    for lang, name, body in blocks(DOC.read_text()):  # every file of the page: later sections reuse earlier ones
        if name:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(body)
    ran = 0
    for lang, _, body in blocks(sections()[section]):
        if lang != "console":
            continue
        for line in body.splitlines():
            args = shlex.split(line.removeprefix("$ "))
            if args[0] == "python":
                subprocess.run([sys.executable, *args[1:]], check=True, timeout=300)
            else:
                assert args[0] == "ner-zoo"
                out, err = io.StringIO(), io.StringIO()
                with redirect_stdout(out), redirect_stderr(err):
                    code = main(args[1:] + (SHORT if args[1] == "fit" else []))
                assert code in (0, None), err.getvalue()[-3000:]
            ran += 1
    assert ran
    if section.startswith("4."):
        assert (tmp_path / "new.jsonl").read_text().count("\n") == 1
        record = sorted(tmp_path.rglob("results.json"))[-1].read_text()
        assert "no model selection on dev" in record
