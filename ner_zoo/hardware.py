"""What the host computes natively: the CPU's ISA flags and whether bf16 runs in hardware (issue 46).

On a CPU, bf16 matrix products run in hardware only with ``avx512_bf16`` (AVX-512 BF16 dot products) or AMX
(``amx_bf16``/``amx_tile``); without them PyTorch emulates bf16 in fp32 units with conversions around them,
which is slower than fp32 (24x on a 6-layer transformer step on an AVX2-only EPYC, ``../shared/research/stack.md``).
On a CUDA GPU, bf16 is native from compute capability 8.0 (Ampere) on. :func:`native_bf16` says which holds; it
only reports: nothing in the zoo turns bf16 on by default (training and prediction stay fp32 unless asked), and a
bf16 default would be taken only per model where its quality was measured equal to fp32's on such a host. Speed of
bf16 can only be judged where this function says True.

Standard library only (torch is imported only to ask about a CUDA device).
"""

from __future__ import annotations

import platform
from functools import lru_cache
from pathlib import Path

#: the flags a benchmark's host line names (``benchmarks/host.py``)
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
#: any one of these: the CPU multiplies bf16 in hardware
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "amx_tile"})


def _cpuinfo(text: str | None = None) -> str:
    if text is not None:
        return text
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags (``/proc/cpuinfo``'s first ``flags`` line; empty off Linux or where unreadable)."""
    for line in _cpuinfo(cpuinfo).splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cpu_model(cpuinfo: str | None = None) -> str:
    for line in _cpuinfo(cpuinfo).splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return " ".join(value.split())
    return platform.processor() or platform.machine() or "unknown CPU"


@lru_cache(maxsize=None)
def _host_flags() -> frozenset[str]:
    return cpu_flags()


def cpu_native_bf16(flags: frozenset[str] | None = None) -> bool:
    """True where the CPU has bf16 arithmetic in hardware (``avx512_bf16`` or AMX)."""
    return bool((_host_flags() if flags is None else flags) & BF16_FLAGS)


def gpu_native_bf16(device: int = 0) -> bool:
    """True for a CUDA GPU of compute capability 8.0 or newer (False without torch or a GPU)."""
    try:
        import torch
    except ImportError:
        return False
    if not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device) >= (8, 0)


def native_bf16(device: str = "cpu", flags: frozenset[str] | None = None) -> bool:
    """Whether bf16 runs in hardware on ``device`` (``cpu``, ``cuda`` or ``cuda:N``); ``flags`` replace the
    host's CPU flags (tests)."""
    device = str(device)
    if device.startswith("cuda"):
        return gpu_native_bf16(int(device.partition(":")[2] or 0))
    return cpu_native_bf16(flags)


#: models whose bf16 quality was measured equal to fp32's (dev F1 within 0.5 training, within 0.1 predicting) on a
#: host with native bf16, by paper class name (a host ``X`` or its network ``XNet``); ``precision="auto"`` picks
#: bf16 only for these. TransformerTagger, AVX-512 BF16 EPYC, 2026-12-02 (docs/benchmarks.md): one CoNLL-2003 epoch
#: in bf16-mixed reached dev F1 79.42 against 79.41 in fp32, and one checkpoint predicting the test split in bf16
#: scored 53.94 against 53.90 (8 of 3,453 sentences' spans differ), 2.3x faster. The LSTM models are not listed:
#: their LSTMs stay fp32 under autocast and bf16 made them slower (0.80-0.95x).
BF16_EQUAL_QUALITY: frozenset[str] = frozenset({"TransformerTagger"})


def default_precision(model: str, device: str = "cpu", flags: frozenset[str] | None = None) -> str:
    """``bf16`` where ``device`` has native bf16 and ``model`` (a class name, host or network) is in :data:`BF16_EQUAL_QUALITY`,
    else ``32``: what ``ner_zoo.load(..., precision="auto")`` uses."""
    name = model[:-len("Net")] if model.endswith("Net") else model  # the network a loaded model is
    return "bf16" if name in BF16_EQUAL_QUALITY and native_bf16(device, flags) else "32"
