"""The bundled sample corpus measures generalisation: its dev and test mentions never occur in training, no sentence
is repeated, and ``tools/make_sample_corpus.py`` regenerates it exactly. The quickstart's example sentences are
not in it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from ner_zoo.cli.packaged_configs import packaged_config
from ner_zoo.data import SampleCorpus
from ner_zoo.run.examples import bracketed

ROOT = Path(__file__).resolve().parents[1]


def mentions(sentences) -> set[str]:
    return {" ".join(s.tokens[a:b]) for s in sentences for a, b, _ in s.spans}


def test_dev_and_test_mentions_never_occur_in_training():
    dm = SampleCorpus()
    train, dev, test = (dm.sentences(s) for s in ("train", "dev", "test"))
    seen = mentions(train)
    assert len(mentions(test)) > 60 and not mentions(test) & seen
    assert not mentions(dev) & seen and not mentions(dev) & mentions(test)
    # nor any word of a test person or place name (a model cannot have memorised a surname)
    name_words = {t for s in train for a, b, lab in s.spans if lab in ("PER", "LOC") for t in s.tokens[a:b]}
    test_words = {t for s in test for a, b, lab in s.spans if lab in ("PER", "LOC") for t in s.tokens[a:b]}
    assert not test_words & name_words - {"the", "de"}


def test_no_sentence_twice_and_varied_forms():
    dm = SampleCorpus()
    all_sents = [tuple(s.tokens) for split in ("train", "dev", "test") for s in dm.sentences(split)]
    assert len(all_sents) == len(set(all_sents)) == 560
    test = dm.sentences("test")
    assert sum(not s.spans for s in test) >= 2  # sentences without entities
    assert len({s.tokens[-1] for s in test}) >= 2 and {s.tokens[0] for s in test} >= {"According", "Late"}
    assert any(s.tokens[0].islower() for split in ("train", "dev", "test") for s in dm.sentences(split))
    assert {len(s) for s in test} >= set(range(7, 15))


def test_generator_reproduces_the_files(tmp_path):
    spec = importlib.util.spec_from_file_location("make_sample_corpus", ROOT / "tools" / "make_sample_corpus.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    tool.main(tmp_path)
    sample = ROOT / "ner_zoo" / "data" / "sample"
    for split in ("train", "dev", "test"):
        assert (tmp_path / f"{split}.conll").read_text() == (sample / f"{split}.conll").read_text(), split


def test_quickstart_examples_are_not_in_the_corpus():
    config = yaml.safe_load(packaged_config("quickstart").read_text())
    examples = config["trainer"]["callbacks"][0]["init_args"]["sentences"]
    words = {t for split in ("train", "dev", "test") for s in SampleCorpus().sentences(split) for t in s.tokens}
    names = {"Angela", "Merkel", "Emmanuel", "Macron", "Brussels", "Toyota", "Jerome", "Powell", "Washington"}
    assert len(examples) == 2 and all(any(n in text for text in examples) for n in names)
    assert not names & words


def test_bracketed():
    assert bracketed(["Anna", "Berg", "flew", "to", "Oslo"], [(0, 2, "PER"), (4, 5, "LOC")]) == \
        "[Anna Berg]PER flew to [Oslo]LOC"
    assert bracketed(["IL-2", "gene"], [(0, 2, "DNA"), (0, 1, "protein")]) == "[[IL-2]protein gene]DNA"
