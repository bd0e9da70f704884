"""Shared LightningModule of every model of the zoo: the lifecycle (prepare, collate, loss, decode, metrics).

A model subclasses :class:`NERModule` (usually through ``SequenceTagger`` or ``SpanModel``) and implements
``compute_loss(batch)`` and ``decode(batch)`` (per sentence: spans, or tags for POS). It may override
``make_collator()`` (the batches every loader gets, as ``model.collator``), ``prepare(train, context)``
(data-dependent set-up, run once by ``setup("fit")``), ``add_context(sentences)`` and the evaluation steps
(``eval_step``, ``update_metrics``, ``log_metrics``, ``stage_metrics``).

Cross-cutting work lives beside it: :mod:`~ner_zoo.training.optim` (optimiser, scheduler, clipping),
:mod:`~ner_zoo.training.checkpoint` (stamps and checks), :mod:`~ner_zoo.training.tables` (per-type tables),
and the callbacks every fit gets from :meth:`NERModule.configure_callbacks`:
:mod:`~ner_zoo.training.random_state` and :mod:`~ner_zoo.training.lazy_rows`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_warn
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable

from ner_zoo.data.batching import Batch
from ner_zoo.data.datamodule import NERDataModule, Vocabularies
from ner_zoo.data.schema import Sentence
from ner_zoo.dotted import leaves
from ner_zoo.errors import CheckpointError, ConfigError
from ner_zoo.metrics import SpanF1, TokenAccuracy
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.training import checkpoint, migrations, optim
from ner_zoo.training.checkpoint import FORMAT_VERSION  # noqa: F401  (re-exported)
from ner_zoo.training.context import CONTEXT_SPLITS, SplitSentences
from ner_zoo.training.optim import clip_grad_norm_rows, default_optimizer, fused_if_unset  # noqa: F401
from ner_zoo.training.tables import best_val_f1, format_table, report_per_type  # noqa: F401
from ner_zoo.training.words import prepare_tokens


SIZE_WORDS = ("dim", "hidden", "size", "filters", "channels", "width", "heads", "units")


def check_sizes(module: torch.nn.Module) -> None:
    """A weight with a size-0 dimension comes from a size argument of 0 (``char_dim``, ``hidden``, ...), which
    torch builds but cannot run (a shape error at the first batch): one line naming the argument."""
    empty = [(n, tuple(p.shape)) for n, p in module.named_parameters() if p.numel() == 0]
    if not empty:
        return
    zeros = [f"--model.init_args.{k}" for k, v in leaves(dict(getattr(module, "hparams", {}))) if v == 0
             and isinstance(v, int) and not isinstance(v, bool)]
    zeros = [k for k in zeros if any(w in k.rpartition(".")[2] for w in SIZE_WORDS)] or zeros  # not padding_idx
    name, shape = empty[0]
    culprit = f"{zeros[0]} 0" if len(zeros) == 1 else "a size argument of 0" + (
        f" (one of {', '.join(zeros[:4])})" if zeros else "")
    raise ConfigError(f"{culprit} gives {type(module).__name__} an empty weight ({name}: "
                      f"{' x '.join(map(str, shape))}); sizes must be >= 1")


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

    def add_context(self, sentences: Iterable[Sentence], replace: bool = False) -> None:
        """Index ``sentences`` as document context of the encoders that read it, in place of those indexed
        before when ``replace`` (a no-op, reading nothing, for models without)."""
        encoders = self.context_encoders()
        if encoders:
            sentences = list(sentences)
            for encoder in encoders:
                encoder.add_documents(sentences, replace=replace)

    def on_predict_start(self) -> None:
        if self.context_encoders():  # the sentences to predict are their own document context
            loaders = self.trainer.predict_dataloaders
            for loader in loaders if isinstance(loaders, (list, tuple)) else [loaders]:
                self.add_context(getattr(loader.dataset, "sentences", ()))

    def setup(self, stage: str) -> None:
        """Run :meth:`prepare` once before fitting, and offer the stage's sentences to :meth:`add_context`
        otherwise."""
        dm = self.trainer.datamodule if self._trainer is not None else None
        splits = SplitSentences(dm if isinstance(dm, NERDataModule) else None)
        if stage == "fit":
            check_sizes(self)
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

            where = f"loss became {loss.item()} at step {self.global_step} (epoch {self.current_epoch})"
            if self.global_step == 0:  # before any update: not the learning rate
                raise TrainingDiverged(f"{where}, before any update: a --model.init_args setting (a loss weight "
                                       "or exponent) or the input gives it; --trainer.precision 32-true if mixed")
            raise TrainingDiverged(f"{where}; lower --model.init_args.optimizer.init_args.lr, set "
                                   "--trainer.gradient_clip_val or use --trainer.precision 32-true")
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
        self.log_metrics("test")

    def log_metrics(self, stage: str) -> dict:
        """Compute, log and reset the stage's metrics (per-type tables: :mod:`~ner_zoo.training.tables`);
        returns the span F1 result (accuracy for POS)."""
        metric = self.metrics[stage]
        result = metric.compute()
        metric.reset()
        if self.is_pos:  # one monitor name for every task
            scalars = {f"{stage}/accuracy": float(result), f"{stage}/f1": float(result)}
        else:
            scalars = metric.to_floats(result, prefix=f"{stage}/")
        if stage == "val" and not self.trainer.sanity_checking:
            scalars["val/f1_best"] = best_val_f1(self.trainer, scalars["val/f1"])
        self.log_dict(scalars)
        if not self.is_pos:
            report_per_type(self, stage, metric.per_type_rows(result, micro=True))
        return result

    def predict_step(self, batch: Batch, batch_idx: int) -> list[dict]:
        preds = self.decode(batch)
        return [{"index": int(i), "sentence": s, "prediction": p}
                for i, s, p in zip(batch.indices.tolist(), batch.sentences, preds)]

    # optimisation and checkpoints (ner_zoo.training.optim, ner_zoo.training.checkpoint) ------------------
    def parameter_groups(self) -> list[dict]:
        """Two groups when ``pretrained_lr`` is set: parameters of modules flagged ``is_pretrained``, rest."""
        return optim.parameter_groups(self, self.pretrained_lr)

    def configure_optimizers(self) -> Any:
        return optim.optimizers_for(self, self.optimizer_factory, self.scheduler_factory)

    def configure_gradient_clipping(self, optimizer: torch.optim.Optimizer, gradient_clip_val: float | None = None,
                                    gradient_clip_algorithm: str | None = None) -> None:
        """Lightning's clipping, except over touched embedding rows (:func:`optim.clip_touched_rows`)."""
        if not optim.clip_touched_rows(self, optimizer, gradient_clip_val, gradient_clip_algorithm):
            super().configure_gradient_clipping(optimizer, gradient_clip_val, gradient_clip_algorithm)

    def configure_callbacks(self) -> list[pl.Callback]:
        """The callbacks every fit of a zoo model needs, added to the trainer's own."""
        from ner_zoo.training.lazy_rows import LazyRowsCallback
        from ner_zoo.training.random_state import RandomState

        return [RandomState(), LazyRowsCallback()]

    def on_save_checkpoint(self, checkpoint_: dict) -> None:
        checkpoint.stamp(self, checkpoint_)

    def on_load_checkpoint(self, checkpoint_: dict) -> None:
        checkpoint.check(self, checkpoint_)
        migrations.migrate_state_dict(type(self).__name__, checkpoint_.get("state_dict", {}))  # older code's names
