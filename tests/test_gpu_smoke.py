"""``tools/smoke_summary.py``: the table ``tools/gpu_fit_smoke.sh`` prints from its run records and the
``nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used --format=csv,noheader,nounits``
samples (the shell script itself was run on CPU with ``SMOKE_ACCELERATOR=cpu SMOKE_DATA=sample``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_smoke_summary_reads_records_and_utilisation(tmp_path):
    run = tmp_path / "glove_tagger"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "hardware": {"gpu": "NVIDIA H100 80GB HBM3", "cpu_count": 16}, "precision": "bf16-mixed", "devices": 1,
        "epochs": 2, "epoch_seconds": [61.23, 58.0]}))
    (run / "utilisation.csv").write_text(
        "2026/11/26 13:00:00.000, 0, NVIDIA H100 80GB HBM3, 0, 500\n"
        "2026/11/26 13:00:01.000, 0, NVIDIA H100 80GB HBM3, 40, 2100\n"
        "2026/11/26 13:00:02.000, 0, NVIDIA H100 80GB HBM3, 90, 2300\n"
        "2026/11/26 13:00:03.000, 0, NVIDIA H100 80GB HBM3, [N/A], [N/A]\n")
    cpu = tmp_path / "transformer_tagger"
    cpu.mkdir()
    (cpu / "results.json").write_text(json.dumps({"hardware": {"cpu_count": 2}, "precision": "32-true",
                                                  "devices": 1, "epochs": 1, "epoch_seconds": [25.7]}))
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "smoke_summary.py"), str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[2] == "| glove_tagger | NVIDIA H100 80GB HBM3 | bf16-mixed | 1 | 2 | 61.2 / 58.0 | 40 | 90 | 2300 |"
    assert out[3] == "| transformer_tagger | CPU (2 cores) | 32-true | 1 | 1 | 25.7 |  |  |  |"
