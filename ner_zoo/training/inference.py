"""A model from its checkpoint alone, and its predictions on sentences: what ``ner-zoo predict``, the data
modules' ``predicted_columns``, notebooks and benchmarks use. :func:`load_network` builds the network alone
(torch, no Lightning: use); :func:`load_model` the task module that hosts it (evaluation, resuming).

The checkpoint carries the model class, its init arguments (keys renamed since are mapped to their current
names, ``checkpoints/migrations.py``), the vocabularies and label set, so nothing else is needed.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Sequence

import torch
from torch.utils.data import DataLoader

from ner_zoo.checkpoints import migrations
from ner_zoo.data.batching import IndexedDataset
from ner_zoo.data.schema import Sentence
from ner_zoo.data.tagging import spans_to_tags
from ner_zoo.errors import CheckpointError, NerZooError
from ner_zoo.training import checkpoint_checks

#: init arguments of the task module, not of the network (a network built for use leaves them out)
TRAINING_ONLY = ("optimizer", "lr_scheduler", "pretrained_lr")


def instantiate(cls, hparams: dict):
    """``cls(**hparams)`` with nested ``class_path``/``init_args`` groups made into objects, as the CLI does."""
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, "module", fail_untyped=False)
    cfg = parser.parse_object({"module": hparams})
    return parser.instantiate_classes(cfg).module


def network_arguments(cls, hparams: dict) -> dict:
    """Saved init arguments of a model (of any age) as its network ``cls`` takes them."""
    hp = migrations.migrate_hparams(cls, hparams)
    return {k: v for k, v in hp.items() if not k.startswith("_") and k not in TRAINING_ONLY}


def load_network(ckpt_path: str | Path, map_location: str = "cpu", weights_only: bool = True):
    """The network stored in ``ckpt_path`` alone (a plain ``nn.Module``, in eval mode; no Lightning imported),
    its weights checked against the integrity digest and renamed by :mod:`~ner_zoo.checkpoints.migrations`.

    Args:
        ckpt_path: a checkpoint written by ``ner-zoo fit`` (of any ner-zoo version this one reads).
        map_location: device for the weights.
        weights_only: refuse pickled objects; ``False`` only for a trusted file that needs it.
    """
    from ner_zoo.checkpoints.integrity import DIGEST_KEY, checkpoint_digest

    ckpt = checkpoint_checks.read(ckpt_path, weights_only=weights_only)
    cls = checkpoint_checks.model_class(ckpt, ckpt_path, network=True)
    if not ckpt.get("hyper_parameters"):
        raise CheckpointError(f"{ckpt_path} holds no hyper-parameters (model settings and vocabularies): it was "
                              "not written by ner-zoo fit")
    checkpoint_checks.warn_if_no_digest(ckpt, ckpt_path)
    if ckpt.get(DIGEST_KEY) is not None and ckpt[DIGEST_KEY] != checkpoint_digest(ckpt):
        raise CheckpointError(f"{ckpt_path}: corrupted checkpoint (its weights do not match the sha256 stored when "
                              "it was saved); use another copy or an earlier checkpoint")
    try:
        net = instantiate(cls, network_arguments(cls, ckpt["hyper_parameters"]))
        net.load_state_dict(migrations.network_state(cls.__name__, ckpt["state_dict"]), strict=True)
    except NerZooError:  # a missing encoder, a resource: its own message
        raise
    except Exception as e:  # corrupted zip blocks (read lazily), weights that do not fit the recorded class
        raise CheckpointError(f"{ckpt_path}: cannot rebuild {migrations.paper(cls.__name__)} from this checkpoint "
                              f"({checkpoint_checks.reason(e)})") from None
    net.prepared = True
    return net.to(map_location).eval()


def load_model(ckpt_path: str | Path, map_location: str = "cpu", weights_only: bool = True):
    """Rebuild the model stored in ``ckpt_path`` (class recorded at save time), checking its integrity digest.

    Args:
        ckpt_path: a checkpoint written by ``ner-zoo fit``.
        map_location: device for the weights.
        weights_only: refuse pickled objects (safe on files from others); our checkpoints hold only
            tensors and plain values. ``False`` only for a trusted file that needs it.
    """
    ckpt = checkpoint_checks.read(ckpt_path, weights_only=weights_only)
    cls = checkpoint_checks.model_class(ckpt, ckpt_path)
    name = cls.__name__
    if not ckpt.get("hyper_parameters"):
        raise CheckpointError(f"{ckpt_path} holds no hyper-parameters (model settings and vocabularies): it was "
                              "not written by ner-zoo fit")
    checkpoint_checks.warn_if_no_digest(ckpt, ckpt_path)
    source = ckpt_path
    hparams = ckpt.get("hyper_parameters")
    if isinstance(hparams, dict) and hasattr(cls, "migrate_hparams") and cls.migrate_hparams(hparams) != hparams:
        ckpt["hyper_parameters"] = cls.migrate_hparams(hparams)  # saved with since-renamed keys: load the new
        source = io.BytesIO()
        torch.save(ckpt, source)
        source.seek(0)
    try:
        with warnings.catch_warnings():  # said above, naming the file
            warnings.filterwarnings("ignore", message=f".*{checkpoint_checks.NO_DIGEST}")
            return cls.load_from_checkpoint(source, map_location=map_location, weights_only=weights_only)
    except CheckpointError as e:
        raise CheckpointError(str(e).replace("the checkpoint", str(ckpt_path), 1)) from None
    except NerZooError:  # a missing encoder, a resource: its own message
        raise
    except Exception as e:  # corrupted zip blocks (read lazily), weights that do not fit the recorded class
        raise CheckpointError(f"{ckpt_path}: cannot rebuild {name} from this checkpoint "
                              f"({checkpoint_checks.reason(e)})") from None


def predict(model, sentences: list[Sentence], batch_size: int = 64, accelerator: str = "auto",
            devices: str | int = 1, precision: str = "32-true", batch_tokens: int | None = None,
            with_scores: bool = False) -> list:
    """Predictions (spans, or tags for POS) for ``sentences``, in input order, through a Lightning Trainer
    (``with_scores``: ``(spans, scores)`` pairs, as :meth:`ner_zoo.Tagger.predict_sentences` gives). Batches and
    document context come from the one inference path (:mod:`ner_zoo.training.prediction`); for raw text,
    offsets and scores use :func:`ner_zoo.load`."""
    if not sentences:
        return []
    bad = next((s for s in sentences if not isinstance(s, Sentence)), None)
    if bad is not None:
        raise TypeError(f"predict takes Sentence objects, got {type(bad).__name__} ({str(bad)[:40]!r}); for raw "
                        "text use ner_zoo.load(checkpoint)(text)")
    import lightning.pytorch as pl

    from ner_zoo.training import prediction

    todo = [i for i, s in enumerate(sentences) if len(s.tokens)]
    found = {}
    if todo:
        todo_sentences = [sentences[i] for i in todo]
        prediction.index_context(model, todo_sentences, replace=True)  # their own document context, as in use
        order = list(prediction.batches(prediction.costs(model, todo_sentences), batch_size, batch_tokens))
        loader = DataLoader(IndexedDataset(todo_sentences), batch_size=None, sampler=order, collate_fn=model.collator)
        # inference_mode off (no_grad instead): a CRF's entity scores, its marginals, are the gradient of log Z
        trainer = pl.Trainer(accelerator=accelerator, devices=devices, precision=precision, logger=False,
                             enable_progress_bar=False, enable_model_summary=False, inference_mode=False)
        for batch in trainer.predict(model, loader):
            for r in batch:
                found[todo[r["index"]]] = (r["prediction"], r.get("scores"))
        if getattr(trainer, "received_sigterm", False):  # Lightning's handler noted a SIGTERM during the loop
            from ner_zoo.errors import Interrupted

            raise Interrupted("SIGTERM")
    got = [found.get(i, ([], [])) for i in range(len(sentences))]
    return got if with_scores else [p for p, _ in got]


def predicted_column(sentences: Sequence[Sentence], ckpt_path: str | Path, batch_size: int = 64) -> list[list[str]]:
    """One predicted tag per token of every sentence, from the model stored in ``ckpt_path``: a POS/tagging
    model's tags, a span model's spans as IOB2 tags. Computed from the tokens alone (no gold, no other column)."""
    model = load_model(ckpt_path).eval()
    bare = [Sentence(list(s.tokens), source=s.source) for s in sentences]
    preds = predict(model, bare, batch_size=batch_size, accelerator="auto") if bare else []
    if model.is_pos:
        return [list(p) for p in preds]
    return [spans_to_tags(p, len(s), "iob2", where=s.source) for s, p in zip(bare, preds)]

