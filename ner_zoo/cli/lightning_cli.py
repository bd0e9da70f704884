"""The ``fit``/``validate``/``test``/``predict`` subcommands: LightningCLI with the zoo's defaults.

* ``data.vocabs`` is linked into ``model.init_args.vocabs`` when the classes are instantiated.
* A best-checkpoint callback on ``val/f1`` is always present (``--checkpoint.*`` options).
* Loggers come from YAML; a CSV logger is the default. A ``WandbLogger`` with no API key configured runs
  offline (nothing hangs without network) and gets its name, group and tags from the model and dataset.
* The fully resolved config is saved to the run folder and sent to every logger.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback

from ner_zoo.data.datamodule import NERDataModule
from ner_zoo.training.base import NERModule
from ner_zoo.training.records import RunRecorder


class LogConfigCallback(SaveConfigCallback):
    """Save ``config.yaml`` in the run folder and log the resolved config to every logger."""

    def save_config(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        config = json.loads(self.parser.dump(self.config, format="json"))
        for logger in trainer.loggers:
            logger.log_hyperparams({"config": config})
        for callback in trainer.callbacks:
            if isinstance(callback, RunRecorder):
                callback.config = config
                callback.config_files = [str(getattr(f, "relative", f)) for f in self.config.get("config") or []]


def wandb_has_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    return netrc.exists() and "api.wandb.ai" in netrc.read_text(errors="ignore")


def _short(class_path: str | None) -> str:
    return (class_path or "unknown").rsplit(".", 1)[-1]


class NERZooCLI(LightningCLI):
    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("subclass_mode_model", True)
        kwargs.setdefault("subclass_mode_data", True)
        kwargs.setdefault("save_config_callback", LogConfigCallback)
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault("seed_everything_default", 42)
        kwargs.setdefault("parser_kwargs", {"default_env": False})
        kwargs.setdefault("auto_configure_optimizers", False)
        super().__init__(NERModule, NERDataModule, *args, **kwargs)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments("data.vocabs", "model.init_args.vocabs", apply_on="instantiate")
        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.add_lightning_class_args(RunRecorder, "record")
        parser.add_argument("--variant", type=Optional[str], default=None,
                            help="name of an ablation/variant, recorded in results.json for `ner-zoo compare`")
        parser.add_argument("--test_after_fit", type=bool, default=False,
                            help="after fit, test the best checkpoint (on val/f1) on the test split")
        parser.set_defaults({
            "checkpoint.monitor": "val/f1", "checkpoint.mode": "max", "checkpoint.save_last": True,
            "checkpoint.filename": "best-{epoch:02d}",
            "trainer.default_root_dir": "runs",
            "trainer.logger": {"class_path": "lightning.pytorch.loggers.CSVLogger",
                               "init_args": {"save_dir": "runs"}},
        })

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand] if self.subcommand else self.config
        model = _short(config.get("model", {}).get("class_path"))
        data = _short(config.get("data", {}).get("class_path"))
        loggers = config.get("trainer", {}).get("logger")
        for logger in loggers if isinstance(loggers, list) else [loggers]:
            if not hasattr(logger, "get") or not str(logger.get("class_path", "")).endswith("WandbLogger"):
                continue
            args = logger["init_args"]
            if not wandb_has_key() and os.environ.get("WANDB_MODE") not in ("online", "disabled"):
                args["offline"] = True
            if args.get("name") in (None, "", "lightning_logs"):
                args["name"] = f"{model}-{data}-seed{config.get('seed_everything')}"
            extra = dict(logger.get("dict_kwargs") or {})
            extra.setdefault("group", data)
            tags = list(extra.get("tags") or [])
            extra["tags"] = tags + [t for t in (model, data, f"seed{config.get('seed_everything')}") if t not in tags]
            logger["dict_kwargs"] = extra

    def after_fit(self) -> None:
        if self.config[self.subcommand].get("test_after_fit"):
            ckpt = "best" if self.trainer.checkpoint_callback and self.trainer.checkpoint_callback.best_model_path else None
            self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=ckpt)


def cli_in_process(args: list[str], cli_class: type[NERZooCLI] = NERZooCLI, **kwargs: Any) -> NERZooCLI:
    """``ner-zoo <args>`` inside this Python process (notebooks, tests, tools); returns the CLI object.

    LightningCLI also reads ``sys.argv``, which in a notebook kernel or under pytest holds that program's own
    arguments, so it is set to ``["ner-zoo"]`` for the call. ``kwargs`` go to the CLI class (e.g. ``run``).
    """
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        return cli_class(args=args, **kwargs)
    finally:
        sys.argv = argv
