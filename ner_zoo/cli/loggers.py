"""The loggers of a CLI run: the run's identity (flat keys a dashboard groups runs by), loggers pointed into the
run folder (or named after the variant), W&B names, groups, tags and offline mode, and the resolved config saved
and sent to every logger (:class:`LogConfigCallback`). Used by :class:`~ner_zoo.cli.lightning_cli.NERZooCLI`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.cli import SaveConfigCallback

from ner_zoo.dotted import resolve, short_name
from ner_zoo.results.wandb_export import offline_note, wandb_login
from ner_zoo.run.folder import FitRun, process_rank
from ner_zoo.run.recorder import RunRecorder, config_hash, encoder_name, overlay_names


def run_identity(config: dict) -> dict:
    """The flat keys a dashboard groups runs by, from a resolved config (a plain dict).

    ``overlays`` are the ``configs/experiments/*.yaml`` files among the ``--config`` files.
    """
    model_cfg = config.get("model") or {}
    overlays = overlay_names([str(p) for p in config.get("config") or []])
    data_cfg = config.get("data") or {}
    return {"model": _short(model_cfg.get("class_path")), "dataset": _data_name(data_cfg),
            "variant": config.get("variant"), "seed": config.get("seed_everything"),
            "encoder": encoder_name(model_cfg.get("init_args") or {}), "overlays": "+".join(overlays) or None,
            "recipe": config_hash(config)}


def _paper(class_path: str | None) -> str:
    """The model file (one per paper) defining ``class_path``: ``ner_zoo.models.PSA`` -> ``psa``."""
    try:
        return short_name(resolve(class_path or "").__module__)
    except (ImportError, AttributeError):
        return _short(class_path)


def _tag(key: str, value: Any) -> str:
    return f"{key}:{value}"[:64]  # W&B's tag length limit


def _data_name(data_cfg: dict) -> str:
    from ner_zoo.run.folder import data_name

    return data_name(data_cfg)


def _short(class_path: str | None) -> str:
    return short_name(class_path or "unknown")


class LogConfigCallback(SaveConfigCallback):
    """Save ``config.yaml`` in the run's folder and log the resolved config (and its flat keys) to every logger."""

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self.already_saved:
            return
        recorder = next((c for c in trainer.callbacks if isinstance(c, RunRecorder)), None)
        if stage != "fit" and not (recorder and recorder.path):  # validate/test: only beside --record.path
            return
        config = json.loads(self.parser.dump(self.config, format="json"))
        if recorder is not None:
            recorder.config = config
            recorder.config_files = [str(getattr(f, "relative", f)) for f in self.config.get("config") or []]
        folder = recorder.run_dir(trainer) if recorder else Path(trainer.log_dir)  # collectives under DDP
        if trainer.is_global_zero:
            folder.mkdir(parents=True, exist_ok=True)
            self.parser.save(self.config, str(folder / self.config_filename), skip_none=False,
                             overwrite=self.overwrite, multifile=self.multifile)
            self.save_config(trainer, pl_module, stage)
            self.already_saved = True
        self.already_saved = trainer.strategy.broadcast(self.already_saved)

    def save_config(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        config = json.loads(self.parser.dump(self.config, format="json"))
        for logger in trainer.loggers:
            logger.log_hyperparams({"config": config, **run_identity(config)})
            if type(logger).__name__ == "WandbLogger":
                logger.experiment.define_metric("val/f1", summary="max")


def configure_loggers(config: Any, run: dict, fit_run: FitRun | None) -> bool | str:
    """Loggers (in the parsed ``config``, changed in place) into the run folder, or named after the variant; W&B
    identity, offline mode and one W&B run per training run. Returns a W&B logger's ``log_model`` (Lightning's is
    turned off: :class:`~ner_zoo.run.wandb_run.WandbModelArtifact` does it instead)."""
    log_model: bool | str = False
    for logger in logger_configs(config):
        args, kind = logger["init_args"], str(logger.get("class_path", ""))
        if fit_run is not None and fit_run.managed:
            into_run_folder(logger, fit_run)
        elif kind.endswith(("CSVLogger", "TensorBoardLogger")) and run["variant"]:
            name = args.get("name") or "lightning_logs"
            args["name"] = name if name.endswith(f"-{run['variant']}") else f"{name}-{run['variant']}"
        if kind.endswith("WandbLogger"):
            configure_wandb(logger, config, run)
            log_model = args.get("log_model") or False
            args["log_model"] = False  # Lightning's logs every checkpoint, each claiming "best"; offline, fails
            if fit_run is not None and fit_run.wandb_id:  # one W&B run per training run, every segment
                args["id"] = fit_run.wandb_id
                logger["dict_kwargs"] = {**dict(logger.get("dict_kwargs") or {}), "resume": "allow"}
    return log_model


def logger_configs(config: Any) -> list:
    """The parsed logger configs (``class_path``/``init_args``) of ``trainer.logger``."""
    loggers = config.get("trainer", {}).get("logger")
    return [lg for lg in (loggers if isinstance(loggers, list) else [loggers]) if hasattr(lg, "get")]


def configure_wandb(logger: Any, config: Any, run: dict) -> None:
    """Offline when wandb has no key for its server (:func:`~ner_zoo.results.wandb_export.wandb_login`), with one
    line saying so; name, group, job_type and tags from the run's identity (kept when set)."""
    args = logger["init_args"]
    login = wandb_login()
    extra = dict(logger.get("dict_kwargs") or {})
    if login.forced_offline and not args.get("offline"):
        extra["mode"] = "offline"  # wandb.init's own argument: wandb read its environment already
        if process_rank() == 0:
            print(offline_note(login), file=sys.stderr)
    label = "-".join(x for x in (run["model"], run["variant"], run["dataset"]) if x)
    if args.get("name") in (None, "", "lightning_logs"):
        # a sweep agent sets WANDB_RUN_ID: trials of one seed need distinct names
        in_sweep = os.environ.get("WANDB_SWEEP_ID") and os.environ.get("WANDB_RUN_ID")
        trial = f"-{os.environ['WANDB_RUN_ID']}" if in_sweep else ""
        args["name"] = f"{label}-s{run['seed']}{trial}"
    trainer = config.get("trainer", {})
    accelerator = str(trainer.get("accelerator") or "auto")
    hardware = torch.cuda.get_device_name(0) if accelerator != "cpu" and torch.cuda.is_available() else "cpu"
    extra.setdefault("group", f"{label}-{run['recipe']}")
    extra.setdefault("job_type", run["variant"] or "main")
    tags = list(extra.get("tags") or [])
    new = [_tag("paper", _paper(config.get("model", {}).get("class_path"))), _tag("dataset", run["dataset"]),
           _tag("variant", run["variant"] or "main"), _tag("seed", run["seed"]),
           _tag("precision", trainer.get("precision") or "32-true"), _tag("hardware", hardware)]
    new += [_tag("overlay", o) for o in (run["overlays"] or "").split("+") if o]
    new += [_tag("encoder", run["encoder"])] if run["encoder"] else []
    extra["tags"] = tags + [t for t in new if t not in tags]
    logger["dict_kwargs"] = extra


def into_run_folder(logger: Any, fit_run: FitRun) -> None:
    """A logger's files into the run folder: ``csv/``, ``tensorboard/`` (a resumed segment in
    ``resume-step<N>/`` beside), ``wandb/``."""
    args, kind = logger["init_args"], str(logger.get("class_path", ""))
    if kind.endswith(("CSVLogger", "TensorBoardLogger")):
        args["save_dir"] = str(fit_run.run_dir)
        args["name"] = "csv" if kind.endswith("CSVLogger") else "tensorboard"
        args["version"] = f"resume-step{fit_run.resumed_step}" if fit_run.resumed_step is not None else ""
    elif kind.endswith("WandbLogger"):
        args["save_dir"] = str(fit_run.run_dir)
