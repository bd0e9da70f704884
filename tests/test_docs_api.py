"""The ``python`` blocks of ``docs/api.md`` and the README's first example run, against a tiny trained model
(their model paths replaced by the test's checkpoint and its exported folder)."""

from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def run_blocks(blocks: list[str], ckpt: Path, folder: Path, cwd: Path, monkeypatch) -> None:
    monkeypatch.chdir(cwd)
    namespace: dict = {}
    for code in blocks:
        code = code.replace("runs/quickstart/RUN/checkpoints/best.ckpt", str(ckpt)).replace("exported/quickstart",
                                                                                           str(folder))
        exec(compile(code, "docs", "exec"), namespace)  # noqa: S102 - our own documentation


def test_docs_api_examples_run(trained, exported, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / "docs" / "api.md")
    assert len(blocks) >= 4
    run_blocks(blocks, trained[1], exported, tmp_path, monkeypatch)


def test_readme_first_example_runs(trained, exported, tmp_path, monkeypatch):
    readme = ROOT / "README.md"
    first = python_blocks(readme)[0]
    assert readme.read_text().index(first) < 3000  # on the first screen
    assert "ner_zoo.load" in first and ".start" in first and ".score" in first
    run_blocks([first], trained[1], exported, tmp_path, monkeypatch)
