"""SGD with momentum on a word embedding, updating only the rows a step looked up; the others catch up lazily.

With ``torch.optim.SGD`` (momentum ``m``, no dampening, Nesterov, weight decay or maximize) a row whose
gradient is zero for ``k`` steps at a constant learning rate ``lr`` follows a closed form::

    buf_k = m^k buf_0,    w_k = w_0 - lr * buf_0 * (m + m^2 + ... + m^k) = w_0 - lr * buf_0 * m (1 - m^k) / (1 - m)

So a step updates only the rows it read (a few hundred of a 29k-row table) and the optimiser skips the
weight (its ``.grad`` stays ``None``: the lookup's gradient goes to a small leaf holding those rows); a row
is brought up to date when it is read again (:meth:`LazyRows.catch_up`), and every row (:meth:`LazyRows.flush`)
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
from torch import nn


class LazyRows:
    """The lazy row updates of one embedding ``weight`` trained by ``optimizer`` (see the module docstring)."""

    def __init__(self, weight: nn.Parameter, optimizer: torch.optim.Optimizer):
        self.weight, self.optimizer = weight, optimizer
        self.group = next(g for g in optimizer.param_groups if any(p is weight for p in g["params"]))
        self.now = 0  # steps taken
        self.last = torch.zeros(weight.shape[0], dtype=torch.long, device=weight.device)  # steps applied, per row
        self.lr = self.momentum = None  # of the pending steps
        self.leaves: list[tuple[torch.Tensor, torch.Tensor]] = []  # (rows, leaf) of this step's lookups
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

    @torch.no_grad()
    def catch_up(self, rows: torch.Tensor | None = None) -> None:
        """Apply the pending momentum steps of ``rows`` (all rows when ``None``)."""
        buf = self._buffer()
        last = self.last if rows is None else self.last.index_select(0, rows)
        if buf is None or self.lr is None or not bool((last < self.now).any()):
            self._mark(rows)
            return
        m = float(self.momentum)
        decay = torch.pow(torch.tensor(m, dtype=torch.float64, device=last.device), (self.now - last).double())
        shift = decay.mul(-m).add_(m).div_(1 - m) if m != 1 else (self.now - last).double()  # m (1 - m^k) / (1 - m)
        decay, shift = decay.to(buf.dtype).unsqueeze(1), shift.mul_(self.lr).to(buf.dtype).unsqueeze(1)
        if rows is None:
            self.weight.sub_(buf * shift)
            buf.mul_(decay)
        else:
            b = buf.index_select(0, rows)
            self.weight.index_add_(0, rows, b * shift, alpha=-1.0)
            buf.index_copy_(0, rows, b.mul_(decay))
        self._mark(rows)

    def _mark(self, rows: torch.Tensor | None) -> None:  # these rows are up to date
        if rows is None:
            self.last.fill_(self.now)
        else:
            self.last.index_fill_(0, rows, self.now)

    def flush(self) -> None:
        self.catch_up(None)

    def reset(self) -> None:
        """Forget pending steps (the weights and buffer were just loaded, up to date)."""
        self.last.fill_(self.now)
        self.leaves = []

    def lookup(self, ids: torch.Tensor, padding_idx: int | None) -> torch.Tensor:
        """``embedding(ids)`` for a training step: the rows of ``ids`` are brought up to date and read through
        a leaf that receives their gradient (the weight gets none)."""
        rows, inverse = torch.unique(ids, return_inverse=True)
        self.catch_up(rows)
        leaf = self.weight.detach().index_select(0, rows).requires_grad_()
        pad = None
        if padding_idx is not None:
            hit = (rows == padding_idx).nonzero()
            pad = int(hit[0, 0]) if hit.numel() else None
        self.leaves.append((rows, leaf))
        return nn.functional.embedding(inverse, leaf, padding_idx=pad)

    def grads(self) -> list[torch.Tensor]:
        """The gradients of this step's lookups (for gradient clipping)."""
        return [leaf for _, leaf in self.leaves if leaf.grad is not None]

    @torch.no_grad()
    def after_step(self) -> None:
        """The SGD update of the looked-up rows, after the optimiser stepped the other parameters."""
        leaves, self.leaves = [(r, leaf) for r, leaf in self.leaves if leaf.grad is not None], []
        if not leaves:  # no gradient reached the weight: SGD leaves it (and its buffer) alone this step
            return
        lr, m = self.group["lr"], self.group["momentum"]
        if self.lr is not None and (lr, m) != (self.lr, self.momentum):
            self.flush()  # the pending steps ran at the old values
        self.lr, self.momentum = lr, m
        if len(leaves) == 1:
            rows, grad = leaves[0][0], leaves[0][1].grad
        else:
            rows, inverse = torch.unique(torch.cat([r for r, _ in leaves]), return_inverse=True)
            grad = torch.zeros(len(rows), self.weight.shape[1], dtype=self.weight.dtype, device=self.weight.device)
            grad.index_add_(0, inverse, torch.cat([leaf.grad for _, leaf in leaves]))
        state = self.optimizer.state[self.weight]
        if state.get("momentum_buffer") is None:
            state["momentum_buffer"] = torch.zeros_like(self.weight)  # SGD's first step: buf = grad
        buf = state["momentum_buffer"]  # the rows were brought up to date by their lookup
        b = buf.index_select(0, rows).mul_(m).add_(grad) if m else grad.clone()
        buf.index_copy_(0, rows, b)
        self.weight.index_add_(0, rows, b, alpha=-lr)
        self.now += 1
        self._mark(rows)


def lazy_rows_apply(trainer, module, optimizer: torch.optim.Optimizer, weight: nn.Parameter,
                    embedding: nn.Embedding) -> bool:
    """Whether :class:`LazyRows` gives the plain update for ``weight`` in this fit (see the module docstring)."""
    if (type(optimizer) is not torch.optim.SGD or not module.automatic_optimization or trainer.world_size != 1
            or trainer.accumulate_grad_batches != 1 or str(trainer.precision).startswith("16")
            or (trainer.gradient_clip_algorithm or "norm") != "norm" or not weight.requires_grad
            or weight.device.type != "cpu"
            or embedding.max_norm is not None or embedding.scale_grad_by_freq or embedding.sparse):
        return False
    groups = [g for g in optimizer.param_groups if any(p is weight for p in g["params"])]
    return len(groups) == 1 and not any(groups[0].get(k) for k in ("dampening", "nesterov", "weight_decay",
                                                                    "maximize", "differentiable"))
