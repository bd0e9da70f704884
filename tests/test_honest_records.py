"""Honest run records (issue 32, item 4): a dirty tree is recorded with a hash of its changes, a partial epoch
is never counted as complete, the WSJ sample is named as such, records an audit found wrong are marked in the
generated tables, and rows whose test sets differ in size say so."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from ner_zoo.run.recorder import RunRecorder, git_state

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True).stdout


def test_dirty_tree_recorded_with_a_hash_of_its_changes(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "t")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (repo / ".gitignore").write_text("runs/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    clean = git_state(repo)
    assert clean["dirty"] is False and "diff_sha256" not in clean
    (repo / "runs").mkdir()
    (repo / "runs" / "out.txt").write_text("ignored output")
    assert git_state(repo) == clean  # ignored files leave the tree clean
    (repo / "new_module.py").write_text("x = 1\n")  # code git does not know yet: the old check missed it
    untracked = git_state(repo)
    assert untracked["dirty"] is True and len(untracked["diff_sha256"]) == 64
    (repo / "new_module.py").unlink()
    (repo / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    edited = git_state(repo)
    expected = hashlib.sha256(_git(repo, "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff")).hexdigest()
    assert edited["dirty"] is True and edited["diff_sha256"] == expected != untracked["diff_sha256"]


def test_a_partial_epoch_is_never_rounded_up():
    rec = RunRecorder()
    rec.epoch_fractions = [1.0, 1.0, 0.9996]  # the third epoch 4 steps short of 10000
    trainer = SimpleNamespace(callbacks=[], max_steps=-1, global_step=29996, max_epochs=5, limit_train_batches=None)
    protocol = rec.protocol(trainer)
    assert protocol["epochs"] == 2.999 and protocol["epochs_completed"] == 2
    from ner_zoo.run.recorder import complete_epochs

    assert complete_epochs(3, [1.0, 1.0, 0.9996]) == 2 and complete_epochs(3, [1.0, 1.0, 1.0]) == 3
    assert complete_epochs(0, []) == 0


def _old_record(folder: Path, variant: str, seed: int, f1: float, epochs: int, last_step: int) -> None:
    """A record as written before ``protocol`` existed, with the ``metrics.csv`` Lightning wrote beside it:
    220 steps per epoch, the test row at the final global step."""
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({
        "model": "HCR", "data": "CoNLL2003", "seed": seed, "epochs": epochs, "test": {"f1": f1},
        "config": {"variant": variant, "trainer": {"max_epochs": 8, "max_time": "00:00:07:10"},
                   "data": {"init_args": {}}}}))
    lines = ["epoch,step,train/loss,val/f1,test/f1", "0,49,1.0,,", "0,219,,0.5,"]
    lines += [f"{e},{220 * (e + 1) - 1},,0.6," for e in range(1, epochs - 1)]
    lines += [f"{epochs},{last_step},,,{f1}"]
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n")


def test_old_records_read_their_trained_epochs_from_metrics(tmp_path):
    """Audit: "equal epochs = 8" paired 7 epochs + 1 step with 8 epochs; the steps in metrics.csv tell them apart."""
    from ner_zoo.results.compare import load_records, trained_epochs
    from ner_zoo.results.paired import paired_rows

    _old_record(tmp_path / "all-s2", "all", 2, 0.87, 8, 7 * 220 + 1)  # Lightning said 8
    _old_record(tmp_path / "base-s2", "base", 2, 0.88, 8, 8 * 220)
    records = {r["config"]["variant"]: r for r in load_records([tmp_path])}
    assert (trained_epochs(records["all"]), trained_epochs(records["base"])) == (7.004, 8)
    (row,) = paired_rows(list(records.values()))
    assert row["verdict"] == "not comparable" and row["left out"] == "seed 2: epochs 7.004 vs 8"


def test_record_notes_mark_the_wsj_sample_and_the_wrong_commit():
    from ner_zoo.results.compare import load_records, notes_markdown, table_rows
    from ner_zoo.results.paired import paired_rows

    records = load_records([ROOT / "docs" / "runs" / "cpu-2026-11-26-batch64", ROOT / "docs" / "runs" / "h100-2026-11-26-lnl-ace04"])
    wsj = [r for r in table_rows(records) if r["dataset"] == "WSJPOS" and r["seeds"]]
    assert wsj and all(r["split"] == "sample_10pct (paper: standard)" for r in wsj)
    (row,) = [r for r in paired_rows(records) if r["dataset"] == "WSJPOS"]
    assert row["split"] == "sample_10pct (paper: standard)"
    notes = notes_markdown(records)
    assert "## Record notes" in notes and "58f9874" in notes and "| 2 | 9 |" in notes
    assert json.loads(next((ROOT / "docs" / "runs" / "h100-2026-11-26-lnl-ace04").rglob("results.json"))
                      .read_text())["git"]["commit"].startswith("58f9874")  # the record itself is unchanged


def test_wsj_sample_is_named_as_such(tmp_path):
    from test_model_psa import write_tiny_treebank

    from ner_zoo.data import WSJPOS

    write_tiny_treebank(tmp_path / "wsj", files=10)
    dm = WSJPOS(data_dir=str(tmp_path / "wsj"))
    assert sum(map(len, dm.split_files().values())) == 10 and dm.split_name == "sample_10pct"


def test_rows_whose_test_sets_differ_in_size_are_marked():
    from ner_zoo.results.compare import test_size_note

    def rec(n):
        return {"test_sentences": {"counts": ";".join(["1,0,0"] * n)}}

    dspert = {"test_sentences": 879}
    assert test_size_note([(rec(812), rec(812))], (dspert, None)) == (
        " [test sets differ: paper's test set: 879 sentences, ours 812]")
    assert test_size_note([(rec(812), rec(811))], (None, None)) == " [test sets differ: arms tested on 811 vs 812 sentences]"
    assert test_size_note([(rec(879), rec(879))], (dspert, dspert)) == ""
    assert test_size_note([({}, {})], (dspert,)) == " [test sets differ: paper's test set: 879 sentences]"
