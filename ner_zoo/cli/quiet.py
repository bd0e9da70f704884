"""What ``ner-zoo fit|validate|test|predict`` print: the project's output, not Lightning's chatter.

By default (``--verbose`` or ``NER_ZOO_VERBOSE=1`` bring Lightning's output back):

* Lightning's and Fabric's info lines are not shown (its loggers at WARNING): the "Tip" advertisements,
  "GPU available", "Seed set to", "Restoring states ...", "The following callbacks returned in
  `configure_callbacks` will override ..."; its warnings still are.
* Lightning's model summary (a table with a FLOPs column that is all zeros: the models set no example input)
  becomes one line: the model's class and parameter counts.
* Lightning's own test table is not printed after the project's per-type table (``trainer.test(verbose=False)``).
* A dependency's known deprecation notice (``isinstance(treespec, LeafSpec)``, from Lightning's use of torch)
  is not repeated; the ``datasets`` and ``huggingface_hub`` progress bars are off, transformers logs errors only.

``fit`` ends with one line naming the run folder and its best checkpoint (:func:`run_line`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import warnings
from pathlib import Path
from typing import Iterator

LOGGERS = ("lightning.pytorch", "lightning.fabric", "lightning", "pytorch_lightning", "lightning_fabric")
#: dependency warnings that say nothing a user can act on (message patterns)
NOISE = (r".*isinstance\(treespec, LeafSpec\).*",)
#: environment defaults read by the libraries at import (a value the user set is kept)
ENV = {"HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
_quiet = False


def is_quiet() -> bool:
    """Whether the command runs quiet (inside :func:`quiet`, without ``--verbose``)."""
    return _quiet


def wants_verbose(args: list[str]) -> tuple[list[str], bool]:
    """``args`` without a bare ``--verbose`` flag, and whether it (or ``NER_ZOO_VERBOSE``) asks for Lightning's
    output. ``--verbose true|false`` (LightningCLI's own option of ``test``/``validate``) is read the same way."""
    verbose = os.environ.get("NER_ZOO_VERBOSE", "") not in ("", "0")
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--verbose":
            value = args[i + 1].lower() if i + 1 < len(args) else ""
            if value in ("true", "false", "1", "0", "yes", "no"):
                verbose, i = value in ("true", "1", "yes"), i + 2
                continue
            verbose, i = True, i + 1
            continue
        if a.startswith("--verbose="):
            verbose = a.split("=", 1)[1].lower() in ("true", "1", "yes")
        else:
            out.append(a)
        i += 1
    return out, verbose


@contextlib.contextmanager
def quiet(verbose: bool = False) -> Iterator[None]:
    """Run a command quiet (see the module docstring); everything is restored afterwards (the tests call the
    CLI in their own process)."""
    global _quiet
    if verbose:
        yield
        return
    import lightning.fabric  # noqa: F401 - their imports set their loggers to INFO: first, then quieted
    import lightning.pytorch  # noqa: F401

    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    env = {k: os.environ.get(k) for k in ENV}
    before = _quiet
    try:
        for name in LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        for k, v in ENV.items():
            os.environ.setdefault(k, v)
        _quiet = True
        with warnings.catch_warnings():
            for message in NOISE:
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        _quiet = before
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def one_line_summary(trainer) -> None:
    """Lightning's model summary callbacks replaced by one line of parameter counts (quiet runs)."""
    from lightning.pytorch.callbacks import ModelSummary

    if any(isinstance(c, ModelSummary) for c in trainer.callbacks):
        trainer.callbacks = [c for c in trainer.callbacks if not isinstance(c, ModelSummary)] + [
            _parameter_line_class()()]


@functools.lru_cache(maxsize=1)
def _parameter_line_class():  # built on first use: this module is imported before Lightning
    import lightning.pytorch as pl

    class ParameterLine(pl.Callback):
        """``BiLSTMCRF: 99.7 K parameters (99.7 K trainable)`` when a fit starts: the model summary's numbers."""

        def on_fit_start(self, trainer, pl_module) -> None:
            import torch
            from lightning.pytorch.utilities.model_summary import get_human_readable_count

            if not trainer.is_global_zero:
                return
            params = [p for p in pl_module.parameters() if not isinstance(p, torch.nn.UninitializedParameter)]
            total = sum(p.numel() for p in params)
            trainable = sum(p.numel() for p in params if p.requires_grad)
            print(f"{type(pl_module).__name__}: {get_human_readable_count(total)} parameters "
                  f"({get_human_readable_count(trainable)} trainable)", flush=True)

    return ParameterLine


def run_line(record_path: str | Path | None, best: str | Path | None) -> str | None:
    """``run folder: runs/.../<time> (best checkpoint: checkpoints/best.ckpt)``: the last line of a fit, paths
    relative to the working directory where they are under it."""
    if not record_path and not best:
        return None

    def shown(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(p)

    folder = Path(record_path).parent if record_path else Path(best).parent.parent
    if not best:
        return f"run folder: {shown(folder)} (no checkpoint kept)"
    best = Path(best)
    try:
        ckpt = str(best.resolve().relative_to(folder.resolve()))
    except ValueError:
        ckpt = shown(best)
    return f"run folder: {shown(folder)} (best checkpoint: {ckpt})"
