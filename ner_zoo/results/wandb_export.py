"""``ner-zoo compare --wandb PROJECT``: the results page's tables as ``wandb.Table`` s in one W&B run.

The run (``job_type: compare``, name ``results``) holds ``results`` (one row per recipe, beside the papers'
numbers), ``paired`` (each paper model against its baseline, paired by seed), ``gains`` and ``f1_by_length``,
the same rows ``docs/results.md`` shows, and ``runs`` (one row per run record, with its W&B run id and link).
A text cell ``"93.63 ± 0.07"`` is kept for reading and split into number columns ``<column> mean`` and
``<column> std`` (``[+2.32, +5.27]``: ``<column> low``/``high``), so W&B can sort and chart them. Without an API key the run is written offline (``wandb sync`` uploads
it later). Each push is a new run: the dashboard keeps every version of the page.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ner_zoo.errors import ConfigError


@dataclass(frozen=True)
class WandbLogin:
    """What the installed wandb does at ``wandb.init``: its mode, the server it would log in to, and whether
    ner-zoo turned a run without a key offline."""

    mode: str  # online, offline or disabled
    base_url: str  # W&B's server (``WANDB_BASE_URL``, ``wandb login --host``, else wandb's default)
    app_url: str  # the server's web pages (run links)
    entity: str | None  # ``WANDB_ENTITY`` or the settings file's
    forced_offline: bool  # no key for base_url: offline (wandb itself would prompt, or fail without a terminal)


def wandb_login() -> WandbLogin:
    """Ask the installed wandb whether it would log in, and where: its settings (environment and settings
    files, the same object ``wandb.init`` reads) and its own credential lookup for that server (``WANDB_API_KEY``,
    the netrc entry ``wandb login`` wrote, the settings' ``api_key``). A mode set by the user (``WANDB_MODE``,
    ``wandb offline``) is kept; offline only when wandb has no key for its server."""
    from wandb.errors import AuthenticationError
    from wandb.sdk import wandb_setup
    from wandb.sdk.lib import wbauth

    try:
        settings = wandb_setup.singleton().settings
        mode = "disabled" if settings._noop else "offline" if settings._offline else "online"
        forced = False
        if mode == "online" and not os.environ.get("WANDB_MODE"):
            auth = wbauth.authenticate_session(host=settings.base_url, source="ner-zoo", prompt=False,
                                               update_session=False)
            mode, forced = ("online", False) if auth is not None else ("offline", True)
    except (AuthenticationError, ValueError) as e:  # a malformed key or server URL (pydantic's errors included)
        raise ConfigError(f"W&B settings: {' '.join(str(e).split())[:300]}") from None
    return WandbLogin(mode, settings.base_url, settings.app_url, settings.entity or None, forced)


def offline_note(login: WandbLogin) -> str:
    """The one line saying a run goes offline for want of a key."""
    return (f"ner-zoo: W&B offline: wandb has no API key for {login.base_url} (run `wandb login`, or set "
            "WANDB_API_KEY); upload later with `wandb sync`")


_MEAN_STD = re.compile(r"^([+-]?\d+(?:\.\d+)?)(?: ± (\d+(?:\.\d+)?))?$")
_INTERVAL = re.compile(r"^\[([+-]?\d+(?:\.\d+)?), ([+-]?\d+(?:\.\d+)?)\]$")


#: text columns that only look like numbers: ids, hashes, paths (an all-digit W&B id stays a string)
TEXT_COLUMNS = {"wandb id", "wandb link", "record", "recipe", "config", "command"}


def numeric(row: dict) -> dict:
    """``row`` with number columns beside each text cell holding ``mean ± std``, a number, or ``[low, high]``
    (not beside :data:`TEXT_COLUMNS`)."""
    out = {}
    for key, value in row.items():
        out[key] = value
        if not isinstance(value, str) or key in TEXT_COLUMNS:
            continue
        m, ci = _MEAN_STD.match(value.strip()), _INTERVAL.match(value.strip())
        if m:
            out[f"{key} mean"] = float(m.group(1))
            out[f"{key} std"] = float(m.group(2)) if m.group(2) else None
        elif ci:
            out[f"{key} low"], out[f"{key} high"] = float(ci.group(1)), float(ci.group(2))
    return out


def synced(record: dict) -> bool:
    """Whether the record's W&B run is on a server: logged online (its url), or an offline run that
    ``wandb sync`` uploaded (it leaves ``run-<id>.wandb.synced`` beside the stream in the run folder)."""
    run = record.get("wandb") or {}
    if run.get("url"):
        return True
    if not (run.get("id") and record.get("_path")):
        return False
    folder = Path(record["_path"]).parent / "wandb"
    return any(folder.glob(f"*-{run['id']}/run-{run['id']}.wandb.synced"))


def run_link(record: dict, app_url: str, entity: str | None = None) -> str | None:
    """The W&B page of the run that logged ``record``, for a synced run: its url, else ``app_url`` with the
    record's entity (``entity``, wandb's default, where the record has none), project and id (None: not synced,
    no W&B, or no entity known)."""
    run = record.get("wandb") or {}
    if not synced(record):
        return None
    if run.get("url"):
        return run["url"]
    entity = run.get("entity") or entity
    if entity and run.get("project"):
        return f"{app_url.rstrip('/')}/{entity}/{run['project']}/runs/{run['id']}"
    return None


def run_rows(records: list[dict], app_url: str, entity: str | None = None) -> list[dict]:
    """One row per run record: identity, scores as numbers, the W&B run id (text) and link, the record's path."""
    rows = []
    for r in records:
        protocol = r.get("protocol") or {}
        run_id = (r.get("wandb") or {}).get("id")
        rows.append({"model": r.get("model"), "variant": r.get("variant"), "data": r.get("data"), "seed": r.get("seed"),
                     "recipe": r.get("config_hash"), "test f1": (r.get("test") or {}).get("f1"),
                     "best val f1": r.get("best_val_f1"), "epochs": protocol.get("epochs", r.get("epochs")),
                     "stopped by": protocol.get("stopped_by"), "segments": len(r.get("segments") or []) or 1,
                     "wandb id": None if run_id is None else str(run_id),
                     "wandb link": run_link(r, app_url, entity), "record": r.get("_path")})
    return rows


def _table(rows: list[dict]):
    import wandb

    rows = [numeric(r) for r in rows]
    columns = list(dict.fromkeys(c for r in rows for c in r))  # every column, first-seen order
    return wandb.Table(columns=columns, data=[[_cell(r.get(c)) for c in columns] for r in rows])


def _cell(value):
    return value if value is None or isinstance(value, (int, float, bool)) else str(value)


def push_tables(project: str, tables: dict[str, list[dict]], command: Sequence[str],
                records: list[dict] | None = None, save_dir: str = "runs/wandb") -> str:
    """Log each non-empty table of ``tables``, and the ``runs`` table of ``records``, to a new run of
    ``project``; returns the run's id. Offline when wandb has no key (:func:`wandb_login`)."""
    import wandb

    login = wandb_login()
    if login.forced_offline:
        print(offline_note(login), file=sys.stderr)
    os.makedirs(save_dir, exist_ok=True)
    run = wandb.init(project=project, name="results", job_type="compare", dir=save_dir, mode=login.mode,
                     config={"command": " ".join(command)}, tags=["results-page"])
    try:
        # a record without an entity was synced to wandb's default one: this run's, when online
        entity = login.entity or (None if login.mode != "online" else getattr(run, "entity", None) or None)
        tables = {**tables, "runs": run_rows(records or [], login.app_url, entity)}
        run.log({name: _table(rows) for name, rows in tables.items() if rows})
        return run.id
    finally:
        run.finish()
