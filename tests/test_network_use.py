"""A paper's network is used without Lightning: in a fresh process, every model of the tiny registry loads from a
checkpoint as its network alone (``load_network``) and through ``ner_zoo.load``, tags text, and neither Lightning
nor torchmetrics is ever imported; an exported folder too. The host (``ner_zoo.models.<Paper>``) is still the
LightningModule that fits it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from battery import build
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

from ner_zoo.testing.tiny import TINY, TRANSFORMER_MODELS, tiny_model

DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 24}}
HEAVY = ("lightning", "pytorch_lightning", "torchmetrics")
USE = """
import sys
from ner_zoo.training.inference import load_network
import ner_zoo
net = load_network(sys.argv[1])
batch = net.collate([(0, __import__("ner_zoo.data.schema", fromlist=["Sentence"]).Sentence("Anna Berg visited Paris .".split()))])
net.predict(batch)
entities = ner_zoo.load(sys.argv[1], device="cpu")("Anna Berg visited Paris. Peter Blackburn left.")
print(type(net).__mro__[1].__name__, isinstance(entities, list))
print(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r}))
"""


def checkpoint_of(model, path: Path) -> Path:
    """What ``ner-zoo fit`` writes for ``model`` (weights, settings, stamps), without a Trainer."""
    from ner_zoo.checkpoints import entries as checkpoint

    ckpt = {"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}
    checkpoint.stamp(model, ckpt)
    torch.save(ckpt, path)
    return path


def run_fresh(code: str, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.process
@pytest.mark.parametrize("name", list(TINY))
def test_network_loads_and_tags_without_lightning(name, tiny_bert_dir, tmp_path):  # noqa: F811
    import lightning.pytorch as pl

    cli = build(tiny_model(name, tiny_bert_dir if name in TRANSFORMER_MODELS else None), copy.deepcopy(DATA), tmp_path)
    assert isinstance(cli.model, pl.LightningModule)  # the config's class: the host that fits the network
    ckpt = checkpoint_of(cli.model, tmp_path / "model.ckpt")
    out = run_fresh(USE.format(heavy=HEAVY), str(ckpt))
    assert out[-1] == "[]", out  # neither Lightning nor torchmetrics
    assert out[-2].split()[1] == "True"


@pytest.mark.process
def test_exported_folder_loads_without_lightning(tmp_path):
    from ner_zoo.api.export import export

    cli = build(tiny_model("bilstm_crf"), copy.deepcopy(DATA), tmp_path)
    folder = export(checkpoint_of(cli.model, tmp_path / "model.ckpt"), tmp_path / "exported")
    code = ("import sys, ner_zoo; t = ner_zoo.load(sys.argv[1], device='cpu'); t('Anna Berg visited Paris.'); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))")
    assert run_fresh(code, str(folder)) == ["[]"]


@pytest.mark.process
def test_a_model_file_imports_no_lightning_until_its_host_is_named():
    code = ("import sys; from ner_zoo.models import hcr; net = hcr.HCRNet; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})); "
            "import lightning.pytorch as pl; print(issubclass(hcr.HCR, pl.LightningModule), hcr.HCR.network is net)")
    out = run_fresh(code)
    assert out == ["[]", "True True"]
