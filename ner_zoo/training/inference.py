"""A model from its checkpoint alone, and its predictions on sentences: what ``ner-zoo predict``, the data
modules' ``predicted_columns``, notebooks and benchmarks use.

The checkpoint carries the model class, its init arguments (keys renamed since are mapped to their current
names, ``training/migrations.py``), the vocabularies and label set, so nothing else is needed.
"""

from __future__ import annotations

import importlib
import io
import pickle
from pathlib import Path
from typing import Sequence

import torch
from torch.utils.data import DataLoader

from ner_zoo.data import predicted
from ner_zoo.data.batching import IndexedDataset
from ner_zoo.data.schema import Sentence
from ner_zoo.data.tagging import spans_to_tags
from ner_zoo.errors import CheckpointError, NerZooError


def load_model(ckpt_path: str | Path, map_location: str = "cpu", weights_only: bool = True):
    """Rebuild the model stored in ``ckpt_path`` (class recorded at save time), checking its integrity digest.

    Args:
        ckpt_path: a checkpoint written by ``ner-zoo fit``.
        map_location: device for the weights.
        weights_only: refuse pickled objects (safe on files from others); our checkpoints hold only
            tensors and plain values. ``False`` only for a trusted file that needs it.
    """
    if not Path(ckpt_path).is_file():
        raise CheckpointError(f"{ckpt_path}: checkpoint not found" if not Path(ckpt_path).exists()
                              else f"{ckpt_path}: not a checkpoint file")
    try:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=weights_only, mmap=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"{ckpt_path} holds pickled objects that safe loading refuses ({str(e)[:300]}); "
                              "if you trust the file, load it with weights_only=False") from None
    except (RuntimeError, EOFError, ValueError, OSError) as e:
        reason = str(e).strip().split("\n")[0][:200]
        raise CheckpointError(f"{ckpt_path}: not a readable checkpoint (truncated, corrupted or not written by "
                              f"torch.save: {reason})") from None
    if not isinstance(ckpt, dict):
        raise CheckpointError(f"{ckpt_path} was not written by ner-zoo (it holds a {type(ckpt).__name__})")
    class_path = ckpt.get("ner_zoo_class") or ckpt.get("hyper_parameters", {}).get("_class_path")
    if class_path is None:
        raise CheckpointError(f"{ckpt_path} was not written by ner-zoo (no model class recorded)")
    if not str(class_path).startswith("ner_zoo."):  # never import an arbitrary module named by a file
        raise CheckpointError(f"{ckpt_path} names model class {class_path!r}, which is not part of ner-zoo")
    module, _, name = class_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise CheckpointError(f"{ckpt_path} names model class {class_path!r}, which this ner-zoo does not have") from None
    from ner_zoo.training.base import NERModule

    if not (isinstance(cls, type) and issubclass(cls, NERModule)):
        raise CheckpointError(f"{ckpt_path} names class {class_path!r}, which is not a ner-zoo model")
    source = ckpt_path
    hparams = ckpt.get("hyper_parameters")
    if isinstance(hparams, dict) and hasattr(cls, "migrate_hparams") and cls.migrate_hparams(hparams) != hparams:
        ckpt["hyper_parameters"] = cls.migrate_hparams(hparams)  # saved with since-renamed keys: load the new
        source = io.BytesIO()
        torch.save(ckpt, source)
        source.seek(0)
    try:
        return cls.load_from_checkpoint(source, map_location=map_location, weights_only=weights_only)
    except CheckpointError as e:
        raise CheckpointError(str(e).replace("the checkpoint", str(ckpt_path), 1)) from None
    except NerZooError:  # a missing encoder, a resource: its own message
        raise
    except Exception as e:  # corrupted zip blocks (read lazily), weights that do not fit the recorded class
        raise CheckpointError(f"{ckpt_path}: cannot rebuild {name} from this checkpoint ({unreadable_reason(e)})"
                              ) from None


def unreadable_reason(e: BaseException) -> str:
    """A short reason for a checkpoint that does not load: torch's first line, or the keys that do not fit."""
    text = str(e).strip()
    if "Error(s) in loading state_dict" in text:
        return ("its weights do not fit the recorded model class (missing or unexpected keys): the class was "
                "changed or the file corrupted")
    first = text.splitlines()[0] if text else type(e).__name__
    if "PytorchStreamReader" in first or "zip" in first.lower():
        return f"corrupted archive: {first[:200]}"
    return f"{type(e).__name__}: {first[:200]}"


def predict(model, sentences: list[Sentence], batch_size: int = 64, accelerator: str = "auto",
            devices: str | int = 1, precision: str = "32-true") -> list:
    """Predictions (spans, or tags for POS) for ``sentences``, in input order (through a Lightning Trainer; for
    raw text, offsets and scores use :func:`ner_zoo.load`)."""
    if not sentences:
        return []
    bad = next((s for s in sentences if not isinstance(s, Sentence)), None)
    if bad is not None:
        raise TypeError(f"predict takes Sentence objects, got {type(bad).__name__} ({str(bad)[:40]!r}); for raw "
                        "text use ner_zoo.load(checkpoint)(text)")
    import lightning.pytorch as pl

    loader = DataLoader(IndexedDataset(sentences), batch_size=batch_size,
                        collate_fn=model.collator)
    trainer = pl.Trainer(accelerator=accelerator, devices=devices, precision=precision, logger=False,
                         enable_progress_bar=False, enable_model_summary=False)
    records = [r for batch in trainer.predict(model, loader) for r in batch]
    if getattr(trainer, "received_sigterm", False):  # Lightning's handler noted a SIGTERM during the loop
        from ner_zoo.errors import Interrupted

        raise Interrupted("SIGTERM")
    records.sort(key=lambda r: r["index"])
    return [r["prediction"] for r in records]


def predicted_column(sentences: Sequence[Sentence], ckpt_path: str | Path, batch_size: int = 64) -> list[list[str]]:
    """One predicted tag per token of every sentence, from the model stored in ``ckpt_path``: a POS/tagging
    model's tags, a span model's spans as IOB2 tags. Computed from the tokens alone (no gold, no other column)."""
    model = load_model(ckpt_path).eval()
    bare = [Sentence(list(s.tokens), source=s.source) for s in sentences]
    preds = predict(model, bare, batch_size=batch_size, accelerator="auto") if bare else []
    if model.is_pos:
        return [list(p) for p in preds]
    return [spans_to_tags(p, len(s), "iob2", where=s.source) for s, p in zip(bare, preds)]


predicted.column_predictor = predicted_column  # the data layer cannot import models; this layer lends it
