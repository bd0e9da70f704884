"""Summarise a ``tools/gpu_fit_smoke.sh`` output folder as a markdown table (one row per fit).

    python tools/smoke_summary.py OUT

Per fit: device, precision, devices, epochs trained, seconds per epoch (from ``results.json``) and, when
``nvidia-smi`` was sampled, the median and maximum GPU utilisation and the peak memory over the samples
taken while the fit ran (start-up and data loading included).
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path


def utilisation(path: Path) -> tuple[str, str, str]:
    if not path.exists():
        return "", "", ""
    rows = [r for r in csv.reader(path.open()) if len(r) >= 5]
    util = [float(r[3]) for r in rows if r[3].strip().replace(".", "").isdigit()]
    mem = [float(r[4]) for r in rows if r[4].strip().replace(".", "").isdigit()]
    if not util:
        return "", "", ""
    return f"{statistics.median(util):.0f}", f"{max(util):.0f}", f"{max(mem):.0f}" if mem else ""


def main(out: Path) -> int:
    cols = ["fit", "device", "precision", "devices", "epochs", "s/epoch", "GPU util median %", "max %", "peak MiB"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for record in sorted(out.glob("*/results.json")):
        rec = json.loads(record.read_text())
        hw = rec.get("hardware", {})
        secs = rec.get("epoch_seconds") or []
        cells = [record.parent.name, hw.get("gpu") or f"CPU ({hw.get('cpu_count')} cores)", rec.get("precision"),
                 rec.get("devices"), rec.get("epochs"), " / ".join(f"{s:.1f}" for s in secs),
                 *utilisation(record.parent / "utilisation.csv")]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
