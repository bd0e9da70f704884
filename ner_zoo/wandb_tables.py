"""``ner-zoo compare --wandb PROJECT``: the results page's tables as ``wandb.Table`` s in one W&B run.

The run (``job_type: compare``, name ``results``) holds ``results`` (one row per recipe, beside the papers'
numbers), ``paired`` (each paper model against its baseline, paired by seed), ``gains`` and ``f1_by_length``,
the same rows ``docs/results.md`` shows. Without an API key the run is written offline (``wandb sync`` uploads
it later). Each push is a new run: the dashboard keeps every version of the page.
"""

from __future__ import annotations

import os
from typing import Sequence


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

    from ner_zoo.cli.lightning_cli import wandb_has_key

    mode = "online" if wandb_has_key() or os.environ.get("WANDB_MODE") == "online" else "offline"
    os.makedirs(save_dir, exist_ok=True)
    run = wandb.init(project=project, name="results", job_type="compare", dir=save_dir, mode=mode,
                     config={"command": " ".join(command)}, tags=["results-page"])
    try:
        run.log({name: _table(rows) for name, rows in tables.items() if rows})
        return run.id
    finally:
        run.finish()
