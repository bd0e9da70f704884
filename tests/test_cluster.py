"""Runs that survive a cluster (issue 27): one folder per fit, resume from the newest state, one record and
one W&B run per training run, and the SLURM / torchrun recipes as rendered for N nodes x G GPUs.

The SLURM job is emulated on one CPU machine (``tests/slurm_emulation.py``: stand-in ``srun`` and
``scontrol``, signals sent by a callback at fixed steps), as ``docs/distributed.md`` shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from ner_zoo.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
QUICK = ["--trainer.max_epochs", "1", "--data.init_args.max_sentences", "24", "--trainer.enable_progress_bar",
         "false", "--test_after_fit", "false", "--trainer.enable_model_summary", "false"]
TINY = {
    "seed_everything": 3, "test_after_fit": True,
    "model": {"class_path": "ner_zoo.models.BiLSTMCRF",
              "init_args": {"words": {"dim": 16}, "lstm_hidden": 16, "dropout": 0.3,
                            "char_encoder": {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8}},
                            "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}},
    "data": {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 48}},
    "trainer": {"max_epochs": 3, "accelerator": "cpu", "devices": 1, "enable_progress_bar": False,
                "enable_model_summary": False, "num_sanity_val_steps": 0, "deterministic": True,
                "log_every_n_steps": 1, "callbacks": [{"class_path": "slurm_emulation.SignalAtStep"}]},
}


@pytest.fixture(autouse=True)
def _argv(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["ner-zoo"])  # main(args) in this process: LightningCLI also reads sys.argv


def records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) | {"_path": p} for p in sorted(folder.rglob("results.json"))]


def test_two_fits_of_the_quickstart_leave_two_run_folders(tmp_path, monkeypatch):
    """Before: ``configs/quickstart.yaml`` fixed ``checkpoint.dirpath``, so the second fit wrote over the first
    one's ``best.ckpt`` and the first record pointed at the second run's weights."""
    monkeypatch.chdir(tmp_path)  # the config's relative paths land here
    args = ["fit", "--config", str(ROOT / "configs" / "quickstart.yaml"), *QUICK]
    assert main(args) == 0
    assert main([*args, "--seed_everything", "7"]) == 0
    first, second = records(tmp_path)
    assert first["_path"].parent != second["_path"].parent
    assert first["best_checkpoint"] != second["best_checkpoint"]
    for rec in (first, second):  # each record points at its own checkpoint, inside its own folder
        ckpt = Path(rec["best_checkpoint"])
        assert ckpt.resolve().is_relative_to(rec["_path"].parent.resolve())
        assert rec["best_checkpoint_sha256"] == __import__("hashlib").sha256(ckpt.read_bytes()).hexdigest()
        folder = rec["_path"].parent
        assert (folder / "config.yaml").is_file() and (folder / "csv" / "metrics.csv").is_file()
        assert folder.parent.name == "BiLSTMCRF-SampleCorpus"
    assert first["best_checkpoint_sha256"] != second["best_checkpoint_sha256"]


def test_a_fixed_dirpath_holding_another_runs_checkpoints_is_refused(tmp_path, capsys):
    args = ["fit", "--config", str(ROOT / "configs" / "quickstart.yaml"), *QUICK,
            "--trainer.default_root_dir", str(tmp_path / "runs"), "--checkpoint.dirpath", str(tmp_path / "ck")]
    assert main(args) == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "ck").iterdir()}
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("ner-zoo: error: ") and "already holds checkpoints of another run" in err[-1]
    assert {p.name: p.read_bytes() for p in (tmp_path / "ck").iterdir()} == before  # nothing replaced


def test_ckpt_path_last_resumes_the_latest_run_of_the_config(tmp_path, monkeypatch):
    """Resumed with more epochs: the same run folder, and its record counts every epoch and segment; each
    segment names its commit and the run-matrix file it ran from (``NER_ZOO_MATRIX``, set by run_matrix)."""
    from ner_zoo.run.recorder import git_state

    args = ["fit", "--config", str(ROOT / "configs" / "quickstart.yaml"), *QUICK,
            "--trainer.default_root_dir", str(tmp_path / "runs")]
    assert main(args) == 0
    monkeypatch.setenv("NER_ZOO_MATRIX", "configs/experiments/m.yaml 0123abcd")
    assert main([*args, "--trainer.max_epochs", "2", "--ckpt_path", "last"]) == 0
    (rec,) = records(tmp_path / "runs")
    assert rec["epochs"] == 2 and rec["protocol"]["epochs"] == 2.0 and rec["protocol"]["epochs_completed"] == 2
    assert rec["protocol"]["stopped_by"] == "max_epochs"
    assert [s["start_epoch"] for s in rec["segments"]] == [0, 1]
    assert rec["segments"][1]["resumed_from"].endswith("last.ckpt")
    assert "matrix" not in rec["segments"][0]
    assert rec["segments"][1]["matrix"] == {"path": "configs/experiments/m.yaml", "sha256": "0123abcd"}
    if git_state() is not None:  # a source checkout: every segment says which commit it ran
        assert all(s["commit"] == git_state()["commit"] for s in rec["segments"])
    assert rec["pauses"] == []
    folder = rec["_path"].parent
    resumed = f"resume-step{rec['segments'][1]['start_step']}"
    assert (folder / "csv" / resumed / "metrics.csv").is_file()  # the first segment's log is kept
    assert (folder / "csv" / "metrics.csv").is_file()
    assert main([*args, "--ckpt_path", "last", "--seed_everything", "99"]) == 2  # no run of that seed


def test_a_fit_refused_after_its_run_folder_was_chosen_leaves_no_empty_folder(tmp_path, capsys):
    """Before: each fit refused while its classes were built left a run folder holding only ``run.json``. A
    fit that fails later keeps its folder: its ``results.json`` records the failure."""
    args = ["fit", "--config", str(ROOT / "configs" / "quickstart.yaml"), *QUICK,
            "--trainer.default_root_dir", str(tmp_path / "runs" / "mine")]
    for bad in (["--model.init_args.lstm_hidden", "0"], ["--data.init_args.train_file", "nope.txt"]):
        assert main([*args, *bad]) == 2 and "ner-zoo: error:" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["mine"]  # the root stays, emptied
    assert not any((tmp_path / "runs" / "mine").iterdir())


def test_validate_and_test_write_nothing_into_the_runs_tree_unless_asked(tmp_path, monkeypatch):
    """Before: each ``validate``/``test`` of a checkpoint made a folder in the runs tree (``config.yaml`` only, or
    the config's CSV logger's ``version_N`` with a record). Now nothing, unless ``--record.path`` names one."""
    monkeypatch.chdir(tmp_path)
    config = ["--config", str(ROOT / "configs" / "quickstart.yaml"), "--data.init_args.max_sentences", "24",
              "--trainer.enable_progress_bar", "false"]
    assert main(["fit", *config, *QUICK[:2], "--test_after_fit", "false"]) == 0
    (rec,) = records(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for command in ("validate", "test"):
        assert main([command, *config, "--ckpt_path", rec["best_checkpoint"]]) == 0
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert main(["test", *config, "--ckpt_path", rec["best_checkpoint"], "--record.path", "mine/results.json"]) == 0
    assert json.loads((tmp_path / "mine" / "results.json").read_text())["test"]["f1"] >= 0
    assert (tmp_path / "mine" / "config.yaml").is_file()


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def test_a_refused_resume_changes_nothing_in_the_run_folder(tmp_path, capsys):  # RS2 of robustness_4
    """A resume refused for other data or a corrupted checkpoint leaves the run folder as it was: before, the
    refusal rewrote results.json (status failed, the completed record gone) and config.yaml, and added an empty
    csv/resume-step<N>/ folder."""
    from cli_cases import flip_weight_bytes, one_error_line

    args = ["fit", "--config", str(ROOT / "configs" / "quickstart.yaml"), *QUICK,
            "--trainer.default_root_dir", str(tmp_path / "runs")]
    assert main(args) == 0
    capsys.readouterr()
    (rec,) = records(tmp_path / "runs")
    folder = rec["_path"].parent
    before = _tree(folder)
    assert main([*args, "--ckpt_path", str(folder), "--data.init_args.tag_scheme", "iob2"]) == 2
    assert "was trained on other data" in one_error_line(capsys.readouterr().err)
    assert _tree(folder) == before
    last = folder / "checkpoints" / "last.ckpt"
    flip_weight_bytes(last, tmp_path / "flipped.ckpt", n=64)
    last.write_bytes((tmp_path / "flipped.ckpt").read_bytes())
    before = _tree(folder)
    assert main([*args, "--ckpt_path", "last", "--trainer.max_epochs", "2"]) == 2
    assert "corrupted checkpoint" in one_error_line(capsys.readouterr().err)
    assert _tree(folder) == before


def test_resume_picks_the_checkpoint_with_the_highest_global_step(tmp_path):
    from ner_zoo.run.folder import newest_checkpoint

    for name, step in (("hpc_ckpt_1.ckpt", 113), ("last.ckpt", 200), ("hpc_ckpt_2.ckpt", 150), ("best.ckpt", 50)):
        torch.save({"global_step": step}, tmp_path / name)
    (tmp_path / "broken.ckpt").write_bytes(b"not a checkpoint")
    path, step = newest_checkpoint(sorted(tmp_path.glob("*.ckpt")))
    assert (path.name, step) == ("last.ckpt", 200)  # before: any hpc_ckpt_* won over a newer last.ckpt


def slurm_env(tmp_path: Path, job: str, run_dir: Path, **extra) -> dict:
    from slurm_emulation import install

    bin_dir = install(tmp_path / "bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "SLURM_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")]),
               NER_ZOO=f"{sys.executable} -m ner_zoo.cli.main", SLURM_JOB_ID=job, SLURM_JOB_NAME="ner-zoo",
               SLURM_NNODES="1", RUN_DIR=str(run_dir), GPUS_PER_NODE="1", ACCELERATOR="cpu",
               PRECISION="32-true", SCONTROL_LOG=str(tmp_path / "scontrol.log"), WANDB_MODE="offline",
               WANDB_SILENT="true", NETRC=str(tmp_path / "no-netrc"), WANDB_CONFIG_DIR=str(tmp_path / "wbconfig"),
               WANDB_CACHE_DIR=str(tmp_path / "wbcache"), WANDB_DATA_DIR=str(tmp_path / "wbdata"))
    env.update(extra)
    return env


def sbatch(tmp_path: Path, env: dict) -> subprocess.CompletedProcess:
    script = ROOT / "tools" / "slurm" / "fit.sbatch"
    return subprocess.run(["bash", str(script), "tiny.yaml", "--config", str(ROOT / "configs" / "logging" / "wandb.yaml")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.wandb
def test_slurm_job_requeued_twice_records_what_an_uninterrupted_run_does(tmp_path):
    """Job 4242: SIGUSR1 after step 4 (Lightning saves ``hpc_ckpt_1`` and calls ``scontrol requeue``, which ends
    the job with SIGTERM: ``last.ckpt`` at step 4 too); the requeued job is preempted by SIGTERM alone after step 11 (``last.ckpt``, newer
    than ``hpc_ckpt_1``: before, the script resumed from the stale ``hpc_ckpt_1``); the second requeue
    finishes. Its record, metrics and W&B run id against job 5151, run uninterrupted."""
    pytest.importorskip("wandb")
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    full = sbatch(tmp_path, slurm_env(tmp_path, "5151", tmp_path / "full"))
    assert full.returncode == 0, full.stdout[-3000:]
    job = tmp_path / "job"
    env = slurm_env(tmp_path, "4242", job, NER_ZOO_TEST_SIGNALS="USR1@4,TERM@11")
    outs = []
    for restart in range(3):
        outs.append(sbatch(tmp_path, {**env, "SLURM_RESTART_COUNT": str(restart)}))
        assert outs[-1].returncode == (0 if restart == 2 else 143), outs[-1].stdout[-3000:]
    assert (tmp_path / "scontrol.log").read_text().split() == ["requeue", "4242"]
    # (Lightning's "SLURM auto-requeueing enabled" is an INFO line, quiet without --verbose: cli/quiet.py)
    assert (job / "hpc_ckpt_1.ckpt").is_file()

    (one,), (rec,) = records(tmp_path / "full"), records(job)
    for key in ("epochs", "best_val_f1", "best_epoch", "best_val", "test", "config_hash", "status"):
        assert rec[key] == one[key], key
    for key in ("epochs", "epochs_completed", "steps", "stopped_by"):
        assert rec["protocol"][key] == one["protocol"][key], key
    assert rec["protocol"]["stopped_by"] == "max_epochs" and rec["protocol"]["epochs"] == 3.0
    segs = rec["segments"]
    assert [s["start_step"] for s in segs] == [0, 4, 11] and [s.get("slurm_restart") for s in segs] == [0, 1, 2]
    # job 1's SIGTERM came right after its SIGUSR1: last.ckpt and hpc_ckpt_1 both hold step 4 (the newer file
    # wins); the third segment resumes from step 11, not from the stale hpc_ckpt_1
    assert segs[2]["resumed_from"].endswith("last.ckpt")
    from ner_zoo.results.paired import _epochs

    assert _epochs(rec) == _epochs(one)  # `compare` pairs the resumed seed with an uninterrupted one

    runs = sorted((job / "wandb").glob("offline-run-*"))
    ids = {p.name.rsplit("-", 1)[1] for p in runs}
    assert len(runs) == 3 and len(ids) == 1 and rec["wandb"]["id"] in ids  # one W&B run, three segments
    assert json.loads((job / "run.json").read_text())["wandb_id"] in ids
    assert one["wandb"]["id"] not in ids
    assert (job / "slurm-4242.log").read_text().count("== job 4242") == 3  # the job's log, in the run folder
    assert_one_history_on_the_global_step_axis(runs, epochs=3)


def assert_one_history_on_the_global_step_axis(segments: list[Path], epochs: int) -> None:
    """The offline streams of one run's segments, in start order (``offline-run-<time>-<id>``): every metric on
    ``trainer/global_step`` (wandb's ``define_metric("*", step_metric=...)``, which Lightning's ``WandbLogger``
    sets), every history row holding it, every epoch's ``val/f1`` row once and the steps increasing across
    segments; each interrupted segment marked preempting and finished with 143 before its process exited."""
    from test_wandb_offline import wandb_records

    val_rows, steps = [], []
    for i, folder in enumerate(segments):
        (stream,) = folder.glob("run-*.wandb")
        records = wandb_records(stream)
        kinds = [r.WhichOneof("record_type") for r in records]
        assert any(r.metric.glob_name == "*" and r.metric.step_metric == "trainer/global_step"
                   for r in records if r.HasField("metric")), folder
        rows = [{(item.key or "/".join(item.nested_key)): json.loads(item.value_json) for item in r.history.item}
                for r in records if r.HasField("history")]
        assert all("trainer/global_step" in row for row in rows), folder  # tables too (before: not the tables)
        steps += [row["trainer/global_step"] for row in rows if "train/loss" in row]
        val_rows += [(row["epoch"], row["trainer/global_step"]) for row in rows if "val/f1" in row]
        last = i == len(segments) - 1
        assert [r.exit.exit_code for r in records if r.HasField("exit")] == [0 if last else 143], folder
        assert ("preempting" in kinds) == (not last), folder  # before: exit code 0 and no preempting record
    assert sorted(e for e, _ in val_rows) == list(range(epochs)), val_rows  # every epoch once
    # one axis: the segments continue it (each step's training row once), never restart from 0 as _step does
    assert steps == sorted(set(steps)) and [s for _, s in val_rows] == sorted({s for _, s in val_rows}), steps


def test_rendered_fit_sbatch_on_2_nodes_x_8_gpus_starts_16_ranks(tmp_path):
    """The script as SLURM runs it on 2 nodes with 8 GPUs each (``SLURM_GPUS_ON_NODE``): one task per GPU,
    ``devices 8 x num_nodes 2``, and Lightning's SLURM environment of the last task agrees (16 ranks)."""
    env = slurm_env(tmp_path, "77", tmp_path / "job", SRUN_RECORD=str(tmp_path / "srun.txt"), SLURM_NNODES="2",
                    SLURM_GPUS_ON_NODE="8")
    del env["GPUS_PER_NODE"], env["ACCELERATOR"]
    (tmp_path / "c.yaml").write_text("{}")
    out = subprocess.run(["bash", str(ROOT / "tools" / "slurm" / "fit.sbatch"), "c.yaml"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    nodes, *argv = (tmp_path / "srun.txt").read_text().splitlines()
    per_node = int(next(a for a in argv if a.startswith("--ntasks-per-node=")).split("=")[1])
    opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--trainer.")}
    assert (nodes, per_node, opt["--trainer.devices"], opt["--trainer.num_nodes"]) == ("nodes=2", 8, "8", "2")
    assert opt["--trainer.accelerator"] == "gpu" and argv[argv.index("--ckpt_path") + 1] == "last"

    from lightning.fabric.plugins.environments import SLURMEnvironment

    task = {"SLURM_NTASKS": "16", "SLURM_NTASKS_PER_NODE": "8", "SLURM_NNODES": "2", "SLURM_PROCID": "15",
            "SLURM_LOCALID": "7", "SLURM_NODEID": "1", "SLURM_NODELIST": "gpu[01-02]", "SLURM_JOB_ID": "77",
            "SLURM_JOB_NAME": "ner-zoo"}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in task.items():
            mp.setenv(k, v)
        slurm = SLURMEnvironment()
        slurm.validate_settings(num_devices=int(opt["--trainer.devices"]), num_nodes=int(opt["--trainer.num_nodes"]))
        assert (slurm.world_size(), slurm.global_rank(), slurm.local_rank(), slurm.node_rank()) == (16, 15, 7, 1)
    # GPUs per node is one parameter: 4 of each node's GPUs
    out = subprocess.run(["bash", str(ROOT / "tools" / "slurm" / "fit.sbatch"), "c.yaml"], cwd=tmp_path,
                         env={**env, "GPUS_PER_NODE": "4"}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--ntasks-per-node=4" in (tmp_path / "srun.txt").read_text().split()


@pytest.mark.slow
def test_run_matrix_as_a_slurm_array_one_run_per_task(tmp_path):
    """``tools/run_matrix.py --slurm``: one array task per run; each task, as SLURM starts it, trains its run
    into its own folder, and ``ner-zoo compare`` reads the records."""
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({**TINY, "test_after_fit": False,
                                                        "trainer": {**TINY["trainer"], "max_epochs": 1}}))
    (tmp_path / "matrix.yaml").write_text(yaml.safe_dump([{"name": "tiny", "configs": ["tiny.yaml"], "seeds": [1, 2]}]))
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_matrix.py"), "matrix.yaml", "--out", "out",
                          "--slurm", "--dry-run", "--slurm-opt=--partition=gpu"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    name = out.stdout.split()[1]
    script = (tmp_path / name).read_text()
    assert "#SBATCH --array=0-1\n" in script and "#SBATCH --partition=gpu\n" in script
    for task in ("0", "1"):
        env = slurm_env(tmp_path, "901", tmp_path / "unused", SLURM_ARRAY_JOB_ID="900", SLURM_ARRAY_TASK_ID=task,
                        NER_ZOO_PYTHON=sys.executable)
        done = subprocess.run(["bash", name], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr + (tmp_path / "out" / f"tiny-s{int(task) + 1}" / "log.txt").read_text()
    recs = records(tmp_path / "out")
    assert [(r["_path"].parent.name, r["seed"], r["status"]) for r in recs] == [("tiny-s1", 1, "completed"),
                                                                                ("tiny-s2", 2, "completed")]
    from ner_zoo.results.compare import load_records

    assert len(load_records([tmp_path / "out"])) == 2


def test_a_rerendered_matrix_leaves_a_requeued_task_on_its_own_run(tmp_path):
    """An array of runs ``qa``, ``qb``; then ``--slurm --only qb`` into the same folder (a second sitting); then
    task 0 of the first array is requeued. Before: both arrays read one ``matrix.commands``, rewritten by the
    second render, so the requeued task trained into ``qb-s1``. Now each array's commands are in its own script
    (as sbatch keeps it), and the task's log gets one more block."""
    (tmp_path / "matrix.yaml").write_text(yaml.safe_dump([{"name": "qa", "configs": ["tiny.yaml"], "seeds": [1]},
                                                          {"name": "qb", "configs": ["tiny.yaml"], "seeds": [1]}]))

    def render(*extra: str) -> str:
        out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_matrix.py"), "matrix.yaml", "--out", "out",
                              "--slurm", "--dry-run", *extra], cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()[1]  # "sbatch <script>  # ..."

    first = render()
    second = render("--only", "qb")
    env = slurm_env(tmp_path, "4401", tmp_path / "unused", SLURM_ARRAY_JOB_ID="4400", SLURM_ARRAY_TASK_ID="0",
                    SRUN_RECORD=str(tmp_path / "srun.txt"))
    for restart in ("1", "2"):  # two requeues of task 0 of the first array
        done = subprocess.run(["bash", first], cwd=tmp_path, env={**env, "SLURM_RESTART_COUNT": restart},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        argv = (tmp_path / "srun.txt").read_text().splitlines()[1:]
        assert argv[argv.index("--record.path") + 1] == "out/qa-s1/results.json"
    log = (tmp_path / "out" / "qa-s1" / "log.txt").read_text()
    assert log.count("== task 0 of job 4400") == 2 and not (tmp_path / "out" / "qb-s1").exists()
    assert first != second and "qb-s1" in (tmp_path / second).read_text()


def test_sweep_agents_array_and_torchrun_recipe_render(tmp_path):
    """The sweep-agent array runs one ``wandb agent`` per task; the torchrun recipe on 2 nodes x 8 GPUs starts
    8 processes per node with ``devices 8 x num_nodes 2`` (16 ranks) and one shared run folder."""
    env = slurm_env(tmp_path, "55", tmp_path / "job", SRUN_RECORD=str(tmp_path / "srun.txt"),
                    SLURM_ARRAY_JOB_ID="55", SLURM_ARRAY_TASK_ID="3")
    out = subprocess.run(["bash", str(ROOT / "tools" / "slurm" / "sweep_agents.sbatch"), "me/proj/abc123"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "srun.txt").read_text().split("\n")[1:5] == ["wandb", "agent", "--count", "1"]
    # SLURM opens --output before the script runs and makes no folder for it: a path in the submission folder
    output = next(line.split("=", 1)[1].split()[0] for line in
                  (ROOT / "tools" / "slurm" / "sweep_agents.sbatch").read_text().splitlines()
                  if line.startswith("#SBATCH --output="))
    assert "/" not in output  # before: runs/sweeps/..., made inside the script, after SLURM opened the file
    record = tmp_path / "torchrun.txt"
    fake = tmp_path / "bin" / "torchrun"
    fake.write_text(f'#!/bin/bash\n{{ echo "run_dir=$NER_ZOO_RUN_DIR"; printf "%s\\n" "$@"; }} > {record}\n')
    fake.chmod(0o755)
    del env["RUN_DIR"]
    for node in ("0", "1"):
        out = subprocess.run(["bash", str(ROOT / "tools" / "torchrun_fit.sh"), "configs/dspert/genia.yaml"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             env={**env, "GPUS_PER_NODE": "8", "NNODES": "2", "NODE_RANK": node,
                                  "MASTER_ADDR": "node0", "RUN_ID": "r1"})
        assert out.returncode == 0, out.stderr
        run_dir, *argv = record.read_text().splitlines()
        opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
        assert (opt["--nnodes"], opt["--nproc_per_node"], opt["--node_rank"]) == ("2", "8", node)
        assert (opt["--trainer.devices"], opt["--trainer.num_nodes"], opt["--ckpt_path"]) == ("8", "2", "last")
        assert run_dir == "run_dir=runs/torchrun/dspert-genia/r1"


@pytest.mark.ddp
def test_ddp_processes_launched_by_lightning_share_one_run_folder(tmp_path):
    """``--trainer.devices 2 --trainer.strategy ddp``: Lightning starts a second process with the same command
    line; it finds the run folder rank 0 chose (``NER_ZOO_RUN_DIR``) instead of making its own."""
    out = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "fit", "--config",
                          str(ROOT / "configs" / "quickstart.yaml"), *QUICK, "--trainer.devices", "2",
                          "--trainer.strategy", "ddp", "--trainer.default_root_dir", str(tmp_path / "runs")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "OMP_NUM_THREADS": "1",
                              "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(list((tmp_path / "runs").glob("*/*/run.json"))) == 1
    (rec,) = records(tmp_path / "runs")
    assert rec["devices"] == 2 and rec["status"] == "completed"
