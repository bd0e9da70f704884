"""The best checkpoint as a W&B model artifact, logged once when training ends (rank 0).

``log_model: true`` on a ``WandbLogger`` (``configs/logging/wandb.yaml``): the CLI turns Lightning's own upload
off (it logs every checkpoint callback's file, so ``last.ckpt`` would claim the alias ``best`` too, and it
refuses offline runs) and adds this callback. The artifact ``model-<run id>`` (type ``model``) gets the
best-on-dev checkpoint with the alias ``best``; ``log_model: all`` adds ``last.ckpt`` (the last state) as a
second version with the alias ``latest``. Offline, the artifact is written into the run's files and uploaded
by ``wandb sync`` with the run.
"""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback, ModelCheckpoint


class WandbModelArtifact(Callback):
    def __init__(self, log_model: bool | str = True):
        self.log_model = log_model

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.is_global_zero:
            return
        loggers = [lg for lg in trainer.loggers if type(lg).__name__ == "WandbLogger"]
        best = trainer.checkpoint_callback
        if not loggers or best is None:
            return
        import wandb

        run = loggers[0].experiment
        files = []
        if best.best_model_path and Path(best.best_model_path).is_file():
            score = None if best.best_model_score is None else float(best.best_model_score)
            files.append((best.best_model_path, ["best"], {"score": score, "monitor": best.monitor}))
        if self.log_model == "all":
            last = next((c.last_model_path or c.best_model_path for c in trainer.callbacks
                         if isinstance(c, ModelCheckpoint) and c is not best), None)
            if last and Path(last).is_file():
                files.append((last, ["latest"], {"global_step": trainer.global_step}))
        for path, aliases, meta in files:
            artifact = wandb.Artifact(f"model-{run.id}", type="model",
                                      metadata={"file": Path(path).name, **meta})
            artifact.add_file(path, name="model.ckpt")
            run.log_artifact(artifact, aliases=aliases)
