"""What a run record's history holds, for the ``history`` cell of ``ner-zoo compare``'s paired rows.

A record is the last word of a run, but a run may have been tested before its final test, stopped and resumed,
paused, or trained at another commit than its baseline. Each is read from the record and its ``metrics.csv``:

- **interim tests**: test rows of ``metrics.csv`` at an epoch before the final one (a run tested, then trained on);
- **pauses**: records written since issue 47 list ``pauses``, steps whose wall-clock time exceeded the process's
  CPU time by over :data:`PAUSE_SECONDS` (the process was not running: ``SIGSTOP``, a suspended machine; contention
  slows every step a little, never one by minutes). Older records only have ``epoch_seconds``: an epoch over
  :data:`OUTLIER_FACTOR` times the run's median and :data:`PAUSE_SECONDS` longer is reported as a *likely* pause;
- **commits**: the record's ``git`` commit and each segment's (segments carry one since issue 47); where the two
  arms of a pair ran at different commits, what differs in ``ner_zoo/`` between them, from
  :data:`COMMIT_DIFFS` (``python -m ner_zoo.results.history docs/runs`` adds missing pairs with ``git``; a CI
  checkout without history still reads them);
- **matrix files**: the run-matrix file each segment ran from and its hash (``tools/run_matrix.py`` passes them);
  a hash that differs between the runs of a row says the matrix changed while they ran.
"""

from __future__ import annotations

import csv
import re
import statistics
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import yaml

from ner_zoo.results.curves import metrics_files

#: seconds a step's wall clock may exceed its CPU time before it counts as a pause (records' ``pauses``); also the
#: least excess of an outlier epoch over the median for older records
PAUSE_SECONDS = 60.0
#: an epoch this many times the run's median epoch is an outlier (older records, without ``pauses``)
OUTLIER_FACTOR = 3.0
COMMIT_DIFFS = Path(__file__).parent / "commit_diffs.yaml"
ROOT = Path(__file__).resolve().parents[2]


def test_epochs(rec: dict) -> list[int]:
    """The epochs at which ``metrics.csv`` holds a test row (distinct, in order); the last is the final test."""
    epochs: list[int] = []
    for path in metrics_files(rec):
        try:
            with path.open(newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    if row.get("test/f1") or row.get("test/accuracy"):
                        e = int(float(row["epoch"])) if row.get("epoch") else -1
                        if e not in epochs:
                            epochs.append(e)
        except (OSError, ValueError, UnicodeDecodeError):
            return []
    return epochs


def interim_tests(rec: dict) -> list[int]:
    """Epochs (1-based counts of trained epochs, as ``metrics.csv`` writes them) of tests before the final one."""
    return test_epochs(rec)[:-1]


def pauses(rec: dict) -> tuple[list[str], bool]:
    """(what was paused, measured): measured pauses from the record's ``pauses``, else likely ones from outlier
    epoch times (``measured`` False)."""
    if isinstance(rec.get("pauses"), list):
        return [f"step {p.get('step')} ({p.get('seconds', 0) / 60:.0f} min)" for p in rec["pauses"]
                if isinstance(p, dict)], True
    times = [t for t in rec.get("epoch_seconds") or [] if isinstance(t, (int, float))]
    if len(times) < 3:
        return [], False
    median = statistics.median(times)
    return [f"epoch {i + 1} ({t:.0f} s)" for i, t in enumerate(times)
            if t > OUTLIER_FACTOR * median and t - median > PAUSE_SECONDS], False


def commits(rec: dict) -> list[str]:
    """The short commits a record's run trained at: its segments' (where they carry one) and the record's own."""
    found = [s["commit"][:7] for s in rec.get("segments") or [] if isinstance(s, dict) and s.get("commit")]
    own = (rec.get("git") or {}).get("commit")
    if own:
        found.append(own[:7])
    return sorted(set(found))


def matrices(rec: dict) -> set[tuple[str, str]]:
    """(matrix file, sha256) of each segment that ran from a run-matrix file."""
    return {(m.get("path", ""), m.get("sha256", "")) for s in rec.get("segments") or []
            if isinstance(s, dict) and isinstance(m := s.get("matrix"), dict)}


def load_commit_diffs(path: Path = COMMIT_DIFFS) -> dict[frozenset, str]:
    """(commit pair) -> "older vs newer: what differs", from :data:`COMMIT_DIFFS`."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else []
    return {frozenset(e["commits"]): f"{e['commits'][0]} vs {e['commits'][1]}: ner_zoo/ differs in {e['ner_zoo']}"
            for e in entries or []}


#: the folders of ``ner_zoo/`` whose code a fit runs (the model's numbers can change with them)
TRAINING_CODE = ("models", "modules", "training", "data", "metrics")


def git_diff(a: str, b: str, root: Path = ROOT) -> str | None:
    """What differs in ``ner_zoo/`` between commits ``a`` and ``b``: its shortstat and the changed files of the
    training code (:data:`TRAINING_CODE`); None where git cannot tell (no repository, a clone without them)."""
    try:
        run = lambda *args: subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                                           check=True).stdout.strip()
        names = run("diff", "--name-only", a, b, "--", "ner_zoo/").splitlines()
        stat = run("diff", "--shortstat", a, b, "--", "ner_zoo/")
    except (OSError, subprocess.CalledProcessError):
        return None
    if not names:
        return "nothing"
    counts = re.findall(r"(\d+) (file|insertion|deletion)", stat)
    n = {kind: int(k) for k, kind in counts}
    training = [p.removeprefix("ner_zoo/") for p in names if p.split("/")[1] in TRAINING_CODE and p.endswith(".py")]
    return (f"{n.get('file', 0)} files (+{n.get('insertion', 0)} −{n.get('deletion', 0)}); training code: "
            + (", ".join(training) if training else "none"))


def commit_time(commit: str, root: Path = ROOT) -> int:
    try:
        return int(subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%ct", commit], capture_output=True,
                                  text=True, check=True).stdout.strip() or 0)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


def commit_difference(a: list[str], b: list[str], diffs: dict[frozenset, str] | None = None) -> str:
    """The ``history`` words for arms at different commits (``a``, ``b``: each arm's commits), or ""."""
    if not a or not b or set(a) == set(b):
        return ""
    diffs = load_commit_diffs() if diffs is None else diffs
    parts = []
    for x, y in sorted({tuple(sorted((x, y))) for x in a for y in b if x != y}):
        known = diffs.get(frozenset((x, y)))
        if known is None:
            x, y = sorted((x, y), key=commit_time)
            known = f"{x} vs {y}: ner_zoo/ differs in {git_diff(x, y) or 'what git cannot tell here (no history)'}"
        parts.append(known)
    return f"arms at different commits (model {', '.join(a)}; baseline {', '.join(b)}): " + "; ".join(parts)


def row_history(pairs: list[tuple[dict, dict]]) -> str:
    """The ``history`` cell of a paired row: what the records of its seeds hold beyond their final numbers."""
    notes = []
    arms = ([a for a, _ in pairs], [b for _, b in pairs])
    model_commits = sorted({c for r in arms[0] for c in commits(r)})
    base_commits = sorted({c for r in arms[1] for c in commits(r)})
    if diff := commit_difference(model_commits, base_commits):
        notes.append(diff)
    interim = [f"{('model', 'baseline')[i]} seed {r.get('seed')} at epoch {', '.join(map(str, e))}"
               for i, arm in enumerate(arms) for r in arm if (e := interim_tests(r))]
    if interim:
        notes.append("tested before the final test: " + "; ".join(interim))
    resumed = sum(len(r.get("segments") or []) > 1 for arm in arms for r in arm)
    if resumed:
        notes.append(f"resumed: {resumed} of {2 * len(pairs)} runs trained in several segments")
    measured, likely = [], []
    for i, arm in enumerate(arms):
        for r in arm:
            found, exact = pauses(r)
            if found:
                (measured if exact else likely).append(f"{('model', 'baseline')[i]} seed {r.get('seed')} "
                                                       + ", ".join(found))
    if measured:
        notes.append("paused (wall clock over CPU time): " + "; ".join(measured))
    if likely:
        notes.append(f"epoch times with likely pauses (over {OUTLIER_FACTOR:g}x the run's median epoch): "
                     + "; ".join(likely))
    if len({m for arm in arms for r in arm for m in matrices(r)}) > 1:
        notes.append("the run-matrix file changed between the runs or segments of this row")
    return "; ".join(notes)


def missing_diffs(records: list[dict], diffs: dict[frozenset, str]) -> list[tuple[str, str]]:
    """Commit pairs of records under one data set that :data:`COMMIT_DIFFS` lacks (candidates for a pair's arms)."""
    by_data: dict[str, set[str]] = {}
    for r in records:
        by_data.setdefault(r["data"], set()).update(commits(r))
    return sorted({tuple(sorted(p)) for cs in by_data.values() for p in combinations(sorted(cs), 2)
                   if frozenset(p) not in diffs})


def main(argv: list[str] | None = None) -> int:
    """``python -m ner_zoo.results.history RUNS...``: add to :data:`COMMIT_DIFFS` the ``ner_zoo/`` differences
    between the commits of records on the same data (needs the git history of those commits)."""
    import json

    records = []  # what this needs of each record (data, commits): read here, not through compare (a circle)
    for root in map(Path, argv if argv else ["docs/runs"]):
        for f in sorted(root.rglob("results.json")) if root.is_dir() else [root]:
            rec = json.loads(f.read_text(encoding="utf-8"))
            if isinstance(rec, dict) and isinstance(rec.get("data"), str) and rec.get("test"):
                records.append(rec)
    diffs = load_commit_diffs()
    entries = yaml.safe_load(COMMIT_DIFFS.read_text(encoding="utf-8")) if COMMIT_DIFFS.exists() else []
    entries = entries or []
    for a, b in missing_diffs(records, diffs):
        a, b = sorted((a, b), key=commit_time)  # older first: + and − read as "what the newer commit changed"
        what = git_diff(a, b)
        if what is None:
            print(f"history: {a} vs {b}: not in this repository's history, left out", file=sys.stderr)
            continue
        entries.append({"commits": [a, b], "ner_zoo": what})
    entries.sort(key=lambda e: sorted(e["commits"]))
    header = ("# What differs in ner_zoo/ between the commits of run records on the same data, for the `history` cell\n"
              "# of `ner-zoo compare` (generated: python -m ner_zoo.results.history docs/runs; git reads it once)\n")
    COMMIT_DIFFS.write_text(header + yaml.safe_dump(entries, sort_keys=False, width=10_000, allow_unicode=True),
                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
