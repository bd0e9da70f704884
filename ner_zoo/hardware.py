"""What the host computes natively: the CPU's ISA flags and whether bf16 runs in hardware (issue 46).

On a CPU, bf16 matrix products run in hardware only with ``avx512_bf16`` (AVX-512 BF16 dot products) or AMX
(``amx_bf16``/``amx_tile``); without them PyTorch emulates bf16 in fp32 units with conversions around them,
which is slower than fp32 (24x on a 6-layer transformer step on an AVX2-only EPYC, ``../shared/research/stack.md``).
A cap on oneDNN's ISA below AVX-512 BF16 (``ONEDNN_MAX_CPU_ISA=AVX2``, the second kernel set of ``make
test-kernels``) takes the hardware path away, so it counts as emulated too. On a CUDA GPU, bf16 is native from
compute capability 8.0 (Ampere) on. :func:`native_bf16` says which holds.

The zoo's default precision follows it per model (:func:`default_precision`): bf16 only where the host computes
it natively *and* the model's bf16 quality was measured equal to fp32's (:data:`BF16_EQUAL_TRAINING`,
:data:`BF16_EQUAL_PREDICTION`); fp32
everywhere else. ``ner_zoo.load``, ``ner-zoo predict``/``serve`` and a ``fit`` that leaves ``--trainer.precision``
unset take it; a precision given explicitly is always kept.

Standard library only (torch is imported only to ask about a CUDA device).
"""

from __future__ import annotations

import os
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


#: oneDNN's ISA names (``ONEDNN_MAX_CPU_ISA``) below the first with bf16 dot products (``AVX512_CORE_BF16``)
ONEDNN_ISAS_WITHOUT_BF16 = frozenset({"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
                                      "AVX512_CORE_VNNI"})


def onednn_capped(environ: dict[str, str] | None = None) -> bool:
    """True when ``ONEDNN_MAX_CPU_ISA`` (or the older ``DNNL_MAX_CPU_ISA``) caps oneDNN below bf16 hardware."""
    env = os.environ if environ is None else environ
    cap = (env.get("ONEDNN_MAX_CPU_ISA") or env.get("DNNL_MAX_CPU_ISA") or "").strip().upper()
    return cap in ONEDNN_ISAS_WITHOUT_BF16


def cpu_native_bf16(flags: frozenset[str] | None = None, environ: dict[str, str] | None = None) -> bool:
    """True where the CPU has bf16 arithmetic in hardware (``avx512_bf16`` or AMX) and oneDNN may use it."""
    return bool((_host_flags() if flags is None else flags) & BF16_FLAGS) and not onednn_capped(environ)


def gpu_native_bf16(device: int = 0) -> bool:
    """True for a CUDA GPU of compute capability 8.0 or newer (False without torch or a GPU)."""
    try:
        import torch
    except ImportError:
        return False
    if not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device) >= (8, 0)


def native_bf16(device: str = "cpu", flags: frozenset[str] | None = None,
                environ: dict[str, str] | None = None) -> bool:
    """Whether bf16 runs in hardware on ``device`` (``cpu``, ``cuda`` or ``cuda:N``); ``flags`` and ``environ``
    replace the host's CPU flags and environment (tests)."""
    device = str(device)
    if device.startswith("cuda"):
        return gpu_native_bf16(int(device.partition(":")[2] or 0))
    return cpu_native_bf16(flags, environ)


#: models, by paper class name (a host ``X`` or its network ``XNet``), that *train* in bf16 by default where bf16 is
#: native: one fit in bf16-mixed reached dev F1 within 0.5 of the fp32 fit's. TransformerTagger, AVX-512 BF16 EPYC,
#: 2026-12-02 (docs/benchmarks.md): one CoNLL-2003 epoch, dev F1 79.42 against 79.41, 1.6x the steps per second.
#: The LSTM models are not listed: their LSTMs stay fp32 under autocast and bf16 made their steps slower (0.80-0.95x).
BF16_EQUAL_TRAINING: frozenset[str] = frozenset({"TransformerTagger"})
#: models that *predict* in bf16 by default where bf16 is native: checkpoints predicting their test split in bf16
#: scored within 0.1 F1 of fp32. TransformerTagger: 53.94 against 53.90 (8 of 3,453 CoNLL-2003 sentences' spans
#: differ), 2.3x faster (the same host and day).
BF16_EQUAL_PREDICTION: frozenset[str] = frozenset({"TransformerTagger"})
USES = ("predict", "train")


def _paper_name(model: str) -> str:
    return model[:-len("Net")] if model.endswith("Net") else model  # a loaded network: its host's name


def _listed(model: str, use: str) -> bool:
    if use not in USES:
        raise ValueError(f"use must be one of {', '.join(USES)}, got {use!r}")
    return _paper_name(model) in (BF16_EQUAL_TRAINING if use == "train" else BF16_EQUAL_PREDICTION)


def default_precision(model: str, device: str = "cpu", flags: frozenset[str] | None = None,
                      environ: dict[str, str] | None = None, use: str = "predict") -> str:
    """``bf16`` where ``device`` has native bf16 and ``model`` (a class name, host or network) is listed for
    ``use`` (:data:`BF16_EQUAL_PREDICTION`, :data:`BF16_EQUAL_TRAINING`), else ``32``: what ``precision="auto"``
    (the default of ``ner_zoo.load``) and an unset ``--trainer.precision`` take."""
    return "bf16" if _listed(model, use) and native_bf16(device, flags, environ) else "32"


def precision_reason(model: str, device: str = "cpu", flags: frozenset[str] | None = None,
                     environ: dict[str, str] | None = None, use: str = "predict") -> str:
    """Why :func:`default_precision` chose what it chose, in words (a run record's ``precision_reason``)."""
    name, where = _paper_name(model), "the GPU" if str(device).startswith("cuda") else "this CPU"
    if not _listed(model, use):
        table = "BF16_EQUAL_TRAINING" if use == "train" else "BF16_EQUAL_PREDICTION"
        return (f"fp32: {name}'s bf16 {'training' if use == 'train' else 'prediction'} quality was not measured "
                f"equal to fp32's (ner_zoo.hardware.{table})")
    if native_bf16(device, flags, environ):
        return f"bf16: {where} computes bf16 natively and {name}'s bf16 quality was measured equal to fp32's"
    if not str(device).startswith("cuda") and onednn_capped(environ):
        return "fp32: ONEDNN_MAX_CPU_ISA caps oneDNN below bf16 hardware (bf16 would be emulated)"
    return f"fp32: {where} has no native bf16 (it would be emulated, slower than fp32)"
