"""The cells that the tables of ``ner-zoo compare`` share (:mod:`~ner_zoo.results.compare`,
:mod:`~ner_zoo.results.paired`): a record's variant, overlays, split, score and epochs, mean ± std, the papers'
numbers, markdown tables. It imports neither table module, so they do not import each other."""

from __future__ import annotations

import copy
import csv
import functools
import json
import re
import statistics
from pathlib import Path
from typing import Iterable, Sequence

import yaml

PAPERS = Path(__file__).parent / "paper_results.yaml"


def read_yaml(path: Path):
    """The YAML file ``path`` (one of the package's data files), parsed once per version of the file: a
    ``compare`` of 285 records asked for ``paper_results.yaml`` over a thousand times. A copy each call."""
    stat = path.stat()
    text, data = _parsed(str(path), stat.st_mtime_ns, stat.st_size)
    return json.loads(text) if text is not None else copy.deepcopy(data)


@functools.lru_cache(maxsize=16)
def _parsed(path: str, mtime_ns: int, size: int) -> tuple[str | None, object]:
    """The parsed file, kept as JSON text where it is plain data (``json.loads`` copies it 5x faster than
    ``deepcopy``)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML was built with it
    data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)
    try:
        return json.dumps(data), None
    except TypeError:  # dates and the like: copied as they are
        return None, data


def paper_results() -> list[dict]:
    return read_yaml(PAPERS)


def trainer_config(rec: dict) -> dict:
    return (rec.get("config") or {}).get("trainer") or {}


def is_partial(rec: dict) -> bool:
    """The record's ``partial_test`` flag; for older records, read from the config (batch limits, fast_dev_run,
    overfit_batches, ``data.max_sentences``)."""
    if "partial_test" in rec:
        return bool(rec["partial_test"])
    t = trainer_config(rec)
    limit = t.get("limit_test_batches")
    data = ((rec.get("config") or {}).get("data") or {}).get("init_args") or {}
    return (bool(t.get("fast_dev_run")) or bool(t.get("overfit_batches")) or data.get("max_sentences") is not None
            or (limit is not None and not (isinstance(limit, float) and limit >= 1.0)))


def data_split(rec: dict) -> str:
    """The split a record used: a correction from ``record_notes.yaml``, else its ``data_split``; for older
    records, the data module's current default split name."""
    if rec.get("_data_split"):
        return rec["_data_split"]
    if rec.get("data_split"):
        return rec["data_split"]
    given = (((rec.get("config") or {}).get("data") or {}).get("init_args") or {}).get("split")
    if isinstance(given, str):
        return given
    from ner_zoo.data.corpora import DATA_MODULES

    return getattr(DATA_MODULES.get(rec.get("data") or ""), "split_name", "standard")


def steps_from_metrics(path: Path) -> float | None:
    """Epochs trained, from a run's ``metrics.csv``: the step of the test row over the steps of epoch 0 (the
    largest step logged in epoch 0, plus one); None when the file or those rows are missing."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        first = max(int(float(r["step"])) for r in rows if r.get("epoch") and int(float(r["epoch"])) == 0) + 1
        tested = [int(float(r["step"])) for r in rows if r.get("test/f1") or r.get("test/accuracy")]
    except (OSError, ValueError, KeyError):
        return None
    return tested[-1] / first if tested and first > 0 else None


def trained_epochs(rec: dict) -> float | None:
    """Epochs the run trained, a partial epoch counting as its fraction: ``protocol.epochs`` where the record
    has it; for older records (whose ``epochs`` counts an epoch cut by ``max_time`` as complete), the steps in
    the ``metrics.csv`` beside the record; else the record's ``epochs``."""
    if "_epochs_trained" not in rec:
        protocol = rec.get("protocol") or {}
        value = protocol.get("epochs")
        if value is None and rec.get("_path"):
            value = steps_from_metrics(Path(rec["_path"]).parent / "metrics.csv")
        from ner_zoo.results.fields import floor_epochs

        value = rec.get("epochs") if value is None else floor_epochs(value)
        rec["_epochs_trained"] = int(value) if isinstance(value, float) and value.is_integer() else value
    return rec["_epochs_trained"]


def variant(rec: dict) -> str | None:
    """The record's variant, else the ablation files named in its command (``ablations/shallow.yaml`` -> shallow)."""
    explicit = rec.get("variant") or (rec.get("config") or {}).get("variant")
    return explicit or "+".join(re.findall(r"ablations/(\w+)\.ya?ml", rec.get("command") or "")) or None


def label(model: str, variant: str | None) -> str:
    return model + (f" ({variant})" if variant else "")


def overlays(rec: dict) -> str:
    """The record's recipe ``overlays``; for older records, those named in the command
    (``experiments/short_budget_tagger.yaml`` -> short_budget_tagger)."""
    if "overlays" in rec:
        return "+".join(rec["overlays"])
    return "+".join(re.findall(r"experiments/(\w+)\.ya?ml", rec.get("command") or ""))


def fmt(values: Sequence[float]) -> str:
    if not values:
        return ""
    mean = 100 * statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.2f}"
    return f"{mean:.2f} ± {100 * statistics.stdev(values):.2f}"


def split_cell(split: str, papers: Iterable[dict | None]) -> str:
    """Our data split, marked with the paper's when the paper evaluated on another split."""
    other = sorted({p["split"] for p in papers if p and p.get("split") and p["split"] != split})
    return split + (f" (paper: {', '.join(other)})" if other else "")


def test_size(rec: dict) -> int | None:
    """Number of test sentences, from the per-sentence counts (records since they are written), else None."""
    text = (rec.get("test_sentences") or {}).get("counts")
    return len(text.split(";")) if isinstance(text, str) else None


def test_size_note(pairs: list[tuple[dict, dict]], papers: tuple[dict | None, ...]) -> str:
    """A mark for the ``split`` cell when the test sets differ in size: between our arms, or against the paper's
    (``test_sentences`` in ``paper_results.yaml``); "" when they agree or nothing is known."""
    ours = sorted({n for pair in pairs for r in pair if (n := test_size(r)) is not None})
    theirs = sorted({p["test_sentences"] for p in papers if p and p.get("test_sentences")})
    notes = []
    if len(ours) > 1:
        notes.append(f"arms tested on {' vs '.join(map(str, ours))} sentences")
    if theirs and theirs != ours:
        mine = f", ours {'/'.join(map(str, ours))}" if ours else ""
        notes.append(f"paper's test set: {'/'.join(map(str, theirs))} sentences{mine}")
    return f" [test sets differ: {'; '.join(notes)}]" if notes else ""


def score(rec: dict) -> float:
    return rec["test"].get("f1", rec["test"].get("accuracy", float("nan")))


def markdown_table(rows: list[dict], cols: list[str]) -> list[str]:
    return (["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            + ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows])


def section(title: str, intro: str, rows: list[dict]) -> str:
    """A ``## title`` section: the intro, then the rows as a table (columns from the first row)."""
    return "\n".join([f"## {title}", "", intro, "", *markdown_table(rows, list(rows[0]))]) if rows else ""
