"""The outputs the README's first screen and ``docs/api.md`` show are what the code prints: each ``python`` block
followed by a ``text`` block is run against the quickstart model, trained here as ``make quickstart`` trains it
(seed 42), and its output compared with the block: entities and labels exactly, scores to the digits shown. A
shown score must not sit within 1e-4 of a rounding boundary (another CPU's kernels round the training a little
differently: ``make test-kernels`` reruns this module under a second kernel set)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CKPT = "runs/quickstart/RUN/checkpoints/best.ckpt"


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """The quickstart's best checkpoint (``ner-zoo fit --config quickstart`` in a temporary folder)."""
    import os

    from ner_zoo.cli.main import main

    work = tmp_path_factory.mktemp("quickstart")
    before = os.getcwd()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["fit", "--config", "quickstart"]) == 0
    finally:
        os.chdir(before)
    (ckpt,) = work.glob("runs/quickstart/*/*/checkpoints/best.ckpt")
    return ckpt


def shown_outputs(path: Path) -> list[tuple[str, str]]:
    """``(python code, text it is said to print)`` for each python block followed by a text block (at most one
    paragraph line between them)."""
    block = r"((?:(?!```).)*)```"  # a block's text: never past its closing fence
    return re.findall(r"```python\n" + block + r"\n(?:\n(?!```)[^\n]+(?:\n(?!```)[^\n]+)*\n)?\n```text\n" + block, path.read_text(),
                      flags=re.S)


def compare(code: str, shown: str, ckpt: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace(CKPT, str(ckpt)), "docs", "exec"), {})  # noqa: S102 - our own documentation
    got, want = out.getvalue().splitlines(), shown.splitlines()
    assert got == want, f"the docs show\n{shown}\nthe code prints\n" + "\n".join(got)


def knife_edges(code: str, ckpt: Path) -> list[str]:
    """Scores the block rounds that lie within 1e-4 of a rounding boundary of their shown digits."""
    import ner_zoo

    m = re.search(r"round\(e\.score, (\d)\)|\{e\.score:\.(\d)f\}", code)
    text = re.search(r'tagger\("([^"]+)"\)|text = "([^"]+)"', code)
    if m is None or text is None:
        return []
    digits = int(m[1] or m[2])
    step = 10 ** -digits
    scores = [e.score for e in ner_zoo.load(ckpt, device="cpu")(text[1] or text[2])]
    return [f"{s} ({digits} digits)" for s in scores if abs((s / step) % 1 - 0.5) < 1e-4 / step]


def test_readme_first_screen_prints_what_it_shows(quickstart):
    readme = ROOT / "README.md"
    (code, shown), *_ = shown_outputs(readme)
    assert readme.read_text().index(code) < 3000 and CKPT in code  # the first screen, the quickstart model
    compare(code, shown, quickstart)
    assert not knife_edges(code, quickstart)


def test_docs_api_prints_what_it_shows(quickstart):
    pairs = shown_outputs(ROOT / "docs" / "api.md")
    assert len(pairs) >= 2  # the first example and the tokenizer's
    for code, shown in pairs:
        compare(code, shown, quickstart)
        assert not knife_edges(code, quickstart)
