"""``ner-zoo compare``: a results table from run records (``results.json``), beside the papers' numbers.

Runs of one recipe (same model, data and config hash, seeds differing) form one row with mean +/- std
over seeds. Each row of ``ner_zoo/resources/paper_results.yaml`` with no matching run is listed as
"not yet run", never filled in.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

import yaml

PAPERS = Path(__file__).parent / "resources" / "paper_results.yaml"


def load_records(paths: Iterable[str | Path]) -> list[dict]:
    records = []
    for p in map(Path, paths):
        files = [p] if p.is_file() else sorted(p.rglob("results.json"))
        for f in files:
            rec = json.loads(f.read_text())
            if rec.get("test"):
                rec["_path"] = str(f)
                records.append(rec)
    return records


def paper_results() -> list[dict]:
    return yaml.safe_load(PAPERS.read_text())


def _variant(rec: dict) -> str | None:
    return rec.get("variant") or (rec.get("config") or {}).get("variant")


def _fmt(values: Sequence[float]) -> str:
    if not values:
        return ""
    mean = 100 * statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.2f}"
    return f"{mean:.2f} ± {100 * statistics.stdev(values):.2f}"


def _recipe(rec: dict) -> str | None:
    """The recipe hash, recomputed from the stored config so that seeds and paths never split a row."""
    from ner_zoo.training.records import config_hash

    return config_hash(rec["config"]) if rec.get("config") else rec.get("config_hash")


def table_rows(records: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        groups[(r["model"], r["data"], _variant(r), _recipe(r))].append(r)
    papers = paper_results()
    rows, matched = [], set()
    for (model, data, variant, chash), recs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        paper = next((i for i, p in enumerate(papers) if p["model"] == model and p["data"] == data
                      and p.get("variant") == variant), None)
        if paper is not None:
            matched.add(paper)
        score = [r["test"].get("f1", r["test"].get("accuracy", float("nan"))) for r in recs]
        epochs = [r.get("epochs") for r in recs]
        secs = [s for r in recs for s in r.get("epoch_seconds", [])]
        hw = recs[0].get("hardware", {})
        rows.append({
            "model": model + (f" ({variant})" if variant else ""), "dataset": data,
            "encoder": recs[0].get("encoder") or "", "ours": _fmt(score), "seeds": len(recs),
            "paper": "" if paper is None else f"{papers[paper]['value']:.2f}",
            "epochs": "/".join(sorted({str(e) for e in epochs})),
            "s/epoch": f"{statistics.median(secs):.0f}" if secs else "",
            "precision": recs[0].get("precision", ""),
            "hardware": hw.get("gpu") or f"{hw.get('cpu_count')} CPU cores",
            "config": chash or "",
            "command": recs[0].get("command") or "",
        })
    for i, p in enumerate(papers):
        if i not in matched:
            rows.append({"model": p["model"] + (f" ({p['variant']})" if p.get("variant") else ""),
                         "dataset": p["data"], "encoder": "", "ours": "not yet run", "seeds": 0,
                         "paper": f"{p['value']:.2f}", "epochs": "", "s/epoch": "", "precision": "",
                         "hardware": "", "config": "", "command": ""})
    return rows


def to_markdown(rows: list[dict]) -> str:
    """The table, then one reproduction command per recipe (with the first seed's arguments)."""
    if not rows:
        return "(no runs)"
    cols = [c for c in rows[0] if c != "command"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    commands = [(r["config"], r["command"]) for r in rows if r.get("command")]
    if commands:
        lines += ["", "Commands (one seed shown; the other seeds differ only in `--seed_everything` and paths):", ""]
        lines += [f"- `{h}`: `{c}`" for h, c in commands]
    return "\n".join(lines)


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def compare_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="ner-zoo compare", description=__doc__)
    p.add_argument("paths", nargs="*", default=["runs"], help="run folders or results.json files")
    p.add_argument("--format", choices=["markdown", "csv"], default="markdown")
    p.add_argument("--output", type=Path)
    p.add_argument("--only-runs", action="store_true", help="leave out paper rows with no run")
    a = p.parse_args(argv)
    rows = table_rows(load_records(a.paths))
    if a.only_runs:
        rows = [r for r in rows if r["seeds"]]
    text = to_markdown(rows) if a.format == "markdown" else to_csv(rows)
    if a.output:
        from ner_zoo.data.writers import atomic_write

        with atomic_write(a.output) as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0
