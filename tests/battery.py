"""The generic test battery every model of the zoo passes.

Subclass :class:`ModelBattery` in ``tests/test_model_<name>.py``, set ``model`` (a ``class_path`` /
``init_args`` dict with a tiny configuration) and optionally ``data``; pytest collects the tests:
forward (finite loss, gradients), decode (one prediction per sentence, valid spans), a short fit that
lowers the loss, overfitting one 4-sentence batch to F1 = 1, save -> load in a fresh model -> identical
predictions, and ``fit --print_config``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

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
#: a tiny nested corpus (``tests/fixtures/nested``) for the nested-span models
NESTED_DATA = {"class_path": "ner_zoo.data.JsonDataModule",
               "init_args": {"data_dir": str(Path(__file__).resolve().parent / "fixtures" / "nested"),
                             "train_file": "train.jsonlines", "dev_file": "dev.jsonlines",
                             "test_file": "test.jsonlines", "batch_size": 8}}

#: built (model, data module, torch RNG state after the build) per battery config, once per test process
_BUILT: dict[str, tuple] = {}


def build(model: dict, data: dict, tmp_path: Path, trainer: dict | None = None, subcommand: str | None = None):
    """Instantiate model, data and trainer through the real CLI (as ``ner-zoo`` does), without running."""
    config = {"model": model, "data": data, "trainer": {**TINY_TRAINER, **(trainer or {}),
                                                        "default_root_dir": str(tmp_path)},
              "checkpoint": {"dirpath": str(tmp_path / "ckpt"), "filename": "best"}}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "input-config.yaml"
    path.write_text(yaml.safe_dump(config))
    args = ([subcommand] if subcommand else []) + ["--config", str(path)]
    cli = cli_in_process(args, run=subcommand is not None)
    if subcommand is None:  # outside a Trainer the data module is told which model it feeds
        cli.datamodule.use_model(cli.model)
    return cli


class ModelBattery:
    model: dict = {}
    data: dict = SAMPLE_DATA
    # Adam steps on one 4-sentence batch, at most; the fit stops at F1 = 1. Measured on two kernel sets (AVX2;
    # SSE4.1 with ATEN_CPU_CAPABILITY=default), F1 = 1 came by step 10-40 for most models, 110 at the latest
    # (HCR, flat Locate-and-Label), 90 for the flat biaffine model at lr 0.003: the budget is 2.7x the slowest.
    overfit_max_steps: int = 300
    overfit_lr: float = 0.03
    overfit_f1: bool = True  # False: only the loss must halve, in overfit_max_steps (say why where it is set)

    def cli_for(self, tmp_path, **kw):
        """The CLI of ``fit`` built (not run) for this battery's model and data: ``.model``, ``.datamodule``,
        ``.trainer``; ``kw`` adds to the config (e.g. ``trainer={"max_epochs": 3}``)."""
        return build(copy.deepcopy(self.model), copy.deepcopy(self.data), tmp_path, **kw)

    def built_for(self, tmp_path):
        """``cli_for(tmp_path)``'s model and data module (``.model``, ``.datamodule``; no trainer), built once per
        config in this test process under ``torch.manual_seed(0)`` and deep-copied for each caller, with the torch
        RNG state as it was right after the build: the same model, data and random stream as a fresh seeded build,
        without a jsonargparse parse per test (forward, decode and overfit each built their own before)."""
        key = json.dumps([self.model, self.data], sort_keys=True, default=str)
        if key not in _BUILT:
            torch.manual_seed(0)
            cli = self.cli_for(tmp_path)
            _BUILT[key] = (cli.model, cli.datamodule, torch.get_rng_state())
        model, dm, rng = _BUILT[key]
        model, dm = copy.deepcopy((model, dm))  # together: the data module's reference to its model stays its copy
        torch.set_rng_state(rng)
        return SimpleNamespace(model=model, datamodule=dm)

    def batch_for(self, cli):
        """The first validation batch of ``cli``'s data, built by the model's collator."""
        dm = cli.datamodule
        dm.setup("fit")
        return next(iter(dm.val_dataloader()))

    def test_forward(self, tmp_path):
        cli = self.built_for(tmp_path)
        model = cli.model.train()
        batch = next(iter(cli.datamodule.train_dataloader()))
        loss = model.compute_loss(batch)
        assert loss.ndim == 0 and torch.isfinite(loss)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert any(g is not None and g.abs().sum() > 0 for g in grads)

    def test_decode(self, tmp_path):
        cli = self.built_for(tmp_path)
        model = cli.model.eval()
        batch = self.batch_for(cli)
        preds = model.decode(batch)
        assert len(preds) == len(batch.sentences)
        for sent, pred in zip(batch.sentences, preds):
            if model.is_pos:
                assert len(pred) == len(sent)
            else:
                for sp in pred:
                    assert isinstance(sp, Span) and 0 <= sp.start < sp.end <= len(sent)
                    assert sp.label in model.vocabs.labels

    def test_overfits_four_sentences(self, tmp_path):
        """Training on one batch of 4 sentences halves its loss and reaches F1 = 1 on it: the model can learn.

        The verdict must not depend on float rounding: the step at which F1 = 1 comes differs between CPU kernel
        sets (AVX2, AVX-512, AMX round differently), so the fit runs until F1 = 1, up to ``overfit_max_steps``,
        a budget several times what any kernel set measured needs (``make test-kernels``)."""
        model, batch = self._overfit_setup(tmp_path)
        steps = self.overfit_max_steps
        result = overfit(model, batch, lr=self.overfit_lr, max_steps=steps, until_f1=self.overfit_f1)
        assert result.loss < 0.5 * result.before, f"loss {result.before:.4g} -> {result.loss:.4g}: not learning"
        if self.overfit_f1:
            assert result.fitted_at is not None, (f"F1 < 1 on the 4 training sentences after {steps} steps "
                                                  f"(loss {result.before:.4g} -> {result.loss:.4g})")

    def _overfit_setup(self, tmp_path):
        cli = self.built_for(tmp_path)  # seeded: as torch.manual_seed(0) then cli_for(tmp_path)
        setup_for_fit(cli)
        model = cli.model
        sents = [s for s in cli.datamodule.sentences("train") if s.spans or model.is_pos][:4]
        return model, model.collate(list(enumerate(sents)))

    def test_fit_lowers_loss_save_load_predict(self, tmp_path):
        cli = self.cli_for(tmp_path, trainer={"max_epochs": 3})
        model, dm = cli.model, cli.datamodule
        batch = model.collate(list(enumerate(dm.sentences("train")[:8])))
        with torch.no_grad():
            before = model.eval().compute_loss(batch).item()
        cli.trainer.fit(model, datamodule=dm)
        with torch.no_grad():
            after = model.eval().compute_loss(batch).item()
        # 3 epochs cut the loss on 8 training sentences to 5-46 % on two kernel sets; by a quarter at least is a
        # margin no CPU's rounding crosses, and a model that does not learn fails it
        assert after < 0.75 * before, f"loss {before:.4g} -> {after:.4g} after 3 epochs"
        ckpt = Path(cli.trainer.checkpoint_callback.best_model_path)
        assert ckpt.exists()
        metrics = cli.trainer.callback_metrics
        assert "val/f1" in metrics and torch.isfinite(metrics["val/f1"])
        from ner_zoo.training.inference import load_model, predict

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
    """What ``fit`` does before the first step, without a Trainer: the data module's ``setup("fit")`` and the
    model's :meth:`~ner_zoo.training.base.NERModule.prepare` (pretrained vectors, document context, ...)."""
    from ner_zoo.training.base import SplitSentences

    dm = cli.datamodule
    dm.setup("fit")
    cli.model.prepare(dm.sentences("train"), SplitSentences(dm))


class OverfitResult(NamedTuple):
    before: float  # the batch's loss before the first step (eval mode)
    loss: float  # after the last step (eval mode)
    fitted_at: int | None  # the first checked step with predictions equal to the gold, or None


def overfit(model, batch, *, lr: float, max_steps: int, until_f1: bool = True, check_every: int = 10) -> OverfitResult:
    """Adam on one batch until the model's predictions on it equal the gold (checked every ``check_every`` steps),
    or ``max_steps``. With ``until_f1=False`` all ``max_steps`` are taken and only the loss is measured."""
    def loss_now() -> float:
        with torch.no_grad():
            return model.eval().compute_loss(batch).item()

    def fitted() -> bool:
        with torch.no_grad():
            preds = model.eval().decode(batch)
        gold = model.gold(batch)
        return preds == gold if model.is_pos else [sorted(p) for p in preds] == [sorted(g) for g in gold]

    before = loss_now()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    for step in range(1, max_steps + 1):
        model.train()
        opt.zero_grad()
        model.compute_loss(batch).backward()
        opt.step()
        if until_f1 and step % check_every == 0 and fitted():
            return OverfitResult(before, loss_now(), step)
    return OverfitResult(before, loss_now(), None)
