"""A record's history in ``ner-zoo compare`` (``ner_zoo/results/history.py``): interim tests, pauses, arms at
different commits, matrix changes, superseded rows and the three Holm families of the paired rows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ner_zoo.results import history
from ner_zoo.results.paired import holm_columns, mark_superseded
from ner_zoo.results.stats import holm


def _run(folder: Path, *, seed: int = 1, commit: str = "a" * 40, tests: tuple[int, ...] = (3,),
         epoch_seconds: list | None = None, pauses: list | None = None, segments: list | None = None) -> dict:
    """A record with a ``metrics.csv`` beside it: dev rows for 3 epochs and a test row at each of ``tests``."""
    folder.mkdir(parents=True)
    rows = ["epoch,step,val/f1,test/f1"] + [f"{e},{10 * (e + 1)},0.{5 + e}," for e in range(3)]
    rows += [f"{e},{10 * e},,0.8" for e in tests]
    (folder / "metrics.csv").write_text("\n".join(rows) + "\n")
    rec = {"model": "PSA", "data": "CoNLL2000", "seed": seed, "git": {"commit": commit, "dirty": False},
           "epoch_seconds": epoch_seconds or [60.0, 61.0, 59.0], "segments": segments or [{"start_step": 0}],
           "_path": str(folder / "results.json")}
    if pauses is not None:
        rec["pauses"] = pauses
    return rec


def test_interim_tests_are_the_test_rows_before_the_final_one(tmp_path):
    assert history.interim_tests(_run(tmp_path / "a", tests=(3,))) == []
    assert history.interim_tests(_run(tmp_path / "b", tests=(2, 3))) == [2]
    assert history.interim_tests({"_path": str(tmp_path / "none" / "results.json")}) == []


def test_pauses_measured_where_recorded_likely_from_outlier_epochs_otherwise(tmp_path):
    steady = _run(tmp_path / "a", epoch_seconds=[56, 60, 58, 90, 57])  # contention: 1.6x, never a pause
    assert history.pauses(steady) == ([], False)
    stopped = _run(tmp_path / "b", epoch_seconds=[56, 60, 58, 324, 57])  # a 4-minute SIGSTOP in epoch 4
    assert history.pauses(stopped) == (["epoch 4 (324 s)"], False)
    measured = _run(tmp_path / "c", epoch_seconds=[56, 60, 58, 324, 57], pauses=[{"step": 31, "seconds": 240.0}])
    assert history.pauses(measured) == (["step 31 (4 min)"], True)
    assert history.pauses(_run(tmp_path / "d", pauses=[])) == ([], True)  # measured: none


def test_row_history_names_commits_interim_tests_resumes_and_pauses(tmp_path):
    model = _run(tmp_path / "m", commit="1" * 40, tests=(2, 3), segments=[{"start_step": 0}, {"start_step": 20}])
    base = _run(tmp_path / "b", commit="2" * 40, epoch_seconds=[56, 60, 58, 324, 57])
    diffs = {frozenset(("1111111", "2222222")): "2222222 vs 1111111: ner_zoo/ differs in 1 file (+2 −1); "
                                                 "training code: modules/crf.py"}
    cell = history.commit_difference(history.commits(model), history.commits(base), diffs)
    assert cell.startswith("arms at different commits (model 1111111; baseline 2222222)") and "crf.py" in cell
    text = history.row_history([(model, base)])
    assert "tested before the final test: model seed 1 at epoch 2" in text
    assert "resumed: 1 of 2 runs" in text and "baseline seed 1 epoch 4 (324 s)" in text
    same = _run(tmp_path / "s", commit="1" * 40)
    assert history.commit_difference(history.commits(model), history.commits(same), diffs) == ""
    # segments that carry their own commit: a run resumed at another commit differs from its baseline
    resumed = _run(tmp_path / "r", commit="1" * 40, segments=[{"commit": "3" * 40}, {"commit": "1" * 40}])
    assert history.commits(resumed) == ["1111111", "3333333"]


def test_row_history_flags_a_matrix_that_changed_between_runs(tmp_path):
    a = _run(tmp_path / "a", segments=[{"matrix": {"path": "m.yaml", "sha256": "x"}}])
    b = _run(tmp_path / "b", segments=[{"matrix": {"path": "m.yaml", "sha256": "y"}}])
    assert "run-matrix file changed" in history.row_history([(a, b)])
    assert "run-matrix" not in history.row_history([(a, a)])


def test_git_diff_lists_the_training_code_between_two_commits(tmp_path):
    repo = tmp_path / "repo"
    (repo / "ner_zoo" / "modules").mkdir(parents=True)
    (repo / "ner_zoo" / "api").mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True,
                                    text=True).stdout.strip()
    git("init", "-q")
    git("config", "user.email", "t@t"), git("config", "user.name", "t")
    (repo / "ner_zoo" / "modules" / "crf.py").write_text("a = 1\n")
    (repo / "ner_zoo" / "api" / "serve.py").write_text("b = 1\n")
    git("add", "."), git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    (repo / "ner_zoo" / "modules" / "crf.py").write_text("a = 2\nc = 3\n")
    (repo / "ner_zoo" / "api" / "serve.py").write_text("b = 2\n")
    git("commit", "-qam", "two")
    second = git("rev-parse", "HEAD")
    assert history.git_diff(first, second, repo) == "2 files (+3 −2); training code: modules/crf.py"
    assert history.git_diff(first, first, repo) == "nothing"
    assert history.git_diff(first, "f" * 40, repo) is None  # a commit this clone lacks


def test_commit_diffs_cover_every_pair_of_commits_in_the_published_records():
    """``commit_diffs.yaml`` is what a checkout without git history (CI) reads: it must hold every pair."""
    from ner_zoo.results.compare import load_records

    records = load_records([Path(__file__).resolve().parents[1] / "docs" / "runs"])
    assert history.missing_diffs(records, history.load_commit_diffs()) == []


def _row(paper: str, p: float, tests: tuple, own: bool = True, **cells) -> dict:
    return {"_family": True, "_p": p, "_tests": tests, "_own_arms": own, "history": "", "n": 5,
            "Holm p": "", "Holm p (paper)": "", "Holm p (gains)": "", "model": f"{paper} m", "baseline": f"{paper} b",
            **cells}


def test_holm_columns_per_family_paper_and_distinct_gain():
    hcr_all = ("CoNLL2003", ("HCR", "all"), ("HCR", "base"))
    rows = [_row("HCR", 0.01, hcr_all), _row("HCR", 0.02, hcr_all, own=False),  # the gain tested a second way
            _row("PSA", 0.03, ("CoNLL2000", ("PSA", None), ("PSA", "no_fusion")))]
    holm_columns(rows)
    assert [r["Holm p"] for r in rows] == [f"{p:.3f}" for p in holm([0.01, 0.02, 0.03])]
    assert [r["Holm p (paper)"] for r in rows] == [f"{p:.3f}" for p in holm([0.01, 0.02])] + ["0.030"]
    # distinct gains: the own-arms HCR row stands for its gain; the other row gets no value and says why
    assert holm([0.01, 0.03]) == pytest.approx([0.02, 0.03])
    assert [r["Holm p (gains)"] for r in rows] == ["0.020", "", "0.030"]
    assert rows[1]["history"].startswith("tests the gain of the HCR m − HCR b row again")


def test_a_superseded_row_is_marked_and_left_out_of_every_family(tmp_path):
    tests = ("CoNLL2000", ("PSA", None), ("PSA", "no_fusion"))
    arms = {"model": "PSA", "baseline": "PSA (no_fusion)"}
    old = _row("PSA", 0.01, tests, **arms, _pairs=[({"_path": str(tmp_path / "e5" / f"{arm}-s1" / "results.json")},
                                                    {"_path": str(tmp_path / "e5" / "base-s1" / "results.json")})
                                                   for arm in ("psa",)])
    new = _row("PSA", 0.02, tests, **arms, _pairs=[({"_path": str(tmp_path / "e50" / "psa-s1" / "results.json")},
                                                    {"_path": str(tmp_path / "e5" / "base-s1" / "results.json")})])
    declared = [{"records": ["e5/*"], **arms, "by": "the 50-epoch pair", "why": "5 epochs were too few"}]
    mark_superseded([old, new], declared)
    holm_columns([old, new])
    assert old["history"] == "superseded by the 50-epoch pair: 5 epochs were too few"
    assert (old["Holm p"], old["Holm p (gains)"]) == ("", "")
    assert new["history"] == "" and new["Holm p"] == "0.020"  # one arm elsewhere: not the superseded row


@pytest.mark.parametrize("gap, cpu, paused", [(240.0, 0.1, True), (240.0, 239.0, False), (30.0, 0.1, False)])
def test_recorder_counts_a_stretch_without_cpu_as_a_pause(monkeypatch, gap, cpu, paused):
    """Wall clock over CPU time by more than PAUSE_SECONDS between two steps: a pause (``SIGSTOP``); the same
    stretch with the CPU busy (a long validation) or a short one is none."""
    from ner_zoo.run import recorder as records

    clock = {"wall": 0.0, "cpu": 0.0}
    monkeypatch.setattr(records.time, "perf_counter", lambda: clock["wall"])
    monkeypatch.setattr(records.time, "process_time", lambda: clock["cpu"])
    rec = records.RunRecorder(enabled=False)
    for step in range(20):  # steady steps of 0.5 s
        rec._check_pause(step)
        clock["wall"] += 0.5
        clock["cpu"] += 0.5
    clock["wall"] += gap
    clock["cpu"] += cpu
    rec._check_pause(20)
    assert bool(rec.pauses) == paused
    if paused:
        assert rec.pauses[0]["step"] == 20 and rec.pauses[0]["seconds"] == pytest.approx(gap - cpu, abs=0.1)
        assert json.loads(json.dumps(rec.state_dict()["pauses"])) == rec.pauses  # kept across a resume
