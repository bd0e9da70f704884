"""HFCorpus: a Hugging Face ``datasets`` corpus (``save_to_disk`` folder, parquet files, hub id) as a DataModule.

Local copies of the bundled sample corpus, the nested fixture and CoNLL-2003 (skipped when absent) give exactly
the sentences, spans, documents and counts of the native readers, and ``ner-zoo fit`` trains on each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from conftest import corpus_dir
from hf_copies import key, save_copies

from ner_zoo.cli.main import main
from ner_zoo.data import CoNLL2003, HFCorpus, JsonDataModule, SampleCorpus
from ner_zoo.errors import DataFormatError

pytest.importorskip("datasets")
NESTED_DIR = Path(__file__).resolve().parent / "fixtures" / "nested"
SPLITS = ("train", "dev", "test")


def native(dm) -> dict:
    return {s: dm.sentences(s) for s in SPLITS}


@pytest.fixture(scope="module")
def sample_copies(tmp_path_factory):
    sents = native(SampleCorpus())
    return sents, *save_copies(sents, tmp_path_factory.mktemp("sample_hf"))


@pytest.mark.parametrize("form", ["saved", "parquet"])
def test_sample_corpus_copy_reads_as_native(sample_copies, form):
    sents, saved, parquet = sample_copies
    dm = HFCorpus(source=str(saved if form == "saved" else parquet), doc_id_column="doc_id")
    for split in SPLITS:
        assert key(dm.sentences(split)) == key(sents[split]), split
    assert dm.labels == SampleCorpus().labels
    assert dm.notes["hf_source"]["splits"] == {"train": "train", "dev": "validation", "test": "test"}
    # ClassLabel ids were mapped to their names and the scheme detected (the copy is IOB2)
    assert dm.vocabularies.scheme == "bioes" and "S-PER" in dm.vocabularies.tags.itos


def test_data_files_string_tags_split_mapping_and_data_dir(tmp_path):
    """``data_files`` relative to ``data_dir``, string tags in BIOES, a dev split named ``heldout``, no doc ids."""
    rows = {"train": [(["Anna", "Berg", "ran"], ["B-PER", "E-PER", "O"]), (["in", "Oslo"], ["O", "S-LOC"])],
            "heldout": [(["Oslo"], ["S-LOC"])], "test": [(["Berg", "ran"], ["S-PER", "O"])]}
    for name, sents in rows.items():
        with open(tmp_path / f"{name}.jsonl", "w") as f:
            for tokens, tags in sents:
                f.write(json.dumps({"words": tokens, "labels": tags}) + "\n")
    dm = HFCorpus(data_dir=str(tmp_path), data_files={k: f"{k}.jsonl" for k in rows}, splits={"dev": "heldout"},
                  tokens_column="words", tags_column="labels")
    assert [tuple(s.spans) for s in dm.sentences("train")] == [((0, 2, "PER"),), ((1, 2, "LOC"),)]
    assert dm.sentences("dev")[0].spans == [(0, 1, "LOC")]
    assert [s.doc_id for s in dm.sentences("test")] == [f"{tmp_path.name}:0"]


def test_no_dev_split_is_carved_from_train(sample_copies, tmp_path):
    sents, saved, _ = sample_copies
    import datasets

    dd = datasets.load_from_disk(str(saved))
    del dd["validation"]
    dd.save_to_disk(str(tmp_path / "nodev"))
    dm = HFCorpus(source=str(tmp_path / "nodev"), dev_fraction=0.25)
    assert len(dm.sentences("train")) + len(dm.sentences("dev")) == len(sents["train"])
    assert len(dm.sentences("dev")) == round(0.25 * len(sents["train"]))


def test_nested_spans_column_reads_as_native(tmp_path):
    dm_native = JsonDataModule(data_dir=str(NESTED_DIR), train_file="train.jsonlines", dev_file="dev.jsonlines",
                               test_file="test.jsonlines")
    sents = native(dm_native)
    saved, parquet = save_copies(sents, tmp_path, nested=True)
    for folder in (saved, parquet):
        dm = HFCorpus(source=str(folder), spans_column="spans", doc_id_column="doc_id")
        assert dm.task == "nested_ner"
        for split in SPLITS:
            assert key(dm.sentences(split)) == key(sents[split]), (folder, split)
    assert any(s.is_nested for s in dm.sentences("train"))


def test_bad_inputs_are_one_line_errors(sample_copies):
    _, saved, _ = sample_copies
    with pytest.raises(DataFormatError, match="no field 'words'"):
        HFCorpus(source=str(saved), tokens_column="words").sentences("train")
    with pytest.raises(DataFormatError, match="no split 'heldout'"):
        HFCorpus(source=str(saved), splits={"dev": "heldout"}).sentences("dev")
    with pytest.raises(ValueError, match="splits keys"):
        HFCorpus(source=str(saved), splits={"validation": "validation"})


def fit(tmp_path, monkeypatch, data: dict, *extra: str, config: str = "quickstart") -> dict:
    """``ner-zoo fit --config <packaged config> --data <data.yaml>`` for a few steps; the run record."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])  # as from a shell (LightningCLI also reads sys.argv)
    (tmp_path / "data.yaml").write_text(yaml.safe_dump(data))
    code = main(["fit", "--config", config, "--data", "data.yaml", "--trainer.max_epochs", "1",
                 "--trainer.limit_train_batches", "3", "--trainer.limit_val_batches", "2", "--trainer.limit_test_batches", "2",
                 "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false", *extra])
    assert code in (0, None)
    records = list(tmp_path.rglob("results.json"))
    assert len(records) == 1
    return json.loads(records[0].read_text())


@pytest.mark.parametrize("form", ["saved", "parquet"])
def test_fit_through_the_cli(sample_copies, tmp_path, monkeypatch, capsys, form):
    """An HF run is recorded, and foldered, under its source's name (``compare`` groups runs by it), and the
    quickstart's news sentences are not tagged by a model of other data."""
    _, saved, parquet = sample_copies
    source = str(saved if form == "saved" else parquet)
    record = fit(tmp_path, monkeypatch, {"class_path": "ner_zoo.data.HFCorpus", "init_args": {"source": source}})
    assert record["status"] == "completed" and record["data"] == form  # the folder's name: saved/, parquet/
    assert record["data_notes"]["hf_source"]["source"] == source
    (folder,) = (tmp_path / "runs" / "quickstart").glob("BiLSTMCRF-*")
    assert folder.name == f"BiLSTMCRF-{form}"
    assert "never seen" not in capsys.readouterr().out  # TagExamples: for the sample corpus only


def test_data_names_of_hf_sources(tmp_path):
    """The name of an HF corpus in records and run folders: the hub id (and configuration), the folder or
    file's name, the data files' folder."""
    from ner_zoo.run.folder import data_name, folder_part, run_label

    hf = "ner_zoo.data.HFCorpus"
    (tmp_path / "ncbi_hf").mkdir()
    (tmp_path / "files").mkdir()
    (tmp_path / "one.parquet").write_text("")
    assert data_name({"class_path": hf, "init_args": {"source": "tner/wnut2017"}}) == "tner/wnut2017"
    assert data_name({"class_path": hf, "init_args": {"source": "conll2002", "name": "es"}}) == "conll2002:es"
    assert data_name({"class_path": hf, "init_args": {"source": str(tmp_path / "ncbi_hf")}}) == "ncbi_hf"
    assert data_name({"class_path": hf, "init_args": {"source": "ncbi_hf", "data_dir": str(tmp_path)}}) == "ncbi_hf"
    assert data_name({"class_path": hf, "init_args": {"source": str(tmp_path / "one.parquet")}}) == "one"
    assert data_name({"class_path": hf, "init_args": {"data_files": {"train": str(tmp_path / "files" / "t.jsonl")}}}) \
        == "files"
    assert data_name({"class_path": hf, "init_args": {"data_dir": str(tmp_path / "files"),
                                                      "data_files": {"train": "t.jsonl"}}}) == "files"
    assert data_name({"class_path": "ner_zoo.data.CoNLL2003"}) == "CoNLL2003"
    assert folder_part("tner/wnut2017") == "tner--wnut2017"
    assert run_label({"model": {"class_path": "ner_zoo.models.BiLSTMCRF"},
                      "data": {"class_path": hf, "init_args": {"source": "tner/wnut2017"}}}) == "BiLSTMCRF-tner--wnut2017"


def test_fit_span_model_on_nested_copy(tmp_path, monkeypatch):
    from ner_zoo.testing.tiny import tiny_model

    dm_native = JsonDataModule(data_dir=str(NESTED_DIR), train_file="train.jsonlines", dev_file="dev.jsonlines",
                               test_file="test.jsonlines")
    saved, _ = save_copies(native(dm_native), tmp_path / "copy", nested=True)
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(tiny_model("span_classifier")))
    record = fit(tmp_path, monkeypatch, {"class_path": "ner_zoo.data.HFCorpus",
                                         "init_args": {"source": str(saved), "spans_column": "spans"}},
                 "--model", "model.yaml")
    assert record["status"] == "completed" and "f1" in record["test"]


@pytest.mark.corpus
@pytest.mark.slow
def test_conll2003_copy_reads_as_native(tmp_path):
    root = corpus_dir("conll2003")
    sents = native(CoNLL2003(data_dir=str(root)))
    assert [len(sents[s]) for s in SPLITS] == [14041, 3250, 3453]
    saved, parquet = save_copies(sents, tmp_path)
    for folder in (saved, parquet):
        dm = HFCorpus(source=str(folder), doc_id_column="doc_id")
        for split in SPLITS:
            assert key(dm.sentences(split)) == key(sents[split]), (folder, split)
        assert sum(len(s.spans) for s in dm.sentences("test")) == 5648
        assert dm.labels == ["LOC", "MISC", "ORG", "PER"]


@pytest.mark.corpus
@pytest.mark.slow
def test_fit_on_conll2003_copy(tmp_path, monkeypatch):
    root = corpus_dir("conll2003")
    sents = native(CoNLL2003(data_dir=str(root)))
    saved, _ = save_copies(sents, tmp_path / "copy")
    record = fit(tmp_path, monkeypatch, {"class_path": "ner_zoo.data.HFCorpus",
                                         "init_args": {"source": str(saved), "doc_id_column": "doc_id"}},
                 config="baselines/conll2003")
    assert record["status"] == "completed"


def test_hub_id_and_config_name_go_to_load_dataset(monkeypatch, sample_copies):
    """A hub id is passed to ``datasets.load_dataset`` with its configuration name (no network here: the call is
    answered with the local copy)."""
    import datasets

    _, saved, _ = sample_copies
    calls = []

    def fake(path, name=None, **kw):
        calls.append((path, name, kw.get("cache_dir")))
        return datasets.load_from_disk(str(saved))

    monkeypatch.setattr(datasets, "load_dataset", fake)
    dm = HFCorpus(source="someone/conll-copy", name="en", cache_dir="/tmp/hf-cache")
    assert len(dm.sentences("test")) == len(SampleCorpus().sentences("test"))
    assert calls == [("someone/conll-copy", "en", "/tmp/hf-cache")]
    assert dm.sentences("test")[0].doc_id == "someone/conll-copy:0"


def test_unreachable_hub_id_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"class_path": "ner_zoo.data.HFCorpus",
                                                        "init_args": {"source": "nobody/no-such-dataset-xyz",
                                                                      "cache_dir": str(tmp_path / "cache")}}))
    assert main(["fit", "--config", "quickstart", "--data", "data.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ner-zoo: error: nobody/no-such-dataset-xyz: cannot load")


# --- values checked, never guessed (issue 43 item 3; probes H1, H3 of robustness_4) ---------------------------------
def _dataset(tokens, tags, names=("O", "B-PER", "I-PER")):
    import datasets

    features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=list(names)))})
    return datasets.Dataset.from_dict({"tokens": tokens, "ner_tags": tags}, features=features)


@pytest.mark.parametrize("tags, expected", [
    ([[0, -1]], r"holds a value outside its 3 class names \(-1: expected 0..2; -1 is Hugging Face's 'no label'"),
    ([[0, 3]], r"holds a value outside its 3 class names \(3: expected 0..2\)"),
])
def test_hf_class_ids_outside_the_names_are_refused_naming_split_and_row(tags, expected):
    import datasets

    from ner_zoo.data.readers.hf import dataset_sentences

    ds = datasets.Dataset.from_dict({"tokens": [["Anna", "spoke"], ["Berg", "ran"]], "ner_tags": [[1, 0], *tags]})
    with pytest.raises(DataFormatError, match=r"^mine\[train\]#1: field 'ner_tags' " + expected):
        dataset_sentences(ds, "mine", "train", tag_names=["O", "B-PER", "I-PER"])  # integers named by the caller


@pytest.mark.parametrize("tokens, expected", [
    ("Paris", r"field 'tokens' holds str 'Paris', not a list of tokens"),
    (["a", ""], r"field 'tokens': token 1 is empty or blank \(''\)"),
    (["a", " "], r"field 'tokens': token 1 is empty or blank"),
    (["a", 5], r"field 'tokens': token 1 is 5, not a string"),
    (None, r"field 'tokens' holds NoneType"),
])
def test_hf_tokens_that_are_not_a_list_of_words_are_refused(tokens, expected):
    """A string was split into characters (H3); an empty token or a number passed."""
    from ner_zoo.data.readers.hf import dataset_sentences

    class Rows:  # what datasets hands over, without Arrow's own type coercion in the way
        column_names = ["tokens", "ner_tags"]
        features = {"ner_tags": type("F", (), {"feature": type("C", (), {"names": ["O", "B-PER"]})()})()}

        def __len__(self):
            return 2

        def __getitem__(self, key):
            return {"tokens": [["ok", "row"], tokens], "ner_tags": [[0, 0], [0, 0] if isinstance(tokens, list)
                                                                       else [0] * 5]}[key]

    with pytest.raises(DataFormatError, match=r"^mine\[dev\]#1: " + expected):
        dataset_sentences(Rows(), "mine", "dev")


def test_hf_string_tokens_column_from_a_real_dataset_and_an_empty_split(tmp_path):
    import datasets

    from ner_zoo.data.readers.hf import dataset_sentences, read_hf

    ds = datasets.Dataset.from_dict({"tokens": ["a b", "c"], "ner_tags": [["O"], ["O"]]})
    with pytest.raises(DataFormatError, match=r"#0: field 'tokens' holds str 'a b', not a list of tokens"):
        dataset_sentences(ds, "mine", "train")
    empty = _dataset([], [])
    with pytest.raises(DataFormatError, match=r"^mine\[test\]: the split is empty \(no rows\)"):
        dataset_sentences(empty, "mine", "test")
    _dataset([["Anna"]], [[-1]]).save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(DataFormatError, match=r"saved\[train\]#0: field 'ner_tags' holds a value outside"):
        read_hf(tmp_path / "saved", split="train")
