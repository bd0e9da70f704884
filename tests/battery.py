"""The generic test battery every model of the zoo passes.

Subclass :class:`ModelBattery` in ``tests/test_model_<name>.py``, set ``model`` (a ``class_path`` /
``init_args`` dict with a tiny configuration) and optionally ``data``; pytest collects the tests:
forward (finite loss, gradients), decode (one prediction per sentence, valid spans), a short fit that
lowers the loss, save -> load in a fresh model -> identical predictions, and ``fit --print_config``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import yaml

from ner_zoo.cli.lightning_cli import cli_in_process
from ner_zoo.cli.main import main
from ner_zoo.data.schema import Span

TINY_TRAINER = {"max_epochs": 2, "accelerator": "cpu", "devices": 1, "logger": False,
                "enable_progress_bar": False, "enable_model_summary": False, "log_every_n_steps": 1,
                "num_sanity_val_steps": 0}
SAMPLE_DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 48}}


def build(model: dict, data: dict, tmp_path: Path, trainer: dict | None = None, subcommand: str | None = None):
    """Instantiate model, data and trainer through the real CLI (as ``ner-zoo`` does), without running."""
    config = {"model": model, "data": data, "trainer": {**TINY_TRAINER, **(trainer or {}),
                                                        "default_root_dir": str(tmp_path)},
              "checkpoint": {"dirpath": str(tmp_path / "ckpt"), "filename": "best"}}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "input-config.yaml"
    path.write_text(yaml.safe_dump(config))
    args = ([subcommand] if subcommand else []) + ["--config", str(path)]
    return cli_in_process(args, run=subcommand is not None)


class ModelBattery:
    model: dict = {}
    data: dict = SAMPLE_DATA

    def _cli(self, tmp_path, **kw):
        return build(copy.deepcopy(self.model), copy.deepcopy(self.data), tmp_path, **kw)

    def _batch(self, cli):
        dm = cli.datamodule
        dm.setup("fit")
        return next(iter(dm.val_dataloader()))

    def test_forward(self, tmp_path):
        cli = self._cli(tmp_path)
        model = cli.model.train()
        batch = next(iter(cli.datamodule.train_dataloader()))
        loss = model.compute_loss(batch)
        assert loss.ndim == 0 and torch.isfinite(loss)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert any(g is not None and g.abs().sum() > 0 for g in grads)

    def test_decode(self, tmp_path):
        cli = self._cli(tmp_path)
        model = cli.model.eval()
        batch = self._batch(cli)
        preds = model.decode(batch)
        assert len(preds) == len(batch.sentences)
        for sent, pred in zip(batch.sentences, preds):
            if model.is_pos:
                assert len(pred) == len(sent)
            else:
                for sp in pred:
                    assert isinstance(sp, Span) and 0 <= sp.start < sp.end <= len(sent)
                    assert sp.label in model.vocabs.labels

    def test_fit_save_load_predict(self, tmp_path):
        cli = self._cli(tmp_path, subcommand="fit", trainer={"max_epochs": 3})
        ckpt = Path(cli.trainer.checkpoint_callback.best_model_path)
        assert ckpt.exists()
        metrics = cli.trainer.callback_metrics
        assert "val/f1" in metrics and torch.isfinite(metrics["val/f1"])
        from ner_zoo.cli.predict import load_model, predict

        sentences = cli.datamodule.sentences("test")[:16]
        trained = type(cli.model).load_from_checkpoint(ckpt, weights_only=False)
        first = predict(trained, sentences, batch_size=5, accelerator="cpu")
        again = predict(load_model(ckpt), sentences, batch_size=7, accelerator="cpu")
        assert first == again and len(first) == len(sentences)

    def test_print_config(self, tmp_path, capsys):
        config = {"model": self.model, "data": self.data}
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(config))
        with pytest.raises(SystemExit) as stop:  # in-process: a subprocess would spend ~10 s importing torch
            main(["fit", "--config", str(path), "--print_config"])
        out = capsys.readouterr()
        assert stop.value.code in (0, None), out.err[-3000:]
        printed = yaml.safe_load(out.out)
        assert printed["model"]["class_path"] == self.model["class_path"]
        json.dumps(printed["model"])  # plain data, reusable as a config


def setup_for_fit(cli) -> None:
    """Run the data module's and the model's ``setup("fit")`` without a Trainer (the model's setup only reads
    ``trainer.datamodule``): vocabularies, pretrained vectors, document context indexes."""
    from types import SimpleNamespace

    cli.datamodule.setup("fit")
    cli.model._trainer = SimpleNamespace(datamodule=cli.datamodule)
    try:
        cli.model.setup("fit")
    finally:
        cli.model._trainer = None
