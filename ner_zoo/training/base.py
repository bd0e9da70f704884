"""Shared LightningModule for every model of the zoo: lifecycle, optimisation, evaluation, logging, prediction.

A model subclasses :class:`NERModule` (usually through ``SequenceTagger`` or ``SpanModel``) and implements
``compute_loss(batch)`` and ``decode(batch)``; ``decode`` returns, per sentence, predicted spans (NER,
chunking) or predicted tags (POS tagging). The lifecycle hooks it may override:

* ``make_collator()``: the callable that turns ``(index, Sentence)`` items into a batch (default: the
  vocabularies' collator); every loader (data module, ``predict``, tests, benchmarks) uses it, as
  ``model.collator`` or ``model.collate(items)``.
* ``prepare(train, context)``: data-dependent set-up (pretrained vectors, label vectors, memory indexes,
  document context, warnings), run once by ``setup("fit")``; call it yourself without a Trainer.
* ``add_context(sentences)``: sentences a later stage may read as document context.
* ``eval_step``, ``update_metrics``, ``log_metrics``, ``stage_metrics``: evaluation.

Everything else (metrics per stage, per-type tables, optimiser and scheduler from the config, learning
rate groups for pretrained weights, NaN guard, prediction records) lives here once.
"""

from __future__ import annotations

import inspect
import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Timer
from lightning.pytorch.utilities import rank_zero_warn
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable

from ner_zoo.data.batching import Batch
from ner_zoo.data.datamodule import NERDataModule, Vocabularies
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import CheckpointError
from ner_zoo.metrics import SpanF1, TokenAccuracy
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.training.integrity import DIGEST_KEY, checkpoint_digest
from ner_zoo.training.lazy_rows import LazyRows, lazy_rows_apply
from ner_zoo.training import migrations
from ner_zoo.training.words import prepare_tokens

FORMAT_VERSION = 1
CONTEXT_SPLITS = {"fit": ("train", "dev"), "validate": ("dev",), "test": ("test",), "predict": ("test",)}


class SplitSentences(Mapping):
    """A data module's splits by name (``train``, ``dev``, ``test``), each read on first access; a split
    without a file reads as ``[]``. ``SplitSentences()`` (no data module) is empty."""

    def __init__(self, datamodule: NERDataModule | None = None):
        self.datamodule, self._read = datamodule, {}

    def __getitem__(self, split: str) -> list[Sentence]:
        if split not in self._read:
            try:
                self._read[split] = list(self.datamodule.sentences(split)) if self.datamodule is not None else []
            except FileNotFoundError:
                self._read[split] = []
        return self._read[split]

    def __iter__(self) -> Iterator[str]:
        return iter(("train", "dev", "test") if self.datamodule is not None else ())

    def __len__(self) -> int:
        return len(list(iter(self)))


def default_optimizer(params: Iterable) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=1e-3)


def fused_if_unset(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The same optimiser with ``fused=True`` when it is a torch optimiser that has a fused implementation
    and the config left ``fused`` (and ``foreach``) unset: one kernel for the whole update instead of one
    pass per operation (SGD with momentum: ~1.8x faster on CPU, docs/benchmarks.md). ``fused: false`` keeps
    the plain loop. Falls back to ``optimizer`` where the fused kernel does not support the parameters."""
    defaults = optimizer.defaults
    if defaults.get("fused", False) is not None or defaults.get("foreach") or defaults.get("differentiable"):
        return optimizer
    accepted = inspect.signature(type(optimizer)).parameters  # defaults may hold derived keys (AdamW)
    groups = [dict(g, fused=True) for g in optimizer.param_groups]
    try:
        return type(optimizer)(groups, **{k: v for k, v in dict(defaults, fused=True).items() if k in accepted})
    except (RuntimeError, ValueError, TypeError):  # e.g. a device or dtype without a fused kernel
        return optimizer


def clip_grad_norm_rows(params: Iterable[torch.Tensor], max_norm: float,
                        rows: Mapping[int, torch.Tensor]) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_(params, max_norm)`` (2-norm) where the gradient of a parameter ``p``
    with ``id(p)`` in ``rows`` is zero outside the rows ``rows[id(p)]``: the norm and the scaling read only those
    rows. Same result (up to summation order); for a 27k-word embedding, a few hundred rows instead of all."""
    params = [p for p in params if p.grad is not None]
    picked = [p.grad.index_select(0, rows[id(p)]) if id(p) in rows else p.grad for p in params]
    if not picked:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(picked)))  # one call for all (as torch's own)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    torch._foreach_mul_(picked, coef)
    for p, g in zip(params, picked):
        if id(p) in rows:
            p.grad.index_copy_(0, rows[id(p)], g)
    return total


class NERModule(pl.LightningModule):
    """Base class of all models.

    Args:
        vocabs: vocabularies and label set, linked from ``data.vocabs`` by the CLI (saved in checkpoints).
        optimizer: optimiser factory (``class_path``/``init_args`` in YAML), called with parameter groups.
        lr_scheduler: scheduler factory; its class attribute ``interval`` (``epoch``/``step``) is honoured.
        pretrained_lr: learning rate of pretrained transformer weights (``None``: same as the rest).
    """

    @classmethod
    def migrate_hparams(cls, hparams: Mapping[str, Any]) -> dict:
        """Saved init arguments with their old names replaced by the current ones (``training/migrations.py``)."""
        return migrations.migrate_hparams(cls, hparams)

    def __init__(self, vocabs: dict | None = None, optimizer: OptimizerCallable = default_optimizer,
                 lr_scheduler: LRSchedulerCallable | None = None, pretrained_lr: float | None = None):
        super().__init__()
        if vocabs is None:
            raise CheckpointError("the model needs vocabularies: link data.vocabs (the CLI does) or load a checkpoint")
        self.vocabs = Vocabularies.from_dict(vocabs)
        self.optimizer_factory, self.scheduler_factory = optimizer, lr_scheduler
        self.pretrained_lr = pretrained_lr
        self.task = self.vocabs.task
        self.metrics = torch.nn.ModuleDict({stage: self._new_metric() for stage in ("val", "test")})
        self.prepared = False  # prepare() ran (setup("fit") runs it once)
        self._collator: Callable | None = None

    # lifecycle ---------------------------------------------------------------------------------------------
    def make_collator(self) -> Callable[[Sequence[tuple[int, Sentence]]], Batch]:
        """The collator behind :meth:`collate` (override to add inputs or targets; keep it picklable)."""
        return self.vocabs.collator()

    @property
    def collator(self) -> Callable[[Sequence[tuple[int, Sentence]]], Batch]:
        """The model's collator (built once by :meth:`make_collator`); loaders get this object, which pickles
        without the model."""
        if self._collator is None:
            self._collator = self.make_collator()
        return self._collator

    def collate(self, items: Sequence[tuple[int, Sentence]]) -> Batch:
        """``(index, sentence)`` items -> a batch, as this model needs it."""
        return self.collator(items)

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        """Data-dependent set-up before training; ``setup("fit")`` calls it once.

        Args:
            train: the training split.
            context: every split by name (``dev``, ``test``, ...), read on first access
                (:class:`SplitSentences`): document context, transductive memories.

        A checkpoint loaded afterwards restores trained weights over what this sets. The base indexes the
        training and dev sentences as document context of every encoder that reads context; overrides call
        ``super().prepare(train, context)``.
        """
        prepare_tokens(self, train)  # pretrained vectors and singletons of every TokenEncoder
        if self.context_encoders():
            if train and all(s.doc_id is None for s in train):
                rank_zero_warn("the encoder reads neighbouring sentences (context > 0), but the training sentences "
                               "belong to no document (e.g. the ACE files' pseudo-documents): they get no context")
            self.add_context(train)
            self.add_context(context.get("dev", ()))

    def context_encoders(self) -> list[TransformerEncoder]:
        """This model's transformer encoders that read neighbouring sentences (``context > 0``)."""
        return [m for m in self.modules() if isinstance(m, TransformerEncoder) and m.context > 0]

    def add_context(self, sentences: Iterable[Sentence]) -> None:
        """Index ``sentences`` as document context of the encoders that read it (a no-op, reading nothing,
        for models without)."""
        encoders = self.context_encoders()
        if encoders:
            sentences = list(sentences)
            for encoder in encoders:
                encoder.add_documents(sentences)

    def on_predict_start(self) -> None:
        if self.context_encoders():  # the sentences to predict are their own document context
            loaders = self.trainer.predict_dataloaders
            for loader in loaders if isinstance(loaders, (list, tuple)) else [loaders]:
                self.add_context(getattr(loader.dataset, "sentences", ()))

    def setup(self, stage: str) -> None:
        """Hand :attr:`collator` to the data module, run :meth:`prepare` once before fitting, and offer the
        stage's sentences to :meth:`add_context` otherwise."""
        dm = self.trainer.datamodule if self._trainer is not None else None
        dm = dm if isinstance(dm, NERDataModule) else None
        if dm is not None:
            dm.model_collate = self.collator
        splits = SplitSentences(dm)
        if stage == "fit":
            if not self.prepared:
                self.prepare(splits["train"], splits)
                self.prepared = True
        else:  # lazy: models without document context never read these splits
            self.add_context(itertools.chain.from_iterable(splits[n] for n in CONTEXT_SPLITS.get(stage, ())))

    # to implement ---------------------------------------------------------------------------------------
    def compute_loss(self, batch: Batch) -> torch.Tensor:
        raise NotImplementedError

    def decode(self, batch: Batch) -> list[list]:
        """Per sentence: a list of :class:`~ner_zoo.data.schema.Span` (or tag strings for POS)."""
        raise NotImplementedError

    @property
    def features_used(self) -> list[str]:
        """The data's extra columns (``data.features``) this model reads; ``results.json`` records them."""
        return []

    # metrics ---------------------------------------------------------------------------------------------
    @property
    def is_pos(self) -> bool:
        return self.task == "pos"

    def _new_metric(self):
        return TokenAccuracy() if self.task == "pos" else SpanF1(self.vocabs.labels)

    def gold(self, batch: Batch) -> list[list]:
        if self.is_pos:
            return [s.columns[self.vocabs.tag_column] for s in batch.sentences]
        return [s.spans for s in batch.sentences]

    # steps -------------------------------------------------------------------------------------------
    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        loss = self.compute_loss(batch)
        if not torch.isfinite(loss):
            from ner_zoo.errors import TrainingDiverged

            raise TrainingDiverged(
                f"loss became {loss.item()} at step {self.global_step} (epoch {self.current_epoch}); lower the "
                "learning rate, enable gradient clipping (trainer.gradient_clip_val) or use 32-true precision"
            )
        if self.is_logging_step():
            self.log("train/loss", loss, batch_size=len(batch), prog_bar=True)
        return loss

    def is_logging_step(self) -> bool:
        """Whether this training step's values reach the loggers: every ``trainer.log_every_n_steps`` steps
        (as Lightning writes them) and the epoch's last batch. Per-step values are logged only then, since
        each ``self.log`` call costs milliseconds of Python bookkeeping; the written values are the same."""
        trainer = self.trainer
        return (self.global_step + 1) % max(1, trainer.log_every_n_steps) == 0 or bool(trainer.is_last_batch)

    def eval_step(self, batch: Batch, stage: str) -> list[list]:
        """Decode ``batch``, update the ``val``/``test`` metrics and return the predictions (the run record
        keeps per-sentence counts of the test predictions)."""
        preds = self.decode(batch)
        self.update_metrics(stage, preds, self.gold(batch))
        return preds

    def update_metrics(self, stage: str, preds: list[list], gold: list[list]) -> None:
        self.metrics[stage].update(preds, gold)

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self.eval_step(batch, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> list[list]:
        return self.eval_step(batch, "test")  # the predictions reach the callbacks' on_test_batch_end

    # Metric states are reset when an evaluation starts, not only after it: a model handed between processes
    # (ddp_spawn) or reused after an interrupted loop must never carry counts into a new evaluation.
    def stage_metrics(self, stage: str) -> list:
        """Every metric object updated during the ``val`` or ``test`` stage."""
        return [self.metrics[stage]]

    def on_validation_epoch_start(self) -> None:
        for metric in self.stage_metrics("val"):
            metric.reset()

    def on_test_epoch_start(self) -> None:
        for metric in self.stage_metrics("test"):
            metric.reset()

    def on_validation_epoch_end(self) -> None:
        self.log_metrics("val")

    def on_test_epoch_end(self) -> None:
        result = self.log_metrics("test")
        if self.trainer.is_global_zero and not self.is_pos:
            print(format_table(self.metrics["test"].per_type_rows(result, micro=True)), flush=True)

    def log_metrics(self, stage: str) -> dict:
        """Compute, log and reset the stage's metrics; returns the span F1 result (accuracy for POS)."""
        metric = self.metrics[stage]
        result = metric.compute()
        metric.reset()
        if self.is_pos:  # one monitor name for every task
            scalars = {f"{stage}/accuracy": float(result), f"{stage}/f1": float(result)}
        else:
            scalars = metric.to_floats(result, prefix=f"{stage}/")
        if stage == "val" and not self.trainer.sanity_checking:
            scalars["val/f1_best"] = self._best_val_f1(scalars["val/f1"])
        self.log_dict(scalars)
        if not self.is_pos:
            self.log_wandb_table(f"{stage}/per_type", ["type", "precision", "recall", "f1", "support"],
                                 metric.per_type_rows(result, micro=True))
        return result

    def _best_val_f1(self, f1: float) -> float:
        """Best ``val/f1`` so far, this epoch included (the checkpoint callback's best survives a resume): one
        number a sweep can optimise and early-terminate on."""
        ckpt = self.trainer.checkpoint_callback
        best = getattr(ckpt, "best_model_score", None) if getattr(ckpt, "monitor", None) == "val/f1" else None
        return f1 if best is None else max(f1, float(best))

    def log_wandb_table(self, key: str, columns: list[str], rows: list[list]) -> None:
        """One ``wandb.Table`` per W&B logger (nothing without one, nor during the sanity check)."""
        if self.trainer.sanity_checking:
            return
        for logger in self.loggers:
            if type(logger).__name__ == "WandbLogger":
                logger.log_table(key, columns=columns, data=rows)

    def predict_step(self, batch: Batch, batch_idx: int) -> list[dict]:
        preds = self.decode(batch)
        return [{"index": int(i), "sentence": s, "prediction": p}
                for i, s, p in zip(batch.indices.tolist(), batch.sentences, preds)]

    # optimisation ----------------------------------------------------------------------------------------
    def parameter_groups(self) -> list[dict]:
        """Two groups when ``pretrained_lr`` is set: parameters of modules flagged ``is_pretrained``, rest."""
        if self.pretrained_lr is None:
            return [{"params": [p for p in self.parameters() if p.requires_grad]}]
        pretrained = {id(p) for m in self.modules() if getattr(m, "is_pretrained", False) for p in m.parameters()}
        params = [p for p in self.parameters() if p.requires_grad]
        return [{"params": [p for p in params if id(p) not in pretrained]},
                {"params": [p for p in params if id(p) in pretrained], "lr": self.pretrained_lr}]

    def configure_optimizers(self) -> Any:
        optimizer = self.optimizer_factory(self.parameter_groups())
        trainer = self._trainer
        # Lightning's mixed-precision plugin refuses to clip the gradients of an optimiser that unscales them
        # itself (the fused kernels): fuse only where that cannot happen.
        if trainer is None or "mixed" not in str(trainer.precision) or not trainer.gradient_clip_val:
            optimizer = fused_if_unset(optimizer)
        if self.scheduler_factory is None:
            return optimizer
        scheduler = self.scheduler_factory(optimizer)
        if hasattr(scheduler, "set_total_steps"):
            scheduler.set_total_steps(self.trainer.estimated_stepping_batches)
        timer = next((c for c in self.trainer.callbacks if isinstance(c, Timer)), None)
        if hasattr(scheduler, "set_time_fraction") and timer is not None and timer.time_remaining() is not None:
            budget = timer.time_elapsed() + timer.time_remaining()  # includes time spent before a resume
            scheduler.set_time_fraction(lambda: min(1.0, timer.time_elapsed("train") / budget))
        interval = getattr(scheduler, "interval", "epoch")
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": interval}}

    def configure_gradient_clipping(self, optimizer: torch.optim.Optimizer, gradient_clip_val: float | None = None,
                                    gradient_clip_algorithm: str | None = None) -> None:
        """Lightning's clipping, except that norm clipping in one process reads only the touched rows of
        embeddings that record them (``WordEmbedding.track_rows``): :func:`clip_grad_norm_rows`, same result."""
        lazy = self._lazy_rows()
        if lazy and gradient_clip_val:  # the looked-up rows' gradients are the leaves' (norm clipping only)
            params = [p for group in optimizer.param_groups for p in group["params"]]
            clip_grad_norm_rows(params + [g for z in lazy for g in z.grads()], float(gradient_clip_val), {})
            return
        rows = [r for m in self.modules() if hasattr(m, "touched_rows") for r in [m.touched_rows()] if r is not None]
        if (not rows or not gradient_clip_val or (gradient_clip_algorithm or "norm") != "norm"
                or self.trainer.world_size > 1):  # under DDP other ranks' rows are in the gradient too
            return super().configure_gradient_clipping(optimizer, gradient_clip_val, gradient_clip_algorithm)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        clip_grad_norm_rows(params, float(gradient_clip_val), {id(w): r for w, r in rows})

    # checkpoints -----------------------------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["ner_zoo_format"] = FORMAT_VERSION
        checkpoint["ner_zoo_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
        # random state (dropout masks) of every rank, so a resumed run continues as the uninterrupted one
        # would; every rank runs this hook (Trainer.save_checkpoint dumps on all ranks, rank 0 writes)
        state = {"torch": torch.get_rng_state(), "python": random.getstate(),
                 "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}
        ranks = [state]
        if torch.distributed.is_available() and torch.distributed.is_initialized() \
                and torch.distributed.get_world_size() > 1:
            ranks = [None] * torch.distributed.get_world_size()
            torch.distributed.all_gather_object(ranks, state)
        checkpoint["ner_zoo_rng"] = {"ranks": ranks}
        checkpoint[DIGEST_KEY] = checkpoint_digest(checkpoint)  # last: covers the weights and optimiser state

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        version = checkpoint.get("ner_zoo_format")
        if version is None or version > FORMAT_VERSION:
            raise CheckpointError(
                f"checkpoint format {version!r} is not supported by this ner-zoo (format {FORMAT_VERSION}); "
                "use the ner-zoo version that wrote it"
            )
        where = getattr(self._trainer, "ckpt_path", None) if self._trainer is not None else None
        where = where or "the checkpoint"
        stored = checkpoint.get(DIGEST_KEY)
        if stored is None:
            rank_zero_warn(f"{where} has no integrity digest (written by an older ner-zoo): corruption cannot be "
                           "detected")
        elif stored != checkpoint_digest(checkpoint):
            raise CheckpointError(f"{where}: corrupted checkpoint (its weights do not match the sha256 stored when "
                                  "it was saved); use another copy or an earlier checkpoint")
        self._check_vocabularies(checkpoint, where)
        migrations.migrate_state_dict(type(self).__name__, checkpoint.get("state_dict", {}))  # renamed weights of older code
        self._rng_to_restore = checkpoint.get("ner_zoo_rng")

    def _check_vocabularies(self, checkpoint: dict, where: str) -> None:
        """A checkpoint trained on other data (vocabularies or labels differ) cannot be evaluated on this data."""
        saved = (checkpoint.get("hyper_parameters") or {}).get("vocabs")
        if saved is None:
            return
        ours, theirs = self.vocabs.to_dict(), Vocabularies.from_dict(saved).to_dict()
        diff = [k for k in ours if ours[k] != theirs.get(k)]
        if diff:
            def sizes(k: str) -> str:
                a, b = theirs[k]["tokens"], ours[k]["tokens"]
                return f"{k}: {len(a)} in the checkpoint, {len(b)} here, {len(set(a) ^ set(b))} not in both"

            parts = [sizes(k) if k in ("words", "chars") else f"{k}: {theirs.get(k)!r} in the checkpoint, "
                     f"{ours[k]!r} here" for k in diff]
            raise CheckpointError(f"{where} was trained on other data: its vocabularies differ from this data "
                                  f"module's ({'; '.join(p[:200] for p in parts)}); evaluate it on the data it was "
                                  "trained on, or use `ner-zoo predict --ckpt_path` (it uses the checkpoint's own)")

    # lazy row updates of word embeddings (ner_zoo.training.lazy_rows): on while training, flushed before
    # anything reads the weights -------------------------------------------------------------------------
    def _lazy_rows(self) -> list[LazyRows]:
        return [m.lazy for m in self.modules() if getattr(m, "lazy", None) is not None]

    def _flush_lazy_rows(self) -> None:
        for lazy in self._lazy_rows():
            lazy.flush()

    def _start_lazy_rows(self) -> None:
        self._stop_lazy_rows()  # one left by an interrupted fit: its pending steps are applied first
        optimizers = self.trainer.optimizers
        for m in self.modules():
            if not getattr(m, "track_rows", False) or not hasattr(m, "lazy") or len(optimizers) != 1:
                continue
            weight = m.embedding.weight
            if lazy_rows_apply(self.trainer, self, optimizers[0], weight, m.embedding):
                m.lazy = LazyRows(weight, optimizers[0])

    def _stop_lazy_rows(self) -> None:
        for m in self.modules():
            if getattr(m, "lazy", None) is not None:
                m.lazy, lazy = None, m.lazy
                lazy.close()

    def on_train_epoch_end(self) -> None:
        self._flush_lazy_rows()  # before the epoch's scheduler step and the end-of-epoch checkpoints

    def on_validation_start(self) -> None:
        self._flush_lazy_rows()

    def on_train_end(self) -> None:
        self._stop_lazy_rows()

    def on_train_start(self) -> None:
        self._start_lazy_rows()
        rng, self._rng_to_restore = getattr(self, "_rng_to_restore", None), None
        if rng is not None and "ranks" in rng:  # one state per rank (older checkpoints: one state)
            ranks = rng["ranks"]
            if len(ranks) != self.trainer.world_size:
                rank_zero_warn(f"checkpoint holds the random state of {len(ranks)} process(es), this run has "
                               f"{self.trainer.world_size}: dropout masks will differ from the interrupted run")
            rng = ranks[self.trainer.global_rank % len(ranks)]
        if rng is not None:  # resuming fit: restored here, after the loaders were set up as in the first run
            torch.set_rng_state(rng["torch"])
            random.setstate(rng["python"])
            if rng["cuda"] and torch.cuda.is_available() and len(rng["cuda"]) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(rng["cuda"])



def format_table(rows: list[list]) -> str:
    """A per-type P/R/F1 table (percentages) as aligned text."""
    width = max([4] + [len(str(r[0])) for r in rows])
    lines = [f"{'type':<{width}}  {'prec':>6}  {'rec':>6}  {'f1':>6}  {'support':>7}"]
    for name, p, r, f, n in rows:
        lines.append(f"{name:<{width}}  {100 * p:6.2f}  {100 * r:6.2f}  {100 * f:6.2f}  {n:>7}")
    return "\n".join(lines)
