"""Lightning or torch.optim refusing a setting, as one line: shared by the entry point (``main``) and the CLI
class, which must not import each other (``main`` starts without Lightning)."""

from __future__ import annotations

import inspect
import re
import sys


def _innermost_file(e: BaseException) -> str:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.replace("\\", "/") if tb is not None else ""


def optimizer_refusal(e: BaseException) -> str | None:
    """One line for an optimiser or scheduler setting torch refuses when Lightning builds it or at its first step
    (``betas [2, 0.5]``, ``eps -1``, ``differentiable true``): an error raised in ``torch/optim``, led by the
    model's key; None for anything else."""
    where = _innermost_file(e)
    if type(e) not in (ValueError, RuntimeError, TypeError) or "/torch/optim/" not in where:
        return None
    key = "lr_scheduler" if "lr_scheduler" in where else "optimizer"
    return f"--model.init_args.{key}: torch refuses the settings: {' '.join(str(e).split())}"


def lightning_refusal(e: BaseException) -> str | None:
    """One line for a setting Lightning refuses once it meets the data (``val_check_interval`` above the number of
    training batches, ...): a ``ValueError`` raised by Lightning's own code, or its ``MisconfigurationException``,
    led by the trainer option the message names first; None for anything else (a traceback: a bug)."""
    raised_by_lightning = "/lightning/" in _innermost_file(e)
    refusal = type(e).__name__ == "MisconfigurationException" or (type(e) is ValueError and raised_by_lightning)
    if not refusal:
        return None
    message = " ".join(str(e).split())
    found = [(m.start(), name) for name in _trainer_arguments() if (m := re.search(rf"\b{name}\b", message))]
    named = f"--trainer.{min(found)[1]}: " if found else ""  # the first the message names: what it is about
    return f"{named}Lightning refuses the settings: {message}"


def _trainer_arguments() -> list[str]:
    """The ``Trainer``'s argument names (Lightning is loaded: it raised)."""
    trainer = getattr(sys.modules.get("lightning.pytorch"), "Trainer", None)
    if trainer is None:
        return []
    return [p for p in inspect.signature(trainer.__init__).parameters if p != "self"]
