"""The one task module: the LightningModule that fits a paper's network (a plain ``nn.Module``,
:mod:`ner_zoo.training.network`) and evaluates it.

``ner_zoo.models.<Paper>`` is made by :func:`host_class` from the network ``<Paper>Net``: a :class:`NERModule`
whose init arguments are the network's plus the optimiser's (``optimizer``, ``lr_scheduler``, ``pretrained_lr``),
so configs keep naming the paper's class. The host holds the network as ``self.net`` (checkpoint weights
``net.*``), reads as it (an attribute the host lacks is the network's) and keeps the lifecycle: the collator
for the loaders, ``prepare`` once when fitting starts, the steps, the metrics (per type; per length and nesting for
span models), the optimiser and the checkpoint stamps.

Cross-cutting work lives beside it: :mod:`~ner_zoo.training.optim` (optimiser, scheduler, clipping, the
diverged-loss check), :mod:`~ner_zoo.checkpoints.entries` (stamps and checks), :mod:`~ner_zoo.training.evaluation`
(what an evaluation logs; per-type tables: :mod:`~ner_zoo.metrics.per_type`), and the callbacks every fit gets from
:meth:`NERModule.configure_callbacks`: :mod:`~ner_zoo.training.random_state`, :mod:`~ner_zoo.training.lazy_rows`
and :class:`~ner_zoo.training.context.StageContext` (document context of validate/test/predict, written by the one
writer :func:`~ner_zoo.training.prediction.index_context`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable
from lightning.pytorch.utilities import rank_zero_warn

from ner_zoo.checkpoints import entries as checkpoint
from ner_zoo.checkpoints import migrations
from ner_zoo.checkpoints.entries import FORMAT_VERSION  # noqa: F401  (re-exported)
from ner_zoo.data.batching import Batch
from ner_zoo.data.datamodule import NERDataModule
from ner_zoo.data.schema import Sentence
from ner_zoo.dotted import leaves
from ner_zoo.errors import ConfigError
from ner_zoo.metrics import SpanF1, SpanF1ByLength, SpanF1ByNesting, TokenAccuracy
from ner_zoo.metrics.per_type import best_val_f1, format_table, log_wandb_table, report_per_type  # noqa: F401
from ner_zoo.modules.transformer import TransformerEncoder
from ner_zoo.ranges import PositiveFloat, check_ranges
from ner_zoo.training import optim
from ner_zoo.training.context import SplitSentences, StageContext, evaluation_batches
from ner_zoo.training.evaluation import log_evaluation
from ner_zoo.training.network import Network
from ner_zoo.training.optim import clip_grad_norm_rows, default_optimizer, fused_if_unset  # noqa: F401
from ner_zoo.training.prediction import with_scores
from ner_zoo.training.span_model import SpanModel

SIZE_WORDS = ("dim", "hidden", "size", "filters", "channels", "width", "heads", "units")


def check_sizes(module: torch.nn.Module, hparams: Mapping[str, Any]) -> None:
    """A weight with a size-0 dimension comes from a size argument of 0 (``char_dim``, ``hidden``, ...), which
    torch builds but cannot run (a shape error at the first batch): one line naming the argument."""
    empty = [(n, tuple(p.shape)) for n, p in module.named_parameters() if p.numel() == 0]
    if not empty:
        return
    zeros = [f"--model.init_args.{k}" for k, v in leaves(dict(hparams)) if v == 0
             and isinstance(v, int) and not isinstance(v, bool)]
    zeros = [k for k in zeros if any(w in k.rpartition(".")[2] for w in SIZE_WORDS)] or zeros  # not padding_idx
    name, shape = empty[0]
    culprit = f"{zeros[0]} 0" if len(zeros) == 1 else "a size argument of 0" + (
        f" (one of {', '.join(zeros[:4])})" if zeros else "")
    raise ConfigError(f"{culprit} gives {migrations.paper(type(module).__name__)} an empty weight ({name}: "
                      f"{' x '.join(map(str, shape))}); sizes must be >= 1")


def _task_arguments(optimizer: OptimizerCallable = default_optimizer, lr_scheduler: LRSchedulerCallable | None = None,
                    pretrained_lr: PositiveFloat | None = None) -> None:
    """The host's own init arguments (beside the network's).

    Args:
        optimizer: optimiser factory (``class_path``/``init_args`` in YAML), called with parameter groups.
        lr_scheduler: scheduler factory; its class attribute ``interval`` (``epoch``/``step``) is honoured.
        pretrained_lr: learning rate of pretrained transformer weights (``None``: same as the rest).
    """




def init_parameters(fn: Callable) -> list[inspect.Parameter]:
    """``fn``'s parameters with their annotations evaluated; through ``**kwargs`` into the base classes'
    ``__init__`` (every network forwards them to ``super().__init__``)."""
    params: list[inspect.Parameter] = []
    owners = [k for k in fn.__mro__ if "__init__" in vars(k)] if isinstance(fn, type) else [fn]
    for owner in owners:
        init = owner.__init__ if isinstance(owner, type) else owner
        hints = typing.get_type_hints(init, include_extras=True)  # ranges (ner_zoo.ranges) kept
        more = False
        for p in list(inspect.signature(init).parameters.values())[1 if isinstance(owner, type) else 0:]:
            if p.kind is p.VAR_KEYWORD:
                more = True
            elif p.kind is not p.VAR_POSITIONAL and all(p.name != q.name for q in params):
                kind = p.kind if owner is owners[0] else p.KEYWORD_ONLY
                params.append(p.replace(annotation=hints.get(p.name, p.annotation), kind=kind))
        if not more or owner is Network:
            break
    return params


def host_class(network: type[Network], name: str) -> type[NERModule]:
    """``<name>``: the :class:`NERModule` of ``network``, in ``network``'s module, with its init arguments."""
    own = init_parameters(network)  # a network may set a task argument's default (pretrained_lr: its own wins)
    task = [p.replace(kind=p.KEYWORD_ONLY) for p in init_parameters(_task_arguments)
            if all(p.name != q.name for q in own)]
    self_ = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    signature = inspect.Signature([self_, *own, *task])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        NERModule.__init__(self, *args, **kwargs)

    __init__.__signature__ = signature
    __init__.__annotations__ = {p.name: p.annotation for p in (*own, *task) if p.annotation is not p.empty}
    __init__.__qualname__ = f"{name}.__init__"
    doc = f"The LightningModule that fits :class:`{network.__name__}`.\n\n{inspect.getdoc(network) or ''}"
    return type(name, (NERModule,), {"__init__": __init__, "network": network, "__module__": network.__module__,
                                     "__qualname__": name, "__doc__": doc,
                                     "network_arguments": tuple(p.name for p in own)})


class NERModule(pl.LightningModule):
    """The task module: fits and evaluates ``self.net``, a :class:`~ner_zoo.training.network.Network`.

    Made per network by :func:`host_class`; its init arguments are the network's and ``optimizer``,
    ``lr_scheduler``, ``pretrained_lr`` (:func:`_task_arguments`).
    """

    network: type[Network]
    network_arguments: tuple[str, ...]  # the init arguments that go to the network

    @classmethod
    def migrate_hparams(cls, hparams: Mapping[str, Any]) -> dict:
        """Saved init arguments with their old names replaced by the current ones (``checkpoints/migrations.py``)."""
        return migrations.migrate_hparams(cls, hparams)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()
        bound = inspect.signature(type(self)).bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        check_ranges(type(self).__init__, arguments)  # before building: one line naming the argument
        self.save_hyperparameters(logger=False)  # built by the CLI: its config (class_path/init_args), as given
        if "_instantiator" not in self.hparams:  # built in Python: the arguments, defaults included
            self.save_hyperparameters(arguments, logger=False)
        self.optimizer_factory, self.scheduler_factory = arguments["optimizer"], arguments["lr_scheduler"]
        self.pretrained_lr = arguments["pretrained_lr"]
        self.net = self.network(**{k: v for k, v in arguments.items() if k in self.network_arguments})
        self.metrics = torch.nn.ModuleDict({stage: self._new_metric() for stage in ("val", "test")})
        if isinstance(self.net, SpanModel):  # F1 per entity length, of nested and flat entities
            self.length_metrics = torch.nn.ModuleDict({stage: SpanF1ByLength() for stage in ("val", "test")})
            self.nesting_metrics = torch.nn.ModuleDict({stage: SpanF1ByNesting() for stage in ("val", "test")})

    # the host reads as its network ------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            net = self.__dict__.get("_modules", {}).get("net")
            if net is None or name.startswith("__"):
                raise
            return getattr(net, name)

    def __setattr__(self, name: str, value: Any) -> None:
        net = self.__dict__.get("_modules", {}).get("net")
        if (net is not None and name not in self.__dict__ and not hasattr(type(self), name)
                and name not in self._modules and name not in self._parameters and hasattr(net, name)):
            setattr(net, name, value)
        else:
            super().__setattr__(name, value)

    # lifecycle ---------------------------------------------------------------------------------------------
    @property
    def vocabs(self):
        return self.net.vocabs

    @property
    def task(self) -> str:
        return self.net.task

    @property
    def is_pos(self) -> bool:
        return self.net.is_pos

    @property
    def prepared(self) -> bool:
        return self.net.prepared

    @prepared.setter
    def prepared(self, value: bool) -> None:
        self.net.prepared = value

    def make_collator(self) -> Callable[[Sequence[tuple[int, Sentence]]], Batch]:
        return self.net.make_collator()

    @property
    def collator(self) -> Callable[[Sequence[tuple[int, Sentence]]], Batch]:
        """The network's collator; loaders get this object, which pickles without the model."""
        return self.net.collator

    def collate(self, items: Sequence[tuple[int, Sentence]]) -> Batch:
        return self.net.collate(items)

    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        """The network's data-dependent set-up (:meth:`Network.prepare`)."""
        self.net.prepare(train, context)

    def context_encoders(self) -> list[TransformerEncoder]:
        return self.net.context_encoders()

    def add_context(self, sentences: Iterable[Sentence], replace: bool = False) -> None:
        self.net.add_context(sentences, replace=replace)

    def setup(self, stage: str) -> None:
        """Run :meth:`prepare` once before fitting (the other stages' document context: the
        :class:`~ner_zoo.training.context.StageContext` callback)."""
        if stage == "fit":
            dm = self.trainer.datamodule if self._trainer is not None else None
            splits = SplitSentences(dm if isinstance(dm, NERDataModule) else None)
            check_sizes(self.net, self.hparams)
            if not self.prepared:
                self.prepare(splits["train"], splits)
                self.prepared = True

    def on_fit_start(self) -> None:
        strategy = self.trainer.strategy
        if any(getattr(m, "syncs_itself", False) for m in self.modules()) and self.trainer.world_size > 1 and \
                getattr(strategy, "_ddp_kwargs", {}).get("broadcast_buffers", True):
            rank_zero_warn(f"{type(self).__name__}'s memory syncs itself across processes; pass "
                           "broadcast_buffers=False to DDPStrategy to avoid broadcasting it from rank 0 at every step")

    def on_fit_end(self) -> None:
        self.net.epoch = None

    def compute_loss(self, batch: Batch) -> torch.Tensor:
        return self.net.compute_loss(batch)

    def decode(self, batch: Batch) -> list[list]:
        return self.net.decode(batch)

    @property
    def features_used(self) -> list[str]:
        return self.net.features_used

    # metrics ---------------------------------------------------------------------------------------------
    def _new_metric(self):
        return TokenAccuracy() if self.task == "pos" else SpanF1(self.vocabs.labels)

    def gold(self, batch: Batch) -> list[list]:
        if self.is_pos:
            return [s.columns[self.vocabs.tag_column] for s in batch.sentences]
        return [s.spans for s in batch.sentences]

    # steps -------------------------------------------------------------------------------------------
    def on_train_epoch_start(self) -> None:
        self.net.epoch = self.current_epoch

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self.net.step = self.global_step

    def on_after_backward(self) -> None:
        self.net.after_backward()

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        loss = self.compute_loss(batch)
        optim.check_finite(loss, self.global_step, self.current_epoch)
        values = self.net.train_values()
        if self.is_logging_step():
            self.log("train/loss", loss, batch_size=len(batch), prog_bar=True)
            if values:
                self.log_dict({f"train/{k}": v for k, v in values.items()}, batch_size=len(batch))
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
        for metric in self.stage_metrics(stage):
            metric.update(preds, gold)

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self.eval_step(batch, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> list[list]:
        return self.eval_step(batch, "test")  # the predictions reach the callbacks' on_test_batch_end

    # Metric states are reset when an evaluation starts, not only after it: a model handed between processes
    # (ddp_spawn) or reused after an interrupted loop must never carry counts into a new evaluation.
    def stage_metrics(self, stage: str) -> list:
        """Every metric object updated during the ``val`` or ``test`` stage."""
        if isinstance(self.net, SpanModel):
            return [self.metrics[stage], self.length_metrics[stage], self.nesting_metrics[stage]]
        return [self.metrics[stage]]

    def on_validation_epoch_start(self) -> None:
        for metric in self.stage_metrics("val"):
            metric.reset()
        t = self.trainer
        limits = t.num_sanity_val_batches if t.sanity_checking else t.num_val_batches
        self.net.start_evaluation("dev", evaluation_batches(t.strategy, t.val_dataloaders, limits))

    def on_test_epoch_start(self) -> None:
        for metric in self.stage_metrics("test"):
            metric.reset()
        t = self.trainer
        self.net.start_evaluation("test", evaluation_batches(t.strategy, t.test_dataloaders, t.num_test_batches))

    def on_validation_epoch_end(self) -> None:
        self.net.end_evaluation()
        self.log_metrics("val")

    def on_test_epoch_end(self) -> None:
        self.net.end_evaluation()
        self.log_metrics("test")

    def log_metrics(self, stage: str) -> dict:
        """Compute, log and reset the stage's metrics and the network's own values
        (:func:`~ner_zoo.training.evaluation.log_evaluation`); returns the span F1 result (accuracy for POS)."""
        return log_evaluation(self, stage)

    def predict_step(self, batch: Batch, batch_idx: int) -> list[dict]:
        """``{index, sentence, prediction, scores}`` per sentence: what use reads (:meth:`Network.predict`)."""
        got = [with_scores(p) for p in self.net.predict(batch)]
        return [{"index": int(i), "sentence": s, "prediction": p, "scores": sc}
                for i, s, (p, sc) in zip(batch.indices.tolist(), batch.sentences, got)]

    # optimisation and checkpoints (ner_zoo.training.optim, ner_zoo.checkpoints.entries) ------------------
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

        return [RandomState(), LazyRowsCallback(), StageContext()]

    def on_save_checkpoint(self, checkpoint_: dict) -> None:
        checkpoint.stamp(self, checkpoint_)

    def on_load_checkpoint(self, checkpoint_: dict) -> None:
        checkpoint.check(self, checkpoint_)
        migrations.to_host(type(self).__name__, checkpoint_.get("state_dict", {}))  # older code's names
