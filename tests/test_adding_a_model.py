"""The worked example of ``docs/adding_a_model.md`` works as printed: its model file (one base class and
``prepare``) passes the battery, and its config fits through ``ner-zoo fit``."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import yaml

from battery import ModelBattery  # noqa: F401  (the guide's block uses it)
from ner_zoo.cli.main import main

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "adding_a_model.md"
MODULE = "ner_zoo.models.window_tagger"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)


def _register() -> types.ModuleType:
    """The guide's model file as the module ``ner_zoo.models.window_tagger`` (as if saved there)."""
    module = types.ModuleType(MODULE)
    module.__file__ = str(GUIDE)
    sys.modules[MODULE] = module
    exec(compile(blocks("python")[0], str(GUIDE), "exec"), module.__dict__)
    return module


_register()
exec(blocks("python")[1], globals())  # the guide's battery subclass, TestWindowTagger


def test_guide_model_is_one_base_class_and_prepare():
    cls = sys.modules[MODULE].WindowTagger
    from ner_zoo.training.tagger import SequenceTagger

    assert cls.__bases__ == (SequenceTagger,)
    assert {k for k, v in vars(cls).items() if callable(v) and not k.startswith("_")} == {"prepare", "emissions"}
    assert issubclass(TestWindowTagger, ModelBattery)  # noqa: F821  (defined by the guide's block)


def test_guide_config_fits(tmp_path):
    config = yaml.safe_load(blocks("yaml")[0])
    assert config["model"]["class_path"] == f"{MODULE}.WindowTagger"
    path = tmp_path / "sample.yaml"
    path.write_text(yaml.safe_dump(config))
    code = main(["fit", "--config", str(path), "--trainer.max_epochs", "2", "--trainer.logger", "false",
                 "--trainer.default_root_dir", str(tmp_path), "--checkpoint.dirpath", str(tmp_path / "ckpt"),
                 "--trainer.enable_progress_bar", "false"])
    assert code == 0
    record = json.loads(next(tmp_path.rglob("results.json")).read_text())
    assert record["model"] == "WindowTagger" and record["status"] == "completed"
    assert record["best_val_f1"] is not None and record["best_val_f1"] > 0
