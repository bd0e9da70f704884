"""Checkpoints saved by older code load and predict as they did: one tiny checkpoint of every model (and of the
four models with an optional transformer, with one), written by the code of commit 93be3f5, before the
TokenEncoder renamed the model attributes (``tests/fixtures/checkpoints_v3/make_checkpoints.py`` regenerates them
and the predictions and losses stored beside them)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
import torch
from battery import build
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

from ner_zoo.checkpoints.migrations import migrate_state_dict
from ner_zoo.training.inference import load_model, predict

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints_v3"
sys.path.insert(0, str(FIXTURES))
from make_checkpoints import BERT, DATA, configs, loss, sentences  # noqa: E402

EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _with_bert(name: str, bert: Path, tmp_path: Path) -> Path:
    """The stored checkpoint with the tiny BERT's directory put back into its hyper-parameters."""
    ckpt = torch.load(FIXTURES / f"{name}.ckpt", weights_only=False)
    ckpt["hyper_parameters"] = json.loads(json.dumps(ckpt["hyper_parameters"]).replace(BERT, str(bert)))
    path = tmp_path / f"{name}.ckpt"
    torch.save(ckpt, path)
    return path


@pytest.fixture(scope="module")
def dev(tiny_bert_dir, tmp_path_factory):  # noqa: F811
    """The sentences the stored predictions are of (the sample corpus, as the script read it)."""
    model = configs(str(tiny_bert_dir))["bilstm_crf"]
    return sentences(build(model, copy.deepcopy(DATA), tmp_path_factory.mktemp("dev")).datamodule)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_old_checkpoint_loads_and_predicts_as_before(name, tiny_bert_dir, dev, tmp_path):  # noqa: F811
    model = load_model(_with_bert(name, tiny_bert_dir, tmp_path))
    got = predict(model, copy.deepcopy(dev), batch_size=5, accelerator="cpu")
    assert [[list(s) for s in p] for p in got] == EXPECTED[name]["predictions"]
    assert loss(model, copy.deepcopy(dev)) == pytest.approx(EXPECTED[name]["loss"], rel=1e-5, abs=1e-6)


def test_every_model_of_the_registry_has_an_old_checkpoint(tiny_bert_dir):  # noqa: F811
    assert set(configs(str(tiny_bert_dir))) == set(EXPECTED)


@pytest.fixture(scope="module")
def built(tiny_bert_dir, tmp_path_factory):  # noqa: F811
    """``built(name)``: the model of registry config ``name`` built through the CLI on the fixtures' data, once per
    module (the layout tests below only read its weight names and shapes; a build is a jsonargparse parse)."""
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            cache[name] = build(configs(str(tiny_bert_dir))[name], copy.deepcopy(DATA),
                                tmp_path_factory.mktemp(f"built-{name}")).model
        return cache[name]

    return get


@pytest.mark.parametrize("name", list(EXPECTED))
def test_current_layout_matches_no_migration(name, built):
    """A checkpoint in today's layout is left as it is: no rename row re-matches a current key."""
    model = built(name)
    state = model.state_dict()
    assert migrate_state_dict(type(model).__name__, state) == []


# --- checkpoints of 6c6ee43, before the networks were hosted by the task module (issue 42) --------------------------
V4 = Path(__file__).parent / "fixtures" / "checkpoints_v4"
V4_LAYOUT = json.loads((V4 / "layout.json").read_text())
V4_EXPECTED = json.loads((V4 / "expected.json").read_text())


def test_every_model_of_the_registry_has_a_pinned_v4_layout(tiny_bert_dir):  # noqa: F811
    assert set(configs(str(tiny_bert_dir))) == set(V4_LAYOUT)


@pytest.mark.parametrize("name", list(V4_LAYOUT))
def test_v4_layout_converts_to_the_host_and_to_the_network(name, built):
    """Every weight name and shape the old code wrote maps, through the one table, onto the task module's and onto
    the network's (nothing left over, nothing missing)."""
    from ner_zoo.checkpoints.migrations import network_state, to_host

    pinned = V4_LAYOUT[name]
    model = built(name)
    host = {k: list(v.shape) for k, v in model.state_dict().items()}
    net = {k: list(v.shape) for k, v in model.net.state_dict().items()}
    old = dict(pinned["state_dict"])
    to_host(type(model).__name__, old)
    assert old == host
    assert network_state(pinned["class"].rpartition(".")[2], pinned["state_dict"]) == net
    assert pinned["class"] == f"{type(model).__module__}.{type(model).__qualname__}"  # configs' names


@pytest.mark.parametrize("name", list(V4_EXPECTED))
def test_v4_checkpoint_loads_as_host_and_as_network_and_predicts_as_before(name, dev):
    from ner_zoo.training.inference import load_network

    path = V4 / f"{name}.ckpt"
    model = load_model(path)
    got = predict(model, copy.deepcopy(dev), batch_size=5, accelerator="cpu")
    assert [[list(s) for s in p] for p in got] == V4_EXPECTED[name]["predictions"]
    assert loss(model, copy.deepcopy(dev)) == pytest.approx(V4_EXPECTED[name]["loss"], rel=1e-5, abs=1e-6)
    net = load_network(path)
    net.add_context(copy.deepcopy(dev))
    assert type(net).__name__ == f"{type(model).__name__}Net"
    with torch.no_grad():
        decoded = net.decode(net.collate(list(enumerate(copy.deepcopy(dev)))))
    assert [[list(s) for s in p] for p in decoded] == V4_EXPECTED[name]["predictions"]
    assert loss(net, copy.deepcopy(dev)) == pytest.approx(V4_EXPECTED[name]["loss"], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_v3_checkpoint_loads_as_the_network_alone(name, tiny_bert_dir, dev, tmp_path):  # noqa: F811
    from ner_zoo.training.inference import load_network

    net = load_network(_with_bert(name, tiny_bert_dir, tmp_path))
    net.add_context(copy.deepcopy(dev))  # the sentences are their own document context, as predict indexes them
    assert loss(net, copy.deepcopy(dev)) == pytest.approx(EXPECTED[name]["loss"], rel=1e-5, abs=1e-6)
