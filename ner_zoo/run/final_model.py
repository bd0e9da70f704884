"""``data.init_args.train_on: train+dev``: the final model of a fixed recipe, trained on train and dev together.

With dev in the training data there is nothing left to select a model on, so the run must not pretend to: no
validation loop (``trainer.limit_val_batches: 0``), the checkpoint is the last epoch's (``checkpoint.monitor:
null``, its file name says ``final``), and early stopping on a validation metric is refused (train for the
epochs the run with dev chose). ``results.json`` states it under ``data_notes.train_on``.
"""

from __future__ import annotations

from typing import Any

from ner_zoo.errors import ConfigError


def _get(ns: Any, key: str, default: Any = None) -> Any:
    return ns.get(key, default) if hasattr(ns, "get") else getattr(ns, key, default)


def configure_final_model(config: Any) -> bool:
    """Adjust a parsed ``fit`` config in place when its data module trains on train+dev; True if it does."""
    data = _get(config, "data") or {}
    if _get(_get(data, "init_args") or {}, "train_on") != "train+dev":
        return False
    trainer = _get(config, "trainer")
    for cb in _get(trainer, "callbacks") or []:
        kind = str(_get(cb, "class_path") or type(cb).__name__)
        if kind.endswith("EarlyStopping"):
            raise ConfigError("data.init_args.train_on: train+dev leaves no dev split to stop early on: remove the "
                              "EarlyStopping callback and set trainer.max_epochs (e.g. the best epoch of the run "
                              "with dev)")
    trainer["limit_val_batches"] = 0
    trainer["num_sanity_val_steps"] = 0
    checkpoint = _get(config, "checkpoint")
    if checkpoint is not None:
        checkpoint["monitor"] = None
        checkpoint["save_top_k"] = 1
        name = _get(checkpoint, "filename") or "final"
        checkpoint["filename"] = name.replace("best", "final") if "best" in name else f"final-{name}"
    return True
