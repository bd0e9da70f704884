"""The cluster launches of ``docs/distributed.md`` on one CPU machine (slow tests).

Two "nodes" on localhost with ``torchrun --nnodes 2`` (gloo): the run's metrics equal a single-process run's
and exactly one run record is written (rank 0), with ``nodes: 2`` and each node's hardware.
(``tools/slurm/fit.sbatch`` under an emulated SLURM job, requeued twice: ``tests/test_cluster.py``.)

The learning rate is 0, so both runs evaluate the same seeded initial weights: what is compared is the
sharding of the evaluation over nodes and the metric sync across them (training with 2 ranks sees batches
in another order than one process does, so trained weights would differ by design).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {
    "seed_everything": 3, "test_after_fit": True,
    "model": {"class_path": "ner_zoo.models.BiLSTMCRF",
              "init_args": {"words": {"dim": 16}, "lstm_hidden": 16,
                            "char_encoder": {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8}},
                            "optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.0}}}},
    "data": {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 60}},
    "trainer": {"max_epochs": 1, "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
                "enable_model_summary": False, "num_sanity_val_steps": 0},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fit_args(out: Path) -> list[str]:
    return ["-m", "ner_zoo.cli.main", "fit", "--config", "tiny.yaml", "--trainer.default_root_dir", str(out),
            "--trainer.logger", json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger",
                                            "init_args": {"save_dir": str(out), "name": "csv"}}),
            "--checkpoint.dirpath", str(out / "checkpoints")]


@pytest.mark.slow
def test_torchrun_two_nodes_equal_single_process_and_write_one_record(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(CONFIG))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    single = subprocess.run([sys.executable, *fit_args(tmp_path / "single")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, single.stderr[-3000:]

    port, nodes = free_port(), []
    for node_rank in (0, 1):  # what `srun`/a second machine would start: one launcher per node
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1",
               "--node_rank", str(node_rank), "--master_addr", "127.0.0.1", "--master_port", str(port),
               *fit_args(tmp_path / "multi"), "--trainer.num_nodes", "2", "--trainer.strategy", "ddp"]
        nodes.append(subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    logs = [p.communicate(timeout=600)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], logs[0][-3000:] + logs[1][-3000:]

    records = list((tmp_path / "multi").rglob("results.json"))
    assert len(records) == 1, records  # rank 0 alone writes
    multi = json.loads(records[0].read_text())
    one = json.loads(next((tmp_path / "single").rglob("results.json")).read_text())
    assert multi["nodes"] == 2 and multi["devices"] == 1 and one["nodes"] == 1
    assert sorted(h["node_rank"] for h in multi["node_hardware"]) == [0, 1]
    assert all(h["cpu_count"] for h in multi["node_hardware"])
    assert multi["test"].keys() == one["test"].keys()
    for key, value in one["test"].items():
        assert multi["test"][key] == pytest.approx(value, abs=1e-6), key
    assert multi["best_val_f1"] == pytest.approx(one["best_val_f1"], abs=1e-6)
