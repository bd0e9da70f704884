"""Learning-rate schedules used by the papers, as LightningCLI-injectable scheduler classes.

Each class states its ``interval`` (``epoch`` or ``step``); :class:`ner_zoo.training.base.NERModule`
reads it when it builds the Lightning scheduler config.
"""

from __future__ import annotations

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


class InverseTimeDecay(LambdaLR):
    """``lr_t = lr_0 / (1 + decay * t)`` with ``t`` the epoch (Lample et al. 2016; Ma & Hovy 2016).

    Args:
        optimizer: the wrapped optimiser.
        decay: the decay rate (0.05 in most BiLSTM-CRF papers).
    """

    interval = "epoch"

    def __init__(self, optimizer: Optimizer, decay: float = 0.05):
        self.decay = decay
        super().__init__(optimizer, lambda epoch: 1.0 / (1.0 + decay * epoch))


class LinearWarmupDecay(LambdaLR):
    """Linear warm-up over ``warmup`` (a fraction of all steps, or a step count), then linear decay to 0.

    The total number of steps is filled in from the Trainer (``estimated_stepping_batches``) by the
    module before the first step, unless ``total_steps`` is given.

    Args:
        optimizer: the wrapped optimiser.
        warmup: warm-up length: a fraction in [0, 1) of the total steps, or a number of steps >= 1.
        total_steps: total optimisation steps (``None``: taken from the Trainer).
    """

    interval = "step"

    def __init__(self, optimizer: Optimizer, warmup: float = 0.1, total_steps: int | None = None):
        self.warmup, self.total_steps = warmup, total_steps
        super().__init__(optimizer, self._factor)

    def set_total_steps(self, total: int) -> None:
        if self.total_steps is None:
            self.total_steps = int(total)

    def _factor(self, step: int) -> float:
        total = self.total_steps or 1
        warm = self.warmup * total if self.warmup < 1 else self.warmup
        if step < warm:
            return (step + 1) / (warm + 1)
        return max(0.0, (total - step) / max(1.0, total - warm))
