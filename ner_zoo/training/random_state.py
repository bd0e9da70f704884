"""The random state (dropout masks) of every rank in each checkpoint, restored when a fit resumes, so that the
resumed run continues as the uninterrupted one would. Added to every fit by
:meth:`NERModule.configure_callbacks <ner_zoo.training.base.NERModule.configure_callbacks>`; the state is
stored under the checkpoint's ``ner_zoo_rng`` key (the same as before it was a callback)."""

from __future__ import annotations

import random
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_warn

KEY = "ner_zoo_rng"


class RandomState(Callback):
    """Saves the random state of every rank; restores this rank's at the start of a resumed fit."""

    def __init__(self) -> None:
        self.to_restore: dict | None = None

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict) -> None:
        # every rank runs this hook (Trainer.save_checkpoint dumps on all ranks, rank 0 writes)
        state = {"torch": torch.get_rng_state(), "python": random.getstate(),
                 "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}
        ranks = [state]
        if torch.distributed.is_available() and torch.distributed.is_initialized() \
                and torch.distributed.get_world_size() > 1:
            ranks = [None] * torch.distributed.get_world_size()
            torch.distributed.all_gather_object(ranks, state)
        checkpoint[KEY] = {"ranks": ranks}

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict) -> None:
        self.to_restore = checkpoint.get(KEY)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        rng, self.to_restore = self.to_restore, None
        if rng is not None and "ranks" in rng:  # one state per rank (older checkpoints: one state)
            ranks = rng["ranks"]
            if len(ranks) != trainer.world_size:
                rank_zero_warn(f"checkpoint holds the random state of {len(ranks)} process(es), this run has "
                               f"{trainer.world_size}: dropout masks will differ from the interrupted run")
            rng = ranks[trainer.global_rank % len(ranks)]
        if rng is not None:  # resuming fit: restored here, after the loaders were set up as in the first run
            torch.set_rng_state(rng["torch"])
            random.setstate(rng["python"])
            if rng["cuda"] and torch.cuda.is_available() and len(rng["cuda"]) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(rng["cuda"])
