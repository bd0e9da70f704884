"""``ner-zoo compare --wandb PROJECT``: the results page's tables as ``wandb.Table`` s in one W&B run.

The run (``job_type: compare``, name ``results``) holds ``results`` (one row per recipe, beside the papers'
numbers), ``paired`` (each paper model against its baseline, paired by seed), ``gains`` and ``f1_by_length``,
the same rows ``docs/results.md`` shows, and ``runs`` (one row per run record, with its W&B run id and link).
A text cell ``"93.63 ± 0.07"`` is kept for reading and split into number columns ``<column> mean`` and
``<column> std`` (``[+2.32, +5.27]``: ``<column> low``/``high``), so W&B can sort and chart them. Without an API key the run is written offline (``wandb sync`` uploads
it later). Each push is a new run: the dashboard keeps every version of the page.
"""

from __future__ import annotations

import netrc
import os
import re
from pathlib import Path
from urllib.parse import urlparse
from typing import Sequence


def wandb_host() -> str:
    """The W&B server's host name: ``WANDB_BASE_URL``'s (a self-hosted server), else ``api.wandb.ai``."""
    return urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or "api.wandb.ai"


def wandb_has_key() -> bool:
    """Whether W&B can log in: ``WANDB_API_KEY``, or a netrc entry for the server's host (any host)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    path = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return path.is_file() and netrc.netrc(str(path)).authenticators(wandb_host()) is not None
    except (netrc.NetrcParseError, OSError):
        return False


_MEAN_STD = re.compile(r"^([+-]?\d+(?:\.\d+)?)(?: ± (\d+(?:\.\d+)?))?$")
_INTERVAL = re.compile(r"^\[([+-]?\d+(?:\.\d+)?), ([+-]?\d+(?:\.\d+)?)\]$")


def numeric(row: dict) -> dict:
    """``row`` with number columns beside each text cell holding ``mean ± std``, a number, or ``[low, high]``."""
    out = {}
    for key, value in row.items():
        out[key] = value
        if not isinstance(value, str):
            continue
        m, ci = _MEAN_STD.match(value.strip()), _INTERVAL.match(value.strip())
        if m:
            out[f"{key} mean"] = float(m.group(1))
            out[f"{key} std"] = float(m.group(2)) if m.group(2) else None
        elif ci:
            out[f"{key} low"], out[f"{key} high"] = float(ci.group(1)), float(ci.group(2))
    return out


def run_link(record: dict) -> str | None:
    """The W&B page of the run that logged ``record``: its url, else built from the server, entity, project and
    id (None for an offline run without an entity, or a run without W&B)."""
    run = record.get("wandb") or {}
    if run.get("url"):
        return run["url"]
    if run.get("entity") and run.get("project") and run.get("id"):
        base = (os.environ.get("WANDB_BASE_URL") or "https://wandb.ai").rstrip("/").replace("//api.", "//")
        return f"{base}/{run['entity']}/{run['project']}/runs/{run['id']}"
    return None


def run_rows(records: list[dict]) -> list[dict]:
    """One row per run record: identity, scores as numbers, the W&B run id and link, the record's path."""
    rows = []
    for r in records:
        protocol = r.get("protocol") or {}
        rows.append({"model": r.get("model"), "variant": r.get("variant"), "data": r.get("data"), "seed": r.get("seed"),
                     "recipe": r.get("config_hash"), "test f1": (r.get("test") or {}).get("f1"),
                     "best val f1": r.get("best_val_f1"), "epochs": protocol.get("epochs", r.get("epochs")),
                     "stopped by": protocol.get("stopped_by"), "segments": len(r.get("segments") or []) or 1,
                     "wandb id": (r.get("wandb") or {}).get("id"), "wandb link": run_link(r),
                     "record": r.get("_path")})
    return rows


def _table(rows: list[dict]):
    import wandb

    rows = [numeric(r) for r in rows]
    columns = list(dict.fromkeys(c for r in rows for c in r))  # every column, first-seen order
    return wandb.Table(columns=columns, data=[[_cell(r.get(c)) for c in columns] for r in rows])


def _cell(value):
    return value if value is None or isinstance(value, (int, float, bool)) else str(value)


def push_tables(project: str, tables: dict[str, list[dict]], command: Sequence[str],
                save_dir: str = "runs/wandb") -> str:
    """Log each non-empty table of ``tables`` to a new run of ``project``; returns the run's id."""
    import wandb


    mode = "online" if wandb_has_key() or os.environ.get("WANDB_MODE") == "online" else "offline"
    os.makedirs(save_dir, exist_ok=True)
    run = wandb.init(project=project, name="results", job_type="compare", dir=save_dir, mode=mode,
                     config={"command": " ".join(command)}, tags=["results-page"])
    try:
        run.log({name: _table(rows) for name, rows in tables.items() if rows})
        return run.id
    finally:
        run.finish()
