"""The HTML view of entities (:mod:`ner_zoo.api.render`, ``Tagger.render``, ``ner-zoo predict --output_format
html``): a self-contained page with each entity marked, labelled and scored; a slow test opens it in headless
Chromium and checks the screenshot shows the marks (skipped where Chromium is absent)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ner_zoo.api.tagger import Entity
from test_hub import TEXT


def test_page_marks_entities_with_label_and_score_and_escapes_the_text():
    from ner_zoo.api.render import colour, page

    text = "<b>Anna</b> & Bank of Paris"
    ents = [Entity("Anna", "PER", 3, 7, 0.987), Entity("Bank of Paris", "ORG", 15, 28, 0.5),
            Entity("Paris", "LOC", 23, 28, 0.9)]
    html = page([text], [ents])
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html
    assert '&lt;b&gt;<mark class="ent" data-label="PER"' in html and "&amp;" in html and "<b>" not in html
    assert f"background:{colour('ORG')}" in html and '<span class="label">ORG</span><span class="score">0.50' in html
    assert html.count("<mark") == 2 and "also inside: Paris (LOC, 0.90)" in html  # nested: the outer one marked
    assert not re.search(r"(src|href)=|https?://|@import|<script", html)  # self-contained
    assert colour("PER") == colour("PER")


def test_tagger_render_and_predict_html(exported, tmp_path, monkeypatch):
    import ner_zoo
    from ner_zoo.cli.main import main

    tagger = ner_zoo.load(exported, device="cpu")
    ents = tagger(TEXT)
    html = tagger.render(TEXT)
    assert html.count("<mark") == len(ents) > 0
    for e in ents:
        assert f'data-label="{e.label}"' in html and f"{e.score:.2f}</span>" in html
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text(TEXT + "\n")
    assert main(["predict", "--model", str(exported), "--input", "in.txt", "--output", "out.html",
                 "--output_format", "html"]) == 0
    assert (tmp_path / "out.html").read_text() == html


@pytest.mark.slow
def test_page_renders_in_headless_chromium(exported, tmp_path):
    """The page in a real browser: the screenshot holds pixels of the marks' colours."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Chromium not installed (Debian: apt-get install chromium)")
    import ner_zoo
    from PIL import Image

    from ner_zoo.api.render import colour

    tagger = ner_zoo.load(exported, device="cpu")
    labels = {e.label for e in tagger(TEXT)}
    (tmp_path / "page.html").write_text(tagger.render(TEXT))
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1000,800", (tmp_path / "page.html").as_uri()], check=True, timeout=120,
                   capture_output=True)
    pixels = set(Image.open(shot).convert("RGB").getdata())
    for label in labels:
        rgb = tuple(int(colour(label)[i:i + 2], 16) for i in (1, 3, 5))
        assert rgb in pixels, f"no {label} mark ({colour(label)}) in the screenshot"
