"""Learning-rate schedules used by the papers, as LightningCLI-injectable scheduler classes.

Each class states its ``interval`` (``epoch`` or ``step``); :class:`ner_zoo.training.base.NERModule`
reads it when it builds the Lightning scheduler config.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from ner_zoo.ranges import NonNegativeFloat, PositiveInt, check_ranges


class InverseTimeDecay(LambdaLR):
    """``lr_t = lr_0 / (1 + decay * t)`` with ``t`` the epoch (Lample et al. 2016; Ma & Hovy 2016).

    Args:
        optimizer: the wrapped optimiser.
        decay: the decay rate (0.05 in most BiLSTM-CRF papers).
    """

    interval = "epoch"

    def __init__(self, optimizer: Optimizer, decay: NonNegativeFloat = 0.05):
        check_ranges(InverseTimeDecay.__init__, locals())
        self.decay = decay
        super().__init__(optimizer, lambda epoch: 1.0 / (1.0 + decay * epoch))


class LinearWarmupDecay(LambdaLR):
    """Linear warm-up over ``warmup`` (a fraction of all steps, or a step count), then linear decay to 0.

    The total number of steps is filled in from the Trainer (``estimated_stepping_batches``) by the
    module before the first step, unless ``total_steps`` is given.

    With ``fit_to_max_time`` and a Trainer ``max_time``, the schedule runs on
    ``max(step, fraction of max_time elapsed x total)``: a run cut by its wall-clock budget still warms up
    and decays to 0 within that budget (budgeted comparisons; the schedule then depends on speed).

    Args:
        optimizer: the wrapped optimiser.
        warmup: warm-up length: a fraction in [0, 1) of the total steps, or a number of steps >= 1.
        total_steps: total optimisation steps (``None``: taken from the Trainer).
        fit_to_max_time: follow the Trainer's ``max_time`` as well as the step count.
    """

    interval = "step"

    def __init__(self, optimizer: Optimizer, warmup: NonNegativeFloat = 0.1, total_steps: PositiveInt | None = None,
                 fit_to_max_time: bool = False):
        check_ranges(LinearWarmupDecay.__init__, locals())
        self.warmup, self.total_steps, self.fit_to_max_time = warmup, total_steps, fit_to_max_time
        self._time_fraction: Callable[[], float] | None = None
        super().__init__(optimizer, self._factor)

    def set_total_steps(self, total: int) -> None:
        if self.total_steps is None:
            self.total_steps = int(total)

    def set_time_fraction(self, fraction: Callable[[], float]) -> None:
        """``fraction()`` = share of the wall-clock budget spent, in [0, 1] (used when ``fit_to_max_time``)."""
        if self.fit_to_max_time:
            self._time_fraction = fraction

    def state_dict(self) -> dict:
        state = super().state_dict()
        state.pop("_time_fraction", None)  # a callable: never pickled into checkpoints
        return state

    def _factor(self, step: int) -> float:
        total = self.total_steps or 1
        if self._time_fraction is not None:
            step = max(step, self._time_fraction() * total)
        warm = self.warmup * total if self.warmup < 1 else self.warmup
        if step < warm:
            return (step + 1) / (warm + 1)
        return max(0.0, (total - step) / max(1.0, total - warm))
