"""Run folders claimed atomically: processes that choose a folder at the same instant (two array tasks started
together) each get their own (issue 44; before: a check-then-create race gave two processes one folder)."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

from ner_zoo.run.folder import claim_run_dir

N, ROUNDS = 4, 200


def _claim(barrier, root: str, out) -> None:
    for i in range(ROUNDS):
        barrier.wait()  # released together each round: the same second, the same stem
        out.put((i, str(claim_run_dir(Path(root) / str(i), "BiLSTMCRF-SampleCorpus", None))))


def test_processes_released_together_get_distinct_folders(tmp_path):
    """N processes, 200 rounds, each round's claims released by one barrier; only the folder choice runs."""
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(N), ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(barrier, str(tmp_path), out)) for _ in range(N)]
    for p in procs:
        p.start()
    rounds: dict[int, list[str]] = {}
    for _ in range(N * ROUNDS):
        i, folder = out.get(timeout=120)
        rounds.setdefault(i, []).append(folder)
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0] * N
    collided = sum(len(set(f)) < N for f in rounds.values())
    assert collided == 0, f"{collided}/{ROUNDS} rounds gave two processes one folder"
    assert all(Path(f).is_dir() for folders in rounds.values() for f in folders)


def test_run_json_names_the_slurm_job_array_and_task(tmp_path, monkeypatch):
    from ner_zoo.run.folder import prepare_fit

    for key, value in (("SLURM_JOB_ID", "9101"), ("SLURM_ARRAY_JOB_ID", "9100"), ("SLURM_ARRAY_TASK_ID", "1")):
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NER_ZOO_RUN_DIR", raising=False)
    config = {"trainer": {"default_root_dir": str(tmp_path)}, "seed_everything": 1,
              "model": {"class_path": "ner_zoo.models.BiLSTMCRF"}, "data": {"class_path": "ner_zoo.data.SampleCorpus"}}
    run = prepare_fit(config, lambda c: "abc", has_wandb=False)
    marker = json.loads((run.run_dir / "run.json").read_text())
    assert (marker["slurm_job"], marker["slurm_array_job"], marker["slurm_array_task"]) == ("9101", "9100", "1")
