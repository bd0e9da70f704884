"""``docs/adding_a_model.md`` runs as printed. Its blocks are, in order: the model file (python), the config
(yaml), the registry entry for ``ner_zoo/testing/tiny.py`` (python) and the battery test file (python). This
test writes the model file and the config to a temporary folder, loads the file as
``ner_zoo.models.window_tagger`` (as if saved there), adds the entry to ``TINY`` as the guide says, runs the
guide's battery on it (forward, decode, overfit, fit -> save -> load -> predict, ``--print_config``), puts the
config through the config audit of ``tests/test_configs.py`` and fits it with ``ner-zoo fit``, then predicts
raw text with ``ner-zoo predict``, both in-process."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from unittest.mock import patch

import pytest

from battery import ModelBattery
from ner_zoo.cli.main import main
from ner_zoo.testing import tiny
from ner_zoo.testing.tiny import model_module, unregistered, zoo_modules

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "adding_a_model.md"
MODULE = "ner_zoo.models.window_tagger"


SPAN_MODULE = "ner_zoo.models.endpoint_span"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), flags=re.S | re.M)


MODEL_FILE, ENTRY, BATTERY = blocks("python")
(CONFIG,) = blocks("yaml")
(SPAN_FILE,) = blocks("python span")  # the span-model sketch
REGISTRY_ENTRY = eval("{" + ENTRY + "}", vars(tiny).copy())  # the entry as pasted into TINY's dict
with patch.dict(tiny.TINY, REGISTRY_ENTRY):  # the battery block reads it at class definition
    exec(compile(BATTERY, f"{GUIDE}:battery", "exec"), globals())  # defines TestWindowTagger


@pytest.fixture(scope="module", autouse=True)
def guide_files(tmp_path_factory):
    """The model file and the config saved as the guide says (in a temporary folder), the module loaded."""
    root = tmp_path_factory.mktemp("guide")
    (root / "models").mkdir()
    (root / "models" / "window_tagger.py").write_text(MODEL_FILE)
    (root / "models" / "endpoint_span.py").write_text(SPAN_FILE)
    model_module(root / "models" / "endpoint_span.py")
    (root / "configs" / "window_tagger").mkdir(parents=True)
    (root / "configs" / "window_tagger" / "sample.yaml").write_text(CONFIG)
    module = model_module(root / "models" / "window_tagger.py")
    yield root, module
    sys.modules.pop(MODULE, None)
    sys.modules.pop(SPAN_MODULE, None)
    import ner_zoo.models

    ner_zoo.models.__path__.remove(str((root / "models").resolve()))


def test_guide_blocks_are_the_model_the_entry_and_the_battery(guide_files):
    _, module = guide_files
    from ner_zoo.training.tagger import SequenceTagger

    cls = module.WindowTaggerNet
    assert cls.__module__ == MODULE and cls.__bases__ == (SequenceTagger,)
    assert module.WindowTagger.network is cls  # the LightningModule the config names hosts the network
    assert {k for k, v in vars(cls).items() if callable(v) and not k.startswith("_")} == {"prepare", "emissions"}
    assert REGISTRY_ENTRY == {"window_tagger": (f"{MODULE}.WindowTagger", REGISTRY_ENTRY["window_tagger"][1])}
    assert issubclass(TestWindowTagger, ModelBattery)  # noqa: F821  (defined by the guide's block)
    assert TestWindowTagger.model["class_path"] == f"{MODULE}.WindowTagger"  # noqa: F821


def test_guide_model_fails_the_registry_test_until_its_entry_is_added(guide_files):
    _, module = guide_files
    modules = zoo_modules() + [module]
    assert unregistered(modules) == [f"{MODULE}.WindowTagger"]
    with patch.dict(tiny.TINY, REGISTRY_ENTRY):
        assert unregistered(modules) == []


def test_guide_config_passes_the_config_audit(guide_files):
    from test_configs import CONFIGS, audit_config

    root, _ = guide_files
    config = [root / "configs" / "window_tagger" / "sample.yaml"]
    audit_config(config, Path("no-transformer-in-this-config"), then=[CONFIGS / "logging" / "wandb.yaml"])


def test_guide_config_fits_and_predicts(guide_files, tmp_path, monkeypatch, capsys):
    """The guide's commands, run in a fresh folder (where the run folder and checkpoint land as it says)."""
    root, _ = guide_files
    monkeypatch.chdir(tmp_path)
    code = main(["fit", "--config", str(root / "configs" / "window_tagger" / "sample.yaml"),
                 "--trainer.max_epochs", "2", "--trainer.enable_progress_bar", "false"])
    assert code == 0, capsys.readouterr().err
    (run,) = (tmp_path / "runs" / "WindowTagger-SampleCorpus").iterdir()
    record = json.loads((run / "results.json").read_text())
    assert record["model"] == "WindowTagger" and record["status"] == "completed"
    assert record["best_val_f1"] is not None and record["best_val_f1"] > 0
    (tmp_path / "sentences.txt").write_text("Peter Blackburn visited Paris on Monday .\n")
    code = main(["predict", "--model", str(run / "checkpoints" / "best.ckpt"), "--input", "sentences.txt",
                 "--output", "pred.jsonl"])
    assert code in (0, None), capsys.readouterr().err
    (row,) = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert row["text"] == "Peter Blackburn visited Paris on Monday ." and "entities" in row


class TestGuideSpanSketch(ModelBattery):
    """The span-model sketch of the guide's section 1 passes the battery (F1 = 1 on the 4 sentences too)."""

    model = {"class_path": f"{SPAN_MODULE}.EndpointSpanClassifier",
             "init_args": {"words": {"dim": 16}, "optimizer": {"class_path": "torch.optim.Adam",
                                                               "init_args": {"lr": 0.05}}}}

    def test_contract(self, tmp_path):
        """``(grid, logits)``: ``logits [B, S, len(labels) + 1]`` on the grid's ``S`` spans; ``self.loss``: a
        SpanLoss."""
        from ner_zoo.modules.span_losses import SpanLoss
        from ner_zoo.modules.spans import SpanGrid

        cli = self.cli_for(tmp_path)
        model = cli.model
        batch = self.batch_for(cli)
        grid, logits = model.span_logits(batch)
        assert isinstance(grid, SpanGrid) and isinstance(model.loss, SpanLoss)
        assert logits.shape == (*grid.mask.shape, len(model.vocabs.labels) + 1)
