"""SGD with momentum on a word embedding, updating only the rows a step looked up; the others catch up lazily.

With ``torch.optim.SGD`` (momentum ``m``, no dampening, Nesterov, weight decay or maximize) a row whose
gradient is zero for ``k`` steps at a constant learning rate ``lr`` follows a closed form::

    buf_k = m^k buf_0,    w_k = w_0 - lr * buf_0 * (m + m^2 + ... + m^k) = w_0 - lr * buf_0 * m (1 - m^k) / (1 - m)

So a step updates only the rows it read (a few hundred of a 29k-row table) and the optimiser skips the
weight (its ``.grad`` stays ``None``: the lookup's gradient goes to a small leaf holding those rows); a row
is brought up to date when it is read again (:meth:`LazyRows.lookup`), and every row (:meth:`LazyRows.flush`)
before anything else reads the weights or the momentum buffer: evaluation, ``state_dict`` of the model or
the optimiser (checkpoints), a change of learning rate or momentum, the end of an epoch and of training.
Exact up to rounding (one multiplication instead of ``k``). The momentum buffer is the optimiser's own
``state[weight]["momentum_buffer"]``, so checkpoints have the same form with and without it.

:func:`lazy_rows_apply` says when it is safe: one process, one SGD optimiser as above, automatic
optimisation, no gradient accumulation, no fp16 gradient scaler, norm clipping or none, weights on the CPU
(on a GPU the dense update is one fast kernel, and the bookkeeping would wait for the device); otherwise
training runs the plain dense update. Models turn it on with ``WordEmbedding.track_rows`` (``BiLSTMCRF``).
A callback that reads the weights between training steps without ``state_dict()`` sees stale rows: call
``module.lazy.flush()`` first. Measured in docs/benchmarks.md (issue 19, third pass).
"""

from __future__ import annotations

import torch
from lightning.pytorch.callbacks import Callback
from torch import nn


class LazyRows:
    """The lazy row updates of one embedding ``weight`` trained by ``optimizer`` (see the module docstring)."""

    def __init__(self, weight: nn.Parameter, optimizer: torch.optim.Optimizer):
        self.weight, self.optimizer = weight, optimizer
        self.group = next(g for g in optimizer.param_groups if any(p is weight for p in g["params"]))
        self.now = 0  # steps taken
        self.last = torch.zeros(weight.shape[0], dtype=torch.long, device=weight.device)  # steps applied, per row
        self.lr = self.momentum = None  # of the pending steps
        #: this step's lookups: (rows, leaf = their up-to-date weights, their up-to-date momentum or None)
        self.leaves: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]] = []
        self._hooks = [optimizer.register_step_post_hook(lambda opt, args, kwargs: self.after_step()),
                       optimizer.register_state_dict_pre_hook(lambda opt: self.flush()),
                       optimizer.register_load_state_dict_post_hook(lambda opt: self.reset())]

    def close(self) -> None:
        """Flush and stop: the optimiser no longer calls it."""
        self.flush()
        for h in self._hooks:
            h.remove()
        self._hooks, self.leaves = [], []

    def _buffer(self) -> torch.Tensor | None:
        return self.optimizer.state.get(self.weight, {}).get("momentum_buffer")

    def _catch_up(self, w: torch.Tensor, b: torch.Tensor, last: torch.Tensor) -> None:
        """Rows ``w`` and momentum ``b`` last brought up to date at steps ``last``, to now (in place)."""
        k = (self.now - last).double()
        m = float(self.momentum)
        decay = torch.pow(m, k)  # float64: m^k
        shift = decay.mul(-m).add_(m).mul_(self.lr / (1 - m)) if m != 1 else k.mul(self.lr)  # lr m (1 - m^k) / (1 - m)
        w.sub_(b * shift.to(b.dtype).unsqueeze(1))
        b.mul_(decay.to(b.dtype).unsqueeze(1))

    def _rows(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Up-to-date copies of the weights and momentum of ``rows`` (nothing is written)."""
        w, buf = self.weight.detach().index_select(0, rows), self._buffer()
        if buf is None:
            return w, None
        b = buf.index_select(0, rows)
        if self.lr is not None:
            self._catch_up(w, b, self.last.index_select(0, rows))
        return w, b

    @torch.no_grad()
    def flush(self) -> None:
        """Bring every row up to date."""
        buf = self._buffer()
        if buf is not None and self.lr is not None and bool((self.last < self.now).any()):
            self._catch_up(self.weight.data, buf, self.last)
        self.last.fill_(self.now)

    def reset(self) -> None:
        """Forget pending steps (the weights and buffer were just loaded, up to date)."""
        self.last.fill_(self.now)
        self.leaves = []

    def lookup(self, ids: torch.Tensor, padding_idx: int | None) -> torch.Tensor:
        """``embedding(ids)`` for a training step, read through a leaf holding the up-to-date rows of ``ids``;
        the leaf receives their gradient (the weight gets none)."""
        rows, inverse = torch.unique(ids, return_inverse=True)
        with torch.no_grad():
            w, b = self._rows(rows)
        leaf = w.requires_grad_()
        pad = None
        if padding_idx is not None:
            hit = (rows == padding_idx).nonzero()
            pad = int(hit[0, 0]) if hit.numel() else None
        self.leaves.append((rows, leaf, b))
        return nn.functional.embedding(inverse, leaf, padding_idx=pad)

    def grads(self) -> list[torch.Tensor]:
        """The gradients of this step's lookups (for gradient clipping)."""
        return [leaf for _, leaf, _ in self.leaves if leaf.grad is not None]

    @torch.no_grad()
    def after_step(self) -> None:
        """The SGD update of the looked-up rows, after the optimiser stepped the other parameters."""
        leaves, self.leaves = [x for x in self.leaves if x[1].grad is not None], []
        if not leaves:  # no gradient reached the weight: SGD leaves it (and its buffer) alone this step
            return
        lr, m = self.group["lr"], self.group["momentum"]
        if self.lr is not None and (lr, m) != (self.lr, self.momentum):
            self.flush()  # the pending steps ran at the old values (the rows' copies stay valid)
        self.lr, self.momentum = lr, m
        if len(leaves) == 1:
            rows, w, b = leaves[0]
            grad = w.grad
        else:  # several lookups in one step: one update of the distinct rows with the summed gradient
            rows, inverse = torch.unique(torch.cat([r for r, _, _ in leaves]), return_inverse=True)
            grad = torch.zeros(len(rows), self.weight.shape[1], dtype=self.weight.dtype, device=self.weight.device)
            grad.index_add_(0, inverse, torch.cat([leaf.grad for _, leaf, _ in leaves]))
            w, b = self._rows(rows)
        state = self.optimizer.state[self.weight]
        if state.get("momentum_buffer") is None:
            state["momentum_buffer"] = torch.zeros_like(self.weight)  # SGD's first step: buf = grad
        b = b.mul_(m).add_(grad) if b is not None and m else grad.clone()
        state["momentum_buffer"].index_copy_(0, rows, b)
        self.weight.index_copy_(0, rows, torch.add(w.detach(), b, alpha=-lr))
        self.now += 1
        self.last.index_fill_(0, rows, self.now)


def lazy_rows_apply(trainer, module, optimizer: torch.optim.Optimizer, weight: nn.Parameter,
                    embedding: nn.Embedding) -> bool:
    """Whether :class:`LazyRows` gives the plain update for ``weight`` in this fit (see the module docstring).
    Only under a single-device strategy: a DDP wrapper, even of one process, requires every parameter (the
    table included) to receive its gradient in the backward pass."""
    from lightning.pytorch.strategies import SingleDeviceStrategy

    if (type(optimizer) is not torch.optim.SGD or not isinstance(trainer.strategy, SingleDeviceStrategy) or not module.automatic_optimization or trainer.world_size != 1
            or trainer.accumulate_grad_batches != 1 or str(trainer.precision).startswith("16")
            or (trainer.gradient_clip_algorithm or "norm") != "norm" or not weight.requires_grad
            or weight.device.type != "cpu"
            or embedding.max_norm is not None or embedding.scale_grad_by_freq or embedding.sparse):
        return False
    groups = [g for g in optimizer.param_groups if any(p is weight for p in g["params"])]
    return len(groups) == 1 and not any(groups[0].get(k) for k in ("dampening", "nesterov", "weight_decay",
                                                                    "maximize", "differentiable"))


class LazyRowsCallback(Callback):
    """Lazy row updates while training (every embedding flagged ``track_rows`` that has a ``lazy`` slot, where
    :func:`lazy_rows_apply` allows it), flushed before anything reads the weights: the end of an epoch (before
    its scheduler step and checkpoints), validation, the end of training. Added to every fit by
    :meth:`NERModule.configure_callbacks <ner_zoo.training.base.NERModule.configure_callbacks>`."""

    @staticmethod
    def active(pl_module: nn.Module) -> list[LazyRows]:
        return [m.lazy for m in pl_module.modules() if getattr(m, "lazy", None) is not None]

    def on_train_start(self, trainer, pl_module) -> None:
        self.on_train_end(trainer, pl_module)  # one left by an interrupted fit: its pending steps are applied
        optimizers = trainer.optimizers
        for m in pl_module.modules():
            if not getattr(m, "track_rows", False) or not hasattr(m, "lazy") or len(optimizers) != 1:
                continue
            weight = m.embedding.weight
            if lazy_rows_apply(trainer, pl_module, optimizers[0], weight, m.embedding):
                m.lazy = LazyRows(weight, optimizers[0])

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        for lazy in self.active(pl_module):
            lazy.flush()

    def on_validation_start(self, trainer, pl_module) -> None:
        self.on_train_epoch_end(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        for m in pl_module.modules():
            if getattr(m, "lazy", None) is not None:
                m.lazy, lazy = None, m.lazy
                lazy.close()
