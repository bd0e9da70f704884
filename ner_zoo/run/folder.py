"""One folder per ``fit``: checkpoints, record, logs and W&B files of one training run, never shared.

Where a run goes (:func:`prepare_fit`, called by the CLI before anything is built):

* ``checkpoint.dirpath`` not given (the default): a **managed run folder**
  ``<trainer.default_root_dir>/<Model>[-<variant>]-<Data>/<time>[-<W&B id>]/`` holding ``checkpoints/``,
  ``results.json``, ``config.yaml``, ``csv/`` (a resumed segment: ``csv/resume-step<N>/``), ``wandb/``,
  Lightning's ``hpc_ckpt_<n>.ckpt`` (SLURM's SIGUSR1) and ``run.json`` (the config hash, seed and W&B run id).
  ``NER_ZOO_RUN_DIR`` names the folder instead (``tools/slurm/fit.sbatch`` derives it from the job id, so a
  requeued job finds it again); every process of one launch must see the same folder, so a process that is
  not rank 0 without ``NER_ZOO_RUN_DIR`` takes it from ``TORCHELASTIC_RUN_ID`` or ``SLURM_JOB_ID``. A fit
  refused before it wrote anything there leaves no folder (:func:`discard_unstarted`).
* ``checkpoint.dirpath`` given (``tools/run_matrix.py``, tests): those paths, as given; a folder that
  already holds checkpoints is refused with one line unless the run resumes from it.

``--ckpt_path last`` resumes the newest state: in the run folder named by ``NER_ZOO_RUN_DIR`` or by
``--ckpt_path <run folder>``, else in the latest run folder of the same config (hash) and seed, the
checkpoint with the highest global step among ``checkpoints/*.ckpt`` and ``hpc_ckpt_*.ckpt`` (whichever wrote
it: an epoch end, SIGTERM, SIGUSR1).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import string
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

import torch

from ner_zoo.dotted import short_name
from ner_zoo.errors import CheckpointError, ConfigError
from ner_zoo.io import atomic_write

RUN_DIR_ENV = "NER_ZOO_RUN_DIR"
MARKER = "run.json"
#: run folders this process made, with the root they were made under (:func:`discard_unstarted`)
MADE: list[tuple[Path, Path]] = []


@dataclass
class FitRun:
    """What :func:`prepare_fit` decided for one ``fit``."""

    run_dir: Path
    managed: bool  # the folder layout is ours (no checkpoint.dirpath given)
    ckpt_path: str | None  # resolved resume checkpoint, or None (fresh start)
    resumed_step: int | None = None
    wandb_id: str | None = None
    notes: list[str] = field(default_factory=list)


def process_rank() -> int:
    """This process's global rank from the launcher's variables (0 when launched alone), before any process
    group exists."""
    for key in ("RANK", "SLURM_PROCID", "LOCAL_RANK"):
        if os.environ.get(key) not in (None, ""):
            return int(os.environ[key])
    return 0


def checkpoint_step(path: Path) -> int | None:
    """The global step stored in a Lightning checkpoint (None: unreadable)."""
    try:
        ckpt = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception:  # noqa: BLE001 - any unreadable file is simply not a candidate
        return None
    step = ckpt.get("global_step") if isinstance(ckpt, dict) else None
    return int(step) if step is not None else None


def candidates(run_dir: Path, ckpt_dir: Path | None = None) -> list[Path]:
    """Checkpoints a run can resume from: ``<ckpt_dir>/*.ckpt`` and Lightning's ``<run_dir>/hpc_ckpt_*.ckpt``."""
    ckpt_dir = ckpt_dir or run_dir / "checkpoints"
    found = list(ckpt_dir.glob("*.ckpt")) if ckpt_dir.is_dir() else []
    return found + sorted(run_dir.glob("hpc_ckpt_*.ckpt"))


def newest_checkpoint(paths: list[Path]) -> tuple[Path, int] | None:
    """The checkpoint with the highest global step (ties: the most recently written), with its step."""
    best = None
    for p in paths:
        step = checkpoint_step(p)
        if step is None:
            continue
        key = (step, p.stat().st_mtime)
        if best is None or key > best[0]:
            best = (key, p)
    return None if best is None else (best[1], best[0][0])


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _short(class_path: str | None) -> str:
    return short_name(class_path or "unknown")


def data_name(data: dict | None) -> str:
    """The corpus's name in run records, run folders and ``compare``: the data module's class name, except for
    an ``HFCorpus`` (any Hugging Face dataset), which is named by its source: the hub id (``tner/wnut2017``, with
    ``:<name>`` for a configuration), the folder or file's name, or the data files' folder (``data_dir``, else the
    train file's folder), so that runs on two datasets are never grouped as one."""
    data = data or {}
    cls = _short(data.get("class_path"))
    if cls != "HFCorpus":
        return cls
    init = data.get("init_args") or {}
    source, files, root = init.get("source"), init.get("data_files") or {}, init.get("data_dir")
    if source:
        local = Path(root, source) if root and Path(root, source).exists() else Path(str(source))
        name = (local.resolve().stem if local.is_file() else local.resolve().name) if local.exists() else str(source)
        return f"{name}:{init['name']}" if init.get("name") else name
    if files:
        if root:
            return Path(root).resolve().name
        first = Path(str(files.get("train") or next(iter(files.values()))))
        return first.resolve().parent.name
    return Path(root or ".").resolve().name


def folder_part(name: str) -> str:
    """``name`` as one path component (a hub id's ``/`` as ``--``, as the Hugging Face cache writes it)."""
    return name.replace("/", "--").replace("\\", "--").replace(":", "-")


def run_label(config: dict) -> str:
    """``<Model>[-<variant>]-<Data>``: the folder holding every run of one model on one corpus."""
    model = _short((config.get("model") or {}).get("class_path"))
    data = folder_part(data_name(config.get("data")))
    return "-".join(x for x in (model, config.get("variant"), data) if x)


def new_wandb_id() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


def derived_wandb_id(run_dir: Path) -> str:
    """An id every process of one launch computes alike: from the SLURM job (and array task), the cluster and
    the folder, or from the folder alone."""
    parts = [os.environ.get(k, "") for k in ("SLURM_CLUSTER_NAME", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
                                             "SLURM_JOB_ID")]
    return hashlib.sha1("|".join([*parts, str(run_dir.resolve())]).encode()).hexdigest()[:8]


def read_marker(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / MARKER).read_text())
    except (OSError, ValueError):
        return {}


def write_marker(run_dir: Path, data: dict) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    with atomic_write(run_dir / MARKER, overwrite=True) as f:  # updated by each segment
        json.dump(data, f, indent=1)


#: trainer keys a resumed run may change (train longer): left out of the key that finds "the same config"
LIMITS = ("max_epochs", "max_steps", "max_time", "min_epochs", "min_steps")


def without_limits(config: dict) -> dict:
    """The config without the trainer's stopping limits: ``--ckpt_path last`` finds runs by its hash."""
    trainer = {k: v for k, v in (config.get("trainer") or {}).items() if k not in LIMITS}
    return {**config, "trainer": trainer}


def latest_run_of(root: Path, label: str, key: str, seed) -> Path | None:
    """The newest run folder under ``root/label`` whose ``run.json`` has this resume key and seed and which
    holds a checkpoint (a run that failed before its first one is passed over)."""
    found = []
    for marker in (root / label).glob(f"*/{MARKER}"):
        data = read_marker(marker.parent)
        if data.get("resume_key") == key and data.get("seed") == seed and candidates(marker.parent):
            found.append((data.get("created", 0), marker.parent))
    return max(found)[1] if found else None


def _shared_version() -> str | None:
    """The run folder name every process of a multi-process launch derives alike (None: launched alone)."""
    if os.environ.get("TORCHELASTIC_RUN_ID") not in (None, "", "none"):
        return f"torchrun-{os.environ['TORCHELASTIC_RUN_ID']}"
    job = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID")
    if job and int(os.environ.get("SLURM_NTASKS", "1")) > 1:
        task = os.environ.get("SLURM_ARRAY_TASK_ID")
        return f"slurm-{job}" + (f"_{task}" if task else "")
    return None


def claim_run_dir(root: Path, label: str, wandb_id: str | None) -> Path:
    """A new run folder ``root/label/<time>[-<W&B id>][-<n>]``, made here: ``mkdir`` without ``exist_ok`` claims
    the name (two processes starting in the same second never share one), the next suffix on a collision."""
    stem = datetime.now().strftime("%Y%m%d-%H%M%S") + (f"-{wandb_id}" if wandb_id else "")
    return claim_folder(root / label, stem)


def claim_folder(parent: Path, stem: str) -> Path:
    """``parent/stem``, else ``parent/stem-2``, ``-3`` ...: the first name this process creates itself."""
    parent.mkdir(parents=True, exist_ok=True)
    folder, n = parent / stem, 1
    while True:
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            n += 1
            folder = parent / f"{stem}-{n}"


def slurm_ids() -> dict:
    """The SLURM job, array job and array task of this process (only those set)."""
    keys = {"slurm_job": "SLURM_JOB_ID", "slurm_array_job": "SLURM_ARRAY_JOB_ID",
            "slurm_array_task": "SLURM_ARRAY_TASK_ID"}
    return {k: os.environ[v] for k, v in keys.items() if os.environ.get(v)}


def prepare_fit(config: dict, config_hash: Callable[[dict], str], has_wandb: bool) -> FitRun:
    """Choose this fit's run folder and resume checkpoint from the resolved config (a plain dict);
    ``config_hash`` is the records' recipe hash (:func:`ner_zoo.run.recorder.config_hash`)."""
    recipe, key = config_hash(config), config_hash(without_limits(config))
    trainer = config.get("trainer") or {}
    ckpt_cfg = config.get("checkpoint") or {}
    root = Path(trainer.get("default_root_dir") or "runs")
    given = config.get("ckpt_path")
    env_dir = os.environ.get(RUN_DIR_ENV)
    seed = config.get("seed_everything")

    if ckpt_cfg.get("dirpath"):  # the user's paths: refuse to mix two runs' checkpoints in one folder
        ckpt_dir = Path(ckpt_cfg["dirpath"])
        record = (config.get("record") or {}).get("path")
        run_dir = Path(env_dir) if env_dir else Path(record).parent if record else ckpt_dir.parent
        hpc_dir = Path(trainer.get("default_root_dir") or run_dir)
        ckpt, step = _resolve(given, run_dir, ckpt_dir, explicit_dir=True, hpc_dir=hpc_dir)
        held = sorted(p.name for p in ckpt_dir.glob("*.ckpt")) if ckpt_dir.is_dir() else []
        resuming_here = ckpt is not None and Path(ckpt).resolve().parent in (ckpt_dir.resolve(), hpc_dir.resolve())
        if held and not resuming_here and process_rank() == 0:
            raise ConfigError(f"{ckpt_dir}: already holds checkpoints of another run ({', '.join(held[:3])}); "
                              "give a new --checkpoint.dirpath, leave it unset (one run folder per fit), or "
                              "resume that run with --ckpt_path last")
        return FitRun(run_dir, False, ckpt, step, _wandb_id(run_dir, has_wandb))

    label, asked = run_label(config), "last"
    if env_dir:
        run_dir = Path(env_dir)
    elif given not in (None, "last") and Path(given).is_dir():
        run_dir = Path(given)  # --ckpt_path <run folder>: resume that run
        asked, given = given, "last"
    elif given == "last":
        run_dir = latest_run_of(root, label, key, seed)
        if run_dir is None:
            raise CheckpointError(f"--ckpt_path last: no earlier run of this config (seed {seed}) "
                                  f"under {root / label}; name a run folder or a checkpoint instead")
    elif _shared_version():
        run_dir = root / label / _shared_version()
    elif process_rank() != 0:
        raise ConfigError(f"process of rank {process_rank()} has no shared run folder: set {RUN_DIR_ENV} (or "
                          "torchrun's --rdzv_id) so that every process of the launch writes to the same one")
    else:
        wandb_id = _wandb_id(None, has_wandb)
        run_dir = claim_run_dir(root, label, wandb_id)
        MADE.append((run_dir, root))
        write_marker(run_dir, {"config_hash": recipe, "resume_key": key, "seed": seed,
                               "created": time.time(), "wandb_id": wandb_id, **slurm_ids()})
    ckpt, step = _resolve(given, run_dir, run_dir / "checkpoints", explicit_dir=bool(env_dir), hpc_dir=run_dir,
                          asked=asked)
    if ckpt is None and given is None and candidates(run_dir) and process_rank() == 0:
        raise ConfigError(f"{run_dir}: already holds checkpoints of another run; resume it with --ckpt_path last "
                          f"or unset {RUN_DIR_ENV}")
    marker = read_marker(run_dir)
    if not marker and process_rank() == 0:
        marker = {"config_hash": recipe, "resume_key": key, "seed": seed, "created": time.time(),
                  "wandb_id": _wandb_id(run_dir, has_wandb), **slurm_ids()}
        write_marker(run_dir, marker)
    wandb_id = marker.get("wandb_id") or _wandb_id(run_dir, has_wandb)
    return FitRun(run_dir, True, ckpt, step, wandb_id)


def discard_unstarted() -> None:
    """Remove the run folders this process made that hold nothing but ``run.json``: a fit refused after its
    folder was chosen (a missing data file, a setting a class refuses) leaves no empty run behind for
    ``--ckpt_path last`` to pick; emptied label folders go too, never the root."""
    while MADE:
        run_dir, root = MADE.pop()
        try:
            if [p.name for p in run_dir.iterdir()] != [MARKER]:
                continue
            (run_dir / MARKER).unlink()
            folder = run_dir
            while folder != root and root in folder.parents and not any(folder.iterdir()):
                folder.rmdir()
                folder = folder.parent
        except OSError:  # removed or filled by someone else meanwhile: leave it
            continue


def _wandb_id(run_dir: Path | None, has_wandb: bool) -> str | None:
    """The W&B run id of a training run: kept in ``run.json``, else ``WANDB_RUN_ID`` (a sweep agent's), else
    derived (SLURM) or new."""
    if not has_wandb:
        return None
    if run_dir is not None and read_marker(run_dir).get("wandb_id"):
        return read_marker(run_dir)["wandb_id"]
    if os.environ.get("WANDB_RUN_ID"):
        return os.environ["WANDB_RUN_ID"]
    return derived_wandb_id(run_dir) if run_dir is not None else new_wandb_id()


def _resolve(given: str | None, run_dir: Path, ckpt_dir: Path, explicit_dir: bool,
             hpc_dir: Path, asked: str = "last") -> tuple[str | None, int | None]:
    """``--ckpt_path``: ``last`` -> the newest state in the run folder (none yet: a fresh start when the folder
    was named by the launcher); a file -> itself."""
    if given is None:
        return None, None
    if given != "last":
        return given, None
    paths = {*(ckpt_dir.glob("*.ckpt") if ckpt_dir.is_dir() else []), *hpc_dir.glob("hpc_ckpt_*.ckpt")}
    found = newest_checkpoint(sorted(paths))
    if found is None:
        if explicit_dir or ckpt_dir.parent != run_dir:  # first segment of a launcher's run folder
            return None, None
        raise CheckpointError(f"--ckpt_path {asked}: {run_dir.absolute()} holds no readable checkpoint to resume "
                              "from")
    return str(found[0]), found[1]
