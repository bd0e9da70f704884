"""Every model of the tiny registry: predictions of ``ner-zoo predict`` (Lightning stand-ins, a fresh process) equal
``ner_zoo.load`` (real Lightning, this process), scores lie in [0, 1], and an exported folder (transformer encoders
saved beside the weights) predicts the same as its checkpoint."""

from __future__ import annotations

import json

import pytest

from battery import build
from test_model_use import cli
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)
from ner_zoo.testing.tiny import TINY, tiny_model

DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 48}}
TEXT = ("Anna Berg visited Paris on Monday.  Shares of Globex rose in Florence!\n"
        "The Bank of Georgia said John Smith, of the U.S. Treasury, met officials in Rome.\n")


@pytest.mark.slow
def test_every_tiny_model_predicts_alike_without_lightning_and_from_its_export(tiny_bert_dir, tmp_path):
    import ner_zoo
    from ner_zoo.api.export import export

    (tmp_path / "in.txt").write_text(TEXT)
    for name in TINY:
        folder = tmp_path / name
        c = build(tiny_model(name, tiny_bert_dir), DATA, folder, trainer={"max_steps": 3, "max_epochs": 1},
                  subcommand="fit")
        ckpt = sorted((folder / "ckpt").glob("*.ckpt"))[0]
        want = [[(e.text, e.label, e.score) for e in row] for row in
                ner_zoo.load(ckpt, device="cpu")(TEXT.strip().split("\n"))]
        assert all(0 <= s <= 1 for row in want for _, _, s in row), name
        cli("predict", "--model", str(ckpt), "--input", "in.txt", "--output", f"{name}.jsonl", cwd=tmp_path)
        got = [[(e["text"], e["label"], e["score"]) for e in json.loads(line)["entities"]]
               for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert got == want, name
        out = export(ckpt, folder / "exported")
        if json.loads((out / "config.json").read_text())["encoders"]:  # a transformer: its files travel along
            assert (out / "encoder-0" / "config.json").is_file() and (out / "encoder-0" / "tokenizer.json").is_file()
        again = [[(e.text, e.label, e.score) for e in row] for row in
                 ner_zoo.load(out, device="cpu")(TEXT.strip().split("\n"))]
        assert again == want, name
