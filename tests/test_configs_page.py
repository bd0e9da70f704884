"""``docs/configs.md`` is what its generator writes: a config added, renamed or re-described without
``python -m ner_zoo.cli.configs_page --output docs/configs.md`` fails here."""

from __future__ import annotations

import difflib
from pathlib import Path

from ner_zoo.cli.configs_page import page

DOC = Path(__file__).resolve().parents[1] / "docs" / "configs.md"


def test_configs_page_equals_its_generator():
    want, have = page(DOC), DOC.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "docs/configs.md", "generated"))
    assert not diff, "regenerate: python -m ner_zoo.cli.configs_page --output docs/configs.md\n" + diff
