"""The host line every benchmark prints first, so that figures from different machines are never mixed (issue 46).

    host: AMD EPYC 7B13, 2 cpus, avx2 yes, avx512f no, avx512_bf16 no, amx_tile no; no GPU; torch 2.13.0+cpu; load 3.1

``host()`` gives the same as a dict. The CPU facts come from ``/proc/cpuinfo`` (Linux) and the GPU from torch
(only when torch is importable; nothing is imported otherwise). ``ner_zoo.hardware`` reads the same flags to
decide whether bf16 is native (:func:`ner_zoo.hardware.native_bf16`).
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ner_zoo.hardware import ISA_FLAGS, cpu_flags, cpu_model  # noqa: E402


def gpu_name() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    return None


def host() -> dict:
    flags = cpu_flags()
    out = {"cpu": cpu_model(), "cpus": os.cpu_count(), "isa": {f: f in flags for f in ISA_FLAGS},
           "gpu": gpu_name(), "python": platform.python_version(), "load": round(os.getloadavg()[0], 2)}
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:
        pass
    return out


def host_line() -> str:
    h = host()
    isa = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in h["isa"].items())
    torch = f"; torch {h['torch']}" if "torch" in h else ""
    return (f"host: {h['cpu']}, {h['cpus']} cpus, {isa}; {h['gpu'] or 'no GPU'}{torch}; python {h['python']}; "
            f"load {h['load']}")


if __name__ == "__main__":
    print(host_line())
