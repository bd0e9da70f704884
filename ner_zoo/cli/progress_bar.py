"""The progress bar of the CLI's runs: Lightning's default Rich bar, redrawn 10 times a second instead of 100.

Lightning's default ``RichProgressBar()`` hands every step to a background thread that rebuilds the whole display
up to ``refresh_rate`` = 100 times a second, also when the output is not a terminal; the thread holds the GIL
while it does, so a fast training loop pays for it (a BiLSTM-CRF fit: about 5 % of its CPU time per step at
1 thread, docs/benchmarks.md, issue 33). 10 redraws a second are Rich's and tqdm's own defaults. A progress bar
named in the config (``trainer.callbacks``) keeps its settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lightning.pytorch.callbacks import RichProgressBar

from ner_zoo.dotted import short_name

REFRESH_PER_SECOND = 10  #: redraws per second of the CLI's default bar
LIGHTNING_DEFAULT = 100  # RichProgressBar's own default refresh_rate


def names_progress_bar(configured: Iterable[Any] | None) -> bool:
    """Whether the config's ``trainer.callbacks`` (class paths, or objects) hold a progress bar."""
    from lightning.pytorch.callbacks.progress import ProgressBar

    for c in configured or []:
        path = getattr(c, "class_path", None) or (c.get("class_path") if isinstance(c, dict) else None)
        if isinstance(c, ProgressBar) or (isinstance(path, str) and "ProgressBar" in short_name(path)):
            return True
    return False


def calm_default_progress_bar(trainer: Any, configured: Iterable[Any] | None) -> bool:
    """Set Lightning's default Rich bar of ``trainer`` to :data:`REFRESH_PER_SECOND` redraws a second, unless the
    config names a progress bar (``configured``: its ``trainer.callbacks``). Returns whether it did."""
    if names_progress_bar(configured):
        return False
    bar = getattr(trainer, "progress_bar_callback", None)
    if type(bar) is not RichProgressBar or bar.refresh_rate != LIGHTNING_DEFAULT or bar.progress is not None:
        return False
    bar._refresh_rate = REFRESH_PER_SECOND  # no public setter; read when the bar starts (its refresh thread's rate)
    return bar.refresh_rate == REFRESH_PER_SECOND
