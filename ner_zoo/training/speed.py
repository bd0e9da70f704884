"""Speed options a run turns on as callbacks (``--trainer.callbacks+=ner_zoo.training.<Name>``).

* :class:`HalfPrecisionLSTM`: with ``--trainer.precision bf16-mixed`` (or ``16-mixed``) on CUDA, the
  BiLSTMs and char BiLSTMs run in the autocast type (cuDNN's half-precision LSTM) instead of fp32. On CPU
  nothing changes: LSTMs stay fp32 under CPU autocast.
* :class:`CompileModules`: ``torch.compile`` of named sub-modules of the model (in place, so checkpoint
  keys do not change), e.g. ``encoder``.

Their measured effect is in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback


class HalfPrecisionLSTM(Callback):
    """Let every module with a ``half_on_cuda`` flag (``BiLSTMEncoder``, ``CharBiLSTM``) run its LSTM in the
    trainer's autocast type when its input is on CUDA."""

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        for module in pl_module.modules():
            if hasattr(module, "half_on_cuda"):
                module.half_on_cuda = True


class CompileModules(Callback):
    """``torch.compile`` the model's sub-modules named in ``modules`` (dotted paths, e.g. ``encoder``).

    Args:
        modules: attribute paths of the sub-modules to compile.
        dynamic: compile for varying sentence lengths (recommended: batches differ in length).
        mode: ``torch.compile`` mode (``None``: the default).
    """

    def __init__(self, modules: list[str], dynamic: bool = True, mode: str | None = None):
        self.names, self.dynamic, self.mode = list(modules), dynamic, mode

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        for name in self.names:
            pl_module.get_submodule(name).compile(dynamic=self.dynamic, mode=self.mode)  # AttributeError if absent
