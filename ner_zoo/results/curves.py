"""Training curves of the paired comparisons in ``ner-zoo compare``: each run's dev score per epoch (from the
Lightning ``metrics.csv`` beside its record), the plateau check, and the "Training curves" section.

An arm of a pair has *plateaued* at its epoch budget by :data:`PLATEAU_RULE`; the figure
(:mod:`~ner_zoo.results.curves_figure`) draws the same curves. A curve is never invented: a run without a
``metrics.csv`` (or with dev rows missing) leaves its arm "no curve".
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

#: epochs at the end of the budget that the plateau check looks at (the patience of configs/experiments/converge.yaml)
PLATEAU_EPOCHS = 5
#: most mean gain, in points of dev F1, that the last epochs may add for an arm to count as plateaued
PLATEAU_POINTS = 0.1

PLATEAU_RULE = (
    f"**Plateau rule.** An arm has *plateaued* at its budget when the mean over its paired seeds of each seed's "
    f"gain (the best dev score in its last {PLATEAU_EPOCHS} epochs minus its best dev score of all epochs before "
    f"them) is less than {PLATEAU_POINTS:g} points (`last-{PLATEAU_EPOCHS} gain`; negative when the peak came "
    "earlier). The mean is of per-seed gains, not the gain of the seed-averaged curve, which reads higher where "
    "seeds peak at different epochs; `best at the last epoch` counts the seeds whose best dev score came in the "
    "final epoch, a stricter sign of an arm still learning that the rule does not read. "
    f"{PLATEAU_EPOCHS} epochs is the patience of the converged reference rows (`configs/experiments/converge.yaml`); "
    f"{PLATEAU_POINTS:g} points is about half of PSA's gain on CoNLL-2000 (+0.17), the pair run to a plateau for "
    "this check, so an arm still gaining more in its last epochs could move the pair's difference by a large part "
    "of the effect measured. On a flat but noisy curve the earlier window is the longer one, so noise alone pushes "
    f"the gain below 0. Runs shorter than {PLATEAU_EPOCHS + 1} epochs are *too short* to tell.")


def _monitor(rec: dict) -> str:
    """The dev metric the run's best checkpoint was chosen on (``checkpoint.monitor``, ``val/f1`` by default)."""
    checkpoint = (rec.get("config") or {}).get("checkpoint") or {}
    monitor = checkpoint.get("monitor") if isinstance(checkpoint, dict) else None
    return monitor if isinstance(monitor, str) and monitor.startswith("val/") else "val/f1"


def metrics_files(rec: dict) -> list[Path]:
    """The ``metrics.csv`` files of a record: the one beside ``results.json`` (as ``docs/runs`` keeps them), else
    those a CSVLogger wrote under the run folder, oldest first: ``<name>/version_<n>/``, whatever the logger's name
    (``csv``, or ``csv-<variant>`` as the CLI names a variant's logger)."""
    if not rec.get("_path"):
        return []
    folder = Path(rec["_path"]).parent
    beside = folder / "metrics.csv"
    if beside.is_file():
        return [beside]

    def version(p: Path) -> tuple[int, str]:
        n = p.parent.name.removeprefix("version_")
        return (int(n) if n.isdigit() else -1, p.parent.parent.name)

    return sorted(folder.glob("*/version_*/metrics.csv"), key=version)


def dev_curve(rec: dict) -> list[float] | None:
    """The dev score (fraction) after each epoch, epoch 1 first, or None: no ``metrics.csv``, no dev rows, or an
    epoch without a dev row (a gap is never filled in). A resumed run's later files replace the epochs they repeat;
    with several dev rows in one epoch the last counts."""
    key, by_epoch = _monitor(rec), {}
    for path in metrics_files(rec):
        try:
            with path.open(newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    if row.get(key) and row.get("epoch"):
                        by_epoch[int(float(row["epoch"]))] = float(row[key])
        except (OSError, ValueError, UnicodeDecodeError):
            return None
    if not by_epoch or sorted(by_epoch) != list(range(len(by_epoch))):
        return None
    return [by_epoch[e] for e in range(len(by_epoch))]


def best_epoch(rec: dict, curve: list[float]) -> int:
    """The 1-based epoch of the checkpoint that was tested: the record's ``best_epoch`` (0-based) where it has one,
    else the first epoch with the best dev score (the best-checkpoint callback keeps only strict improvements)."""
    recorded = rec.get("best_epoch")
    if isinstance(recorded, int) and 0 <= recorded < len(curve):
        return recorded + 1
    return curve.index(max(curve)) + 1


@dataclass(frozen=True)
class Plateau:
    """The plateau check of one arm: ``status`` is plateaued, rising, too short or no curve; ``gain`` the mean
    last-k gain in points (None unless plateaued or rising); ``epochs`` the shortest curve of the arm."""

    status: str
    gain: float | None = None
    epochs: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "plateaued"

    def cell(self) -> str:
        if self.gain is None:
            return self.status
        return f"{self.status} ({self.gain:+.2f})"


def plateau(curves: list[list[float] | None], k: int = PLATEAU_EPOCHS, threshold: float = PLATEAU_POINTS) -> Plateau:
    """:data:`PLATEAU_RULE` on one arm's curves (fractions, one per seed)."""
    if not curves or any(c is None for c in curves):
        return Plateau("no curve")
    shortest = min(len(c) for c in curves)
    if shortest < k + 1:
        return Plateau(f"too short ({shortest} < {k + 1} epochs)", epochs=shortest)
    gain = statistics.fmean(100 * (max(c[-k:]) - max(c[:-k])) for c in curves)
    return Plateau("plateaued" if gain < threshold else "rising", gain, shortest)


def both(model: Plateau, baseline: Plateau) -> str:
    if model.ok and baseline.ok:
        return "yes"
    if "no curve" in (model.status, baseline.status):
        return "no curve"
    if model.status.startswith("too short") or baseline.status.startswith("too short"):
        return "too short"
    return "no"


def _epoch_range(epochs: list[int]) -> str:
    return str(epochs[0]) if min(epochs) == max(epochs) else f"{min(epochs)}-{max(epochs)}"


def curve_rows(paired: list[dict]) -> list[dict]:
    """One row per paired comparison with paired seeds (:func:`~ner_zoo.results.paired.paired_rows`, which
    keeps the pairs under ``_pairs`` and their dev curves under ``_curves``): each arm's plateau check and
    best-dev epochs; ``_arms`` holds the curves (seed, curve, best epoch) that the figure draws."""
    rows = []
    for row in paired:
        pairs = row.get("_pairs") or []
        if not pairs:
            continue
        curves = row.get("_curves") or [(dev_curve(a), dev_curve(b)) for a, b in pairs]
        arms, checks, best = {}, {}, {}
        for side, index in (("model", 0), ("baseline", 1)):
            runs = [(pair[index].get("seed"), pair[index], c[index]) for pair, c in zip(pairs, curves)]
            arms[side] = [(seed, c, best_epoch(rec, c)) for seed, rec, c in runs if c]
            checks[side] = plateau([c for _, _, c in runs])
            best[side] = _epoch_range([b for _, _, b in arms[side]]) if arms[side] else ""
        rows.append({
            "dataset": row["dataset"], "model": row["model"], "baseline": row["baseline"], "overlay": row["overlay"],
            "protocol": row["protocol"], "n": row["n"],
            f"model last-{PLATEAU_EPOCHS}": checks["model"].cell(),
            f"baseline last-{PLATEAU_EPOCHS}": checks["baseline"].cell(),
            "both plateaued": both(checks["model"], checks["baseline"]),
            "best-dev epoch (model)": best["model"], "best-dev epoch (baseline)": best["baseline"],
            "best at the last epoch (model / baseline)": " / ".join(
                f"{sum(b == len(c) for _, c, b in arms[side])}/{len(arms[side])}" for side in ("model", "baseline")),
            "recipe": row.get("recipe", ""),
            "_arms": arms, "_plateau": (checks["model"], checks["baseline"]),
        })
    return rows


def drawable(row: dict) -> bool:
    """A row the figure draws: every paired run of both arms has a curve of :data:`PLATEAU_EPOCHS` epochs or more
    (shorter ones show no approach to a plateau; the table lists them)."""
    return all(len(runs) == row["n"] and all(len(c) >= PLATEAU_EPOCHS for _, c, _ in runs)
               for runs in (row["_arms"]["model"], row["_arms"]["baseline"]))


def curves_markdown(rows: list[dict], figure: str | None) -> str:
    """The "Training curves" section: the plateau table of ``rows`` (:func:`curve_rows`) and the figure."""
    if not rows:
        return ""
    from ner_zoo.results.cells import section

    public = [{key: value for key, value in r.items() if not key.startswith("_")} for r in rows]
    k = PLATEAU_EPOCHS
    intro = ("Dev score per epoch of both arms of each paired comparison above that has paired seeds, read from "
             "each run's `metrics.csv` (the Lightning CSV log beside its record). "
             f"`last-{k}`: the plateau check below, with the arm's mean gain in points; `both plateaued`: yes when "
             "both arms plateaued at the budget; `best-dev epoch`: the epoch (1-based) of the checkpoint each run "
             "tested, over its seeds; `no curve`: a run of the arm has no per-epoch dev scores.\n\n" + PLATEAU_RULE)
    text = section("Training curves of the paired comparisons", intro, public)
    if figure:
        text += (f"\n\n![Dev score per epoch of both arms of each pair]({figure})\n\n`{figure}`: one panel per "
                 f"row above whose runs all have {k} or more epochs of dev scores; thin lines are seeds, bold the "
                 "mean over seeds, dots each run's best-dev (tested) epoch, the dashed line the budget and the shaded "
                 f"band the last {k} epochs that the plateau check reads (drawn by `ner-zoo compare` beside its "
                 "`--output`).")
    return text
