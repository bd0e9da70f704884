"""W&B logging without an account: ``ner-zoo fit --config ... --config configs/logging/wandb.yaml`` writes an
offline run directory whose record stream (``run-*.wandb``, what ``wandb sync`` uploads) holds the resolved
config, per-epoch ``val/f1`` and a run name, group and tags derived from model, data and seed. (wandb >= 0.2x
writes ``files/config.yaml`` and ``wandb-summary.json`` only when syncing, so the stream itself is read.)
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("wandb")

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {
    "seed_everything": 7,
    "model": {"class_path": "ner_zoo.models.BiLSTMCRF",
              "init_args": {"word_dim": 16, "hidden": 16,
                            "char_encoder": {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8}},
                            "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}},
    "data": {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 32}},
    "trainer": {"max_epochs": 2, "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
                "enable_model_summary": False, "log_every_n_steps": 1, "num_sanity_val_steps": 0},
}


@pytest.fixture
def offline_run(tmp_path) -> Path:
    """Run the fit in ``tmp_path`` (the logging config's relative ``save_dir``s land there)."""
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(CONFIG))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(tmp_path),
               WANDB_CACHE_DIR=str(tmp_path / "cache"), WANDB_CONFIG_DIR=str(tmp_path / "config"),
               WANDB_DATA_DIR=str(tmp_path / "data"), NETRC=str(tmp_path / "no-netrc"),
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "fit", "--config", "tiny.yaml",
                          "--config", str(ROOT / "configs" / "logging" / "wandb.yaml")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    return tmp_path


def wandb_records(path: Path) -> list:
    """The protobuf records of a ``run-*.wandb`` file (a LevelDB-style log: 7-byte header, 32 KiB blocks,
    chunks of ``crc32 u32, length u16, type u8`` with type 1 full, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, out, chunk, pos, block = path.read_bytes(), [], b"", 7, 32768
    assert data[:4] == b":W&B", f"{path} is not a W&B run stream"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # block trailer padding
            pos += block - pos % block
            continue
        _, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk += data[pos + 7:pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(chunk)
            out.append(record)
            chunk = b""
    return out


def test_offline_run_directory_has_config_and_metrics(offline_run):
    save_dir = offline_run / "runs" / "wandb"  # trainer.logger[0].init_args.save_dir of configs/logging/wandb.yaml
    runs = sorted(save_dir.rglob("offline-run-*"))
    assert len(runs) == 1, f"expected one offline run under {save_dir}, found {runs}"
    stream = list(runs[0].glob("run-*.wandb"))
    assert len(stream) == 1
    records = wandb_records(stream[0])
    by_kind: dict[str, list] = {}
    for r in records:
        by_kind.setdefault(r.WhichOneof("record_type"), []).append(r)

    run = by_kind["run"][0].run  # name, group and tags derived from model, data and seed
    assert run.display_name == "BiLSTMCRF-SampleCorpus-seed7" and run.run_group == "SampleCorpus"
    assert {"BiLSTMCRF", "SampleCorpus", "seed7"} <= set(run.tags)

    config = {item.key or "/".join(item.nested_key): json.loads(item.value_json)
              for r in by_kind["config"] for item in r.config.update}
    resolved = config["config"]  # the full resolved config, logged by LogConfigCallback
    assert resolved["seed_everything"] == 7 and resolved["model"]["init_args"]["hidden"] == 16
    assert resolved["data"]["class_path"] == "ner_zoo.data.SampleCorpus"

    history = [{item.key or "/".join(item.nested_key): item.value_json for item in r.history.item}
               for r in by_kind["history"]]
    val_f1 = [float(h["val/f1"]) for h in history if "val/f1" in h]
    assert len(val_f1) == 2 and all(0.0 <= v <= 1.0 for v in val_f1)  # one per epoch
    assert any("train/loss" in h for h in history)
    assert [r.exit.exit_code for r in by_kind.get("exit", [])] == [0], "the run was not finished (wandb.finish)"

    # the CSV logger alongside still writes the local metrics (no W&B account needed to compare)
    assert list((offline_run / "runs" / "csv").rglob("metrics.csv"))
