"""Stand-ins for the parts of Lightning and torchmetrics that model and data-module *definitions* touch, so the
commands that only read data or run a trained model (``predict``, ``serve``, ``data stats CORPUS``) start
without importing them (~3-5 s of CPU: Lightning pulls in torch._dynamo, torchmetrics pulls in transformers,
scipy and more). Measured in benchmarks/startup.py.

Used by those CLI commands, in their own short-lived process, and by ``ner_zoo.load`` (which takes them out of
``sys.modules`` again once the model is loaded: :func:`with_real_fallback_detached`), only when neither package
was imported yet: :func:`installed` puts modules named ``lightning``, ``lightning.pytorch``... into ``sys.modules``. The
stand-in ``LightningModule`` is a ``torch.nn.Module`` with what inference uses (``save_hyperparameters``,
``hparams``, ``device``, ``load_from_checkpoint``; no Trainer); metrics keep states but never synchronise.
Anything beyond that raises, and :func:`installed` then removes every stand-in and every module imported
under them, so the caller retries with the real packages (``with_real_fallback``). Tests compare predictions
of both paths.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import types
import warnings
from typing import Any, Callable, Iterable, Iterator

STUBBED = ("lightning", "pytorch_lightning", "torchmetrics")
_MARK = "__ner_zoo_stand_in__"


class AttributeDict(dict):
    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    setattr(m, _MARK, True)
    m.__path__ = []  # a package: submodules resolve from sys.modules
    return m


def _make() -> dict[str, types.ModuleType]:
    import torch

    def rank_zero_warn(message: Any, *args: Any, **kwargs: Any) -> None:
        warnings.warn(str(message), UserWarning, stacklevel=2)

    def rank_zero_info(*args: Any, **kwargs: Any) -> None:
        pass

    class LightningModule(torch.nn.Module):
        """nn.Module with the hyper-parameter and loading helpers of Lightning's, and no Trainer."""

        _trainer = None
        trainer = None
        current_epoch = 0
        global_step = 0

        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__()
            self._hparams = AttributeDict()

        @property
        def hparams(self) -> AttributeDict:
            return self._hparams

        def save_hyperparameters(self, *args: Any, ignore: Iterable[str] = (), logger: bool = True, **kw: Any) -> None:
            frame = inspect.currentframe().f_back
            info = inspect.getargvalues(frame)
            found = {k: info.locals[k] for k in info.args if k != "self"}
            if info.keywords:
                found.update(info.locals.get(info.keywords) or {})
            ignore = {ignore} if isinstance(ignore, str) else set(ignore)
            self._hparams.update({k: v for k, v in found.items() if k not in ignore})

        @property
        def device(self) -> torch.device:
            p = next(iter(self.parameters()), None)
            return p.device if p is not None else torch.device("cpu")

        def log(self, *args: Any, **kwargs: Any) -> None:
            pass

        def log_dict(self, *args: Any, **kwargs: Any) -> None:
            pass

        @classmethod
        def load_from_checkpoint(cls, source: Any, map_location: Any = None, weights_only: bool = True, **kw: Any):
            from ner_zoo.api.folder import instantiate

            ckpt = torch.load(source, map_location="cpu", weights_only=weights_only)
            hp = {k: v for k, v in (ckpt.get("hyper_parameters") or {}).items()
                  if not k.startswith("_") and k not in ("optimizer", "lr_scheduler")}  # training-only
            model = instantiate(cls, hp)
            model.on_load_checkpoint(ckpt)
            model.load_state_dict(ckpt["state_dict"], strict=True)
            return model.to(map_location or "cpu")

    class LightningDataModule:
        trainer = None

        def __init__(self, *args: Any, **kwargs: Any):
            pass

    class Callback:
        pass

    class Timer(Callback):
        pass

    class Metric(torch.nn.Module):
        full_state_update = False

        def __init__(self, **kwargs: Any):
            super().__init__()
            self._defaults: dict[str, Any] = {}

        def add_state(self, name: str, default: Any, dist_reduce_fx: Any = None, persistent: bool = False) -> None:
            self._defaults[name] = default
            setattr(self, name, default.clone() if isinstance(default, torch.Tensor) else list(default))

        def reset(self) -> None:
            for name, default in self._defaults.items():
                setattr(self, name, default.clone() if isinstance(default, torch.Tensor) else list(default))

    class MeanMetric(Metric):
        def __init__(self, **kwargs: Any):
            super().__init__(**kwargs)
            self.add_state("total", torch.tensor(0.0))
            self.add_state("weight", torch.tensor(0.0))

        def update(self, value: Any, weight: float = 1.0) -> None:
            value = torch.as_tensor(value, dtype=torch.float)
            self.total = self.total + value.sum() * weight
            self.weight = self.weight + value.numel() * weight

        def compute(self) -> torch.Tensor:
            return self.total / self.weight

    class SIGTERMException(SystemExit):
        pass

    utilities = _module("lightning.pytorch.utilities", rank_zero_warn=rank_zero_warn, rank_zero_info=rank_zero_info)
    callbacks = _module("lightning.pytorch.callbacks", Callback=Callback, Timer=Timer)
    cli = _module("lightning.pytorch.cli", OptimizerCallable=Callable[[Iterable], torch.optim.Optimizer],
                  LRSchedulerCallable=Callable[[torch.optim.Optimizer], Any])
    pl = _module("lightning.pytorch", LightningModule=LightningModule, LightningDataModule=LightningDataModule,
                 Callback=Callback, utilities=utilities, callbacks=callbacks, cli=cli)
    tm_agg = _module("torchmetrics.aggregation", MeanMetric=MeanMetric)
    return {"lightning": _module("lightning", pytorch=pl), "lightning.pytorch": pl,
            "lightning.pytorch.utilities": utilities, "lightning.pytorch.callbacks": callbacks,
            "lightning.pytorch.cli": cli,
            "lightning.pytorch.utilities.exceptions": _module("lightning.pytorch.utilities.exceptions",
                                                              SIGTERMException=SIGTERMException),
            "torchmetrics": _module("torchmetrics", Metric=Metric, MeanMetric=MeanMetric, aggregation=tm_agg),
            "torchmetrics.aggregation": tm_agg}


def active() -> bool:
    return getattr(sys.modules.get("lightning"), _MARK, False)


_BEFORE: set[str] = set()


def remove() -> None:
    """Drop the stand-ins and every ner_zoo module imported while they were in place."""
    for name in [n for n in sys.modules if n.split(".")[0] in STUBBED and getattr(sys.modules[n], _MARK, False)]:
        del sys.modules[name]
    for name in [n for n in sys.modules if n.startswith("ner_zoo.") and n not in _BEFORE]:
        del sys.modules[name]


@contextlib.contextmanager
def installed() -> Iterator[bool]:
    """Put the stand-ins in place (yields True) unless Lightning or torchmetrics is imported already (False)."""
    if any(name in sys.modules for name in STUBBED) or os.environ.get("NER_ZOO_REAL_LIGHTNING", "") not in ("", "0"):
        yield False  # NER_ZOO_REAL_LIGHTNING=1: never the stand-ins (benchmarks/startup.py compares both)
        return
    _BEFORE.clear()
    _BEFORE.update(sys.modules)
    sys.modules.update(_make())
    yield True


def with_real_fallback(fn: Callable[[], Any]) -> Any:
    """``fn()`` under the stand-ins; if it fails for any reason, again with the real Lightning."""
    with installed() as on:
        if not on:
            return fn()
        from ner_zoo.errors import NerZooError

        try:
            return fn()
        except NerZooError:  # the user's input is at fault, with or without the stand-ins
            raise
        except Exception:  # noqa: BLE001 - anything the stand-ins lack: the real packages decide
            remove()
    return fn()


def detach() -> dict[str, types.ModuleType]:
    """Take the stand-ins and the ner_zoo modules imported under them out of ``sys.modules``; returns them."""
    names = [n for n in sys.modules if (n.split(".")[0] in STUBBED and getattr(sys.modules[n], _MARK, False))
             or (n.startswith("ner_zoo.") and n not in _BEFORE)]
    return {n: sys.modules.pop(n) for n in names}


def with_real_fallback_detached(fn: Callable[[], Any]) -> tuple[Any, dict[str, types.ModuleType]]:
    """:func:`with_real_fallback` for a long-lived process (``ner_zoo.load``, which may train later): afterwards
    the stand-ins and the modules imported under them are out of ``sys.modules`` again, so a later ``import
    lightning`` gets the real package. Returns ``(fn(), those modules)``; what ``fn`` made runs with them put back
    (:func:`attached`), since its code may import lazily."""
    modules: dict[str, types.ModuleType] = {}

    def run() -> Any:
        result = fn()
        if active():
            modules.update(detach())
        return result

    from ner_zoo.errors import NerZooError

    try:
        return with_real_fallback(run), modules
    except NerZooError:
        if active():
            remove()
        raise


@contextlib.contextmanager
def attached(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    """``modules`` (from :func:`detach`) back in ``sys.modules`` for the duration; ner_zoo modules first imported
    meanwhile join them afterwards (they were imported under the stand-ins). Not thread-safe: one call at a time."""
    if not modules:
        yield
        return
    saved = {n: sys.modules.get(n) for n in modules}
    before = set(sys.modules) | set(modules)
    sys.modules.update(modules)
    try:
        yield
    finally:
        for n in [n for n in sys.modules if n not in before and (n.startswith("ner_zoo.") or n.split(".")[0] in STUBBED)]:
            modules[n] = sys.modules.pop(n)
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
