"""``ner-zoo compare --wandb PROJECT``: the results page's tables as ``wandb.Table`` s in one W&B run.

The run (``job_type: compare``, name ``results``) holds ``results`` (one row per recipe, beside the papers'
numbers), ``paired`` (each paper model against its baseline, paired by seed), ``gains`` and ``f1_by_length``,
the same rows ``docs/results.md`` shows. Without an API key the run is written offline (``wandb sync`` uploads
it later). Each push is a new run: the dashboard keeps every version of the page.
"""

from __future__ import annotations

import netrc
import os
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


def _table(rows: list[dict]):
    import wandb

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
