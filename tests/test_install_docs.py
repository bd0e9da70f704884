"""Every ``pip install`` line of the docs (README, ``docs/*.md``, the notebooks) and of the messages the code
prints works as written for a package that is not on PyPI: ner-zoo is installed from a path (the checkout, a
wheel built from it), never by name from an index; every extra it names exists in ``pyproject.toml``; the only
index named is PyTorch's, for torch alone; the wheel's file name is the one ``pip wheel`` writes."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
VERSION = PYPROJECT["project"]["version"]
INDEXES = {"https://download.pytorch.org/whl/cpu", "https://download.pytorch.org/whl/cu126"}


def doc_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "notebooks").glob("*.ipynb"))]
    return [f for f in files if "runs" not in f.relative_to(ROOT).parts]  # session notes are records, not docs


def install_lines(text: str) -> list[str]:
    """The ``pip install ...`` commands of a text (code blocks, inline code, messages), comments dropped."""
    found = []
    for m in re.finditer(r"pip install ((?:[^`\n\",)]|,(?! ))*)", text):  # a message's string, sentence or bracket ends it
        line = re.split(r" +#| in the | or |;", m.group(1))[0].strip().rstrip("'.:")
        found.append(line + ("'" if line.count("'") % 2 else ""))
    return found


def check(line: str, where: str) -> list[str]:
    problems = []
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    index = None
    for i, w in enumerate(words):
        if w in ("--index-url", "-i", "--extra-index-url"):
            index = words[i + 1] if i + 1 < len(words) else ""
            if index not in INDEXES:
                problems.append(f"{where}: names the index {index!r}: {line}")
    targets = [w for i, w in enumerate(words) if not w.startswith("-") and (i == 0 or words[i - 1] not in
                                                                             ("--index-url", "-i", "-w", "-r"))]
    for t in targets:
        name, _, extras = t.partition("[")
        if re.fullmatch(r"ner[-_]zoo", name, flags=re.I):
            problems.append(f"{where}: installs ner-zoo by name from an index (it is not on PyPI): {line}")
        for extra in filter(None, extras.rstrip("]").split(",")):
            if extra not in EXTRAS:
                problems.append(f"{where}: no extra {extra!r} in pyproject.toml: {line}")
        if name.endswith(".whl") and Path(name).name != f"ner_zoo-{VERSION}-py3-none-any.whl":
            problems.append(f"{where}: not the wheel pip wheel builds (ner_zoo-{VERSION}-py3-none-any.whl): {line}")
    if index is not None and [t for t in targets if not t.startswith("torch")]:
        problems.append(f"{where}: PyTorch's index for more than torch: {line}")
    return problems


def test_install_lines_of_the_docs_work_as_written():
    problems, seen = [], 0
    for f in doc_files():
        for line in install_lines(f.read_text()):
            seen += 1
            problems += check(line, str(f.relative_to(ROOT)))
    assert seen >= 6 and not problems, "\n".join(problems)


def test_install_lines_of_the_codes_messages_work_as_written():
    problems = []
    for f in sorted((ROOT / "ner_zoo").rglob("*.py")):
        for line in install_lines(f.read_text()):
            problems += check(line, str(f.relative_to(ROOT)))
    assert not problems, "\n".join(problems)


def test_readme_has_an_install_section_with_torch_first():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    lines = install_lines(section)
    assert any(line.startswith("torch --index-url https://download.pytorch.org/whl/cpu") for line in lines)
    assert any(line.startswith("-e '.[") for line in lines) and any(".whl[" in line for line in lines)
    torch_first = [i for i, line in enumerate(lines) if line.startswith("torch")]
    ours = [i for i, line in enumerate(lines) if line.startswith(("-e", "'dist/"))]
    assert torch_first and ours and min(torch_first) < min(ours)
    assert "pip wheel . --no-deps -w dist" in section


def test_the_checker_refuses_what_the_docs_said_before():
    assert check("'ner-zoo[onnx]'", "x") and check("ner-zoo", "x") and check("-e '.[nope]'", "x")
    assert check("torch --index-url https://example.org/simple", "x")
    assert not check("-e '.[serve,onnx]'", "x") and not check("torch --index-url https://download.pytorch.org/whl/cpu", "x")
