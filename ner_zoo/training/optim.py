"""Optimisation helpers of :class:`~ner_zoo.training.base.NERModule`: the default optimiser, parameter groups
(a learning rate of their own for pretrained weights), the fused kernels, the scheduler from the config, and
norm clipping that reads only the touched rows of an embedding."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

import torch


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


def parameter_groups(module: torch.nn.Module, pretrained_lr: float | None) -> list[dict]:
    """Two groups when ``pretrained_lr`` is set: parameters of modules flagged ``is_pretrained``, rest."""
    params = [p for p in module.parameters() if p.requires_grad]
    if pretrained_lr is None:
        return [{"params": params}]
    pretrained = {id(p) for m in module.modules() if getattr(m, "is_pretrained", False) for p in m.parameters()}
    return [{"params": [p for p in params if id(p) not in pretrained]},
            {"params": [p for p in params if id(p) in pretrained], "lr": pretrained_lr}]


def optimizers_for(module: Any, optimizer_factory: Any, scheduler_factory: Any) -> Any:
    """What ``configure_optimizers`` returns: the optimiser from its factory (fused where safe) and the
    scheduler from its (``interval`` honoured; ``set_total_steps``/``set_time_fraction`` fed by the trainer)."""
    from lightning.pytorch.callbacks import Timer

    optimizer = optimizer_factory(module.parameter_groups())
    trainer = module._trainer
    # Lightning's mixed-precision plugin refuses to clip the gradients of an optimiser that unscales them
    # itself (the fused kernels): fuse only where that cannot happen.
    if trainer is None or "mixed" not in str(trainer.precision) or not trainer.gradient_clip_val:
        optimizer = fused_if_unset(optimizer)
    if scheduler_factory is None:
        return optimizer
    scheduler = scheduler_factory(optimizer)
    if hasattr(scheduler, "set_total_steps"):
        scheduler.set_total_steps(module.trainer.estimated_stepping_batches)
    timer = next((c for c in module.trainer.callbacks if isinstance(c, Timer)), None)
    if hasattr(scheduler, "set_time_fraction") and timer is not None and timer.time_remaining() is not None:
        budget = timer.time_elapsed() + timer.time_remaining()  # includes time spent before a resume
        scheduler.set_time_fraction(lambda: min(1.0, timer.time_elapsed("train") / budget))
    interval = getattr(scheduler, "interval", "epoch")
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": interval}}


def clip_touched_rows(module: Any, optimizer: torch.optim.Optimizer, max_norm: float | None,
                      algorithm: str | None) -> bool:
    """Norm clipping in one process over only the touched rows of embeddings that record them
    (``WordEmbedding.track_rows``, lazy rows): :func:`clip_grad_norm_rows`, same result as Lightning's. False
    where Lightning's own clipping applies instead."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    lazy = [m.lazy for m in module.modules() if getattr(m, "lazy", None) is not None]
    if lazy and max_norm:  # the looked-up rows' gradients are the leaves' (lazy rows run only under norm clipping)
        clip_grad_norm_rows(params + [g for z in lazy for g in z.grads()], float(max_norm), {})
        return True
    rows = [r for m in module.modules() if hasattr(m, "touched_rows") for r in [m.touched_rows()] if r is not None]
    if not rows or not max_norm or (algorithm or "norm") != "norm" or module.trainer.world_size > 1:
        return False  # under DDP other ranks' rows are in the gradient too
    clip_grad_norm_rows(params, float(max_norm), {id(w): r for w, r in rows})
    return True


def check_finite(loss: torch.Tensor, step: int, epoch: int) -> None:
    """A non-finite training loss stops the fit with one line saying what to change (before any update: a
    setting or the input, not the learning rate)."""
    if torch.isfinite(loss):
        return
    from ner_zoo.errors import TrainingDiverged

    where = f"loss became {loss.item()} at step {step} (epoch {epoch})"
    if step == 0:
        raise TrainingDiverged(f"{where}, before any update: a --model.init_args setting (a loss weight "
                               "or exponent) or the input gives it; --trainer.precision 32-true if mixed")
    raise TrainingDiverged(f"{where}; lower --model.init_args.optimizer.init_args.lr, set "
                           "--trainer.gradient_clip_val or use --trainer.precision 32-true")
