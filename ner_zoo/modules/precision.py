"""Run numerically fragile pieces (LSTMs, CRFs) in fp32 whatever the trainer's precision.

``nn.LSTM`` under CPU bf16 autocast crashes on CPUs without bf16 kernels, and a CRF's log-sum-exp over
dozens of steps loses too much precision in half types. Modules wrap those parts with :func:`fp32`
(a decorator) or :func:`autocast_off` (a context manager) and upcast their inputs with :func:`to_fp32`.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator, TypeVar

import torch

F = TypeVar("F", bound=Callable[..., Any])


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype to compute in: at least float32 (half types go up, float64 stays)."""
    return torch.promote_types(dtype, torch.float32)


def to_fp32(x: torch.Tensor) -> torch.Tensor:
    """Upcast a float16/bfloat16 tensor to float32; other tensors (float64, integer, bool) pass unchanged."""
    if x.is_floating_point() and x.dtype != compute_dtype(x.dtype):
        return x.float()
    return x


@contextlib.contextmanager
def autocast_off(device: "torch.device | str | torch.Tensor") -> Iterator[None]:
    """Disable autocast for ``device``'s type (a device, a type name or a tensor) inside the block."""
    if isinstance(device, torch.Tensor):
        device = device.device
    device_type = torch.device(device).type
    if not torch.amp.is_autocast_available(device_type):
        yield
        return
    with torch.autocast(device_type=device_type, enabled=False):
        yield


def fp32(fn: F) -> F:
    """Decorate a function (or a ``forward`` method) to run without autocast, half inputs upcast to fp32.

    The device is taken from the first tensor argument; tensor arguments (positional or keyword, not
    nested) in float16/bfloat16 are converted with :func:`to_fp32`. The result is returned as computed
    (fp32); callers downstream of an autocast region accept that.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if not tensors:
            return fn(*args, **kwargs)
        args = tuple(to_fp32(a) if isinstance(a, torch.Tensor) else a for a in args)
        kwargs = {k: to_fp32(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        with autocast_off(tensors[0]):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
