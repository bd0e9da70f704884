"""Hand-overs between layers are explicit calls (issue 31): importing ``ner_zoo.training`` sets nothing in another
module, the data module's column predictor is injected (or named), and the data module asks the model it feeds
for its collator instead of the model writing into the data module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lightning.pytorch as pl
import pytest

from ner_zoo.data import SampleCorpus

ROOT = Path(__file__).resolve().parents[1]

SNAPSHOT = """
import importlib, json, sys, types
for name in ("ner_zoo", "ner_zoo.data", "ner_zoo.data.predicted", "ner_zoo.data.datamodule", "ner_zoo.data.batching",
             "ner_zoo.modules", "ner_zoo.metrics", "ner_zoo.errors"):
    importlib.import_module(name)

def state():
    out = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("ner_zoo"):
            out[name] = {k: id(v) for k, v in vars(module).items()
                         if not isinstance(v, types.ModuleType)}  # a submodule bound on import is no hand-over
    return out

before = state()
importlib.import_module("ner_zoo.training")
after = state()
print(json.dumps(sorted(f"{m}.{k}" for m in before for k in before[m].keys() | after[m].keys()
                        if before[m].get(k) != after[m].get(k))))
"""


@pytest.mark.process
def test_importing_training_changes_no_global_of_another_module():
    out = subprocess.run([sys.executable, "-c", SNAPSHOT], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_column_predictor_is_injected(tmp_path):
    seen = []

    def predictor(sentences, ckpt):
        seen.append(ckpt)
        return [["X"] * len(s) for s in sentences]

    dm = SampleCorpus(max_sentences=4, predicted_columns={"guess": "some.ckpt"})
    dm.column_predictor = predictor
    sents = dm.sentences("train")
    assert seen == ["some.ckpt"] and all(s.columns["guess"] == ["X"] * len(s) for s in sents)


def test_the_default_predictor_is_named_not_lent():
    """The data layer names its default predictor (imported on first use) instead of holding a module global
    that importing ``ner_zoo.training`` fills in."""
    import pytest

    from ner_zoo.data import predicted
    from ner_zoo.errors import CheckpointError
    from ner_zoo.training.inference import predicted_column

    assert not hasattr(predicted, "column_predictor")
    assert predicted.resolve_predictor(predicted.DEFAULT_PREDICTOR) is predicted_column
    with pytest.raises(CheckpointError, match="missing.ckpt: checkpoint not found"):
        SampleCorpus(max_sentences=2, predicted_columns={"pos": "missing.ckpt"}).sentences("train")


class _Spy:
    def __init__(self, collate):
        self.collate, self.calls = collate, 0

    def __call__(self, items):
        self.calls += 1
        return self.collate(items)


def test_the_data_module_asks_the_trainer_model_for_its_collator(tmp_path):
    from ner_zoo.models import BiLSTMCRF
    from ner_zoo.training.words import Words

    dm = SampleCorpus(max_sentences=8, eval_batch_size=4)
    model = BiLSTMCRF(vocabs=dm.vocabs, words=Words(dim=4), lstm_hidden=4, char_encoder=None)
    model._collator = spy = _Spy(model.make_collator())
    assert not isinstance(dm.val_dataloader().collate_fn, _Spy)  # outside a Trainer, told nothing
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=tmp_path)
    trainer.validate(model, datamodule=dm)
    assert spy.calls == 2 and vars(dm).get("model_collate") is None  # asked, not handed over
    dm.use_model(model)  # outside a Trainer: the model it feeds, by a public call
    dm.trainer = None
    assert dm.val_dataloader().collate_fn is spy


