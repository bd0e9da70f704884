"""Run records: one ``results.json`` per run, so runs can be compared without any W&B account.

The record holds its ``status`` (``completed``, or ``interrupted``/``failed`` with the ``error``), the model,
data and encoder names, the seed, the resolved config and its hash, the best validation score, test metrics,
epochs, wall time per epoch, hardware and package versions, and the checkpoint path. It is rewritten
atomically after fit, after test and when a run is interrupted or fails.

``epochs`` counts complete epochs only (a last epoch cut by a time or step limit is not counted; ``protocol``
has its fraction, rounded down).

Structured fields that ``ner-zoo compare`` reads (instead of parsing the command line): ``git`` (commit, dirty
flag and, when dirty, ``diff_sha256`` of the uncommitted changes of the checkout the code ran from), ``variant``, ``config_files`` (the ``--config`` files as given)
and ``overlays`` (those under an ``experiments/`` folder: recipe overlays), ``data_split`` (the data module's
split name), ``protocol`` (epochs and steps actually trained, the limits, early stopping, what stopped the
run) and ``partial_test`` (true when the test split was not evaluated in full). ``test_sentences`` holds the
exact-match ``tp,fp,fn`` of every test sentence, in split order (:func:`encode_sentence_counts`), for the
paired bootstrap over test sentences; span tasks only, and only when the whole split was evaluated.

Each run writes into its own folder (:meth:`RunRecorder.run_dir`), whatever the logger list is: the folder a
file logger versions per run (``CSVLogger``: ``<save_dir>/<name>/version_N``), else a new
``<log_dir>/<Model>[-<variant>]-<Data>/<timestamp>[-<W&B run id>]`` (a W&B logger's ``save_dir`` is shared by
every run). ``config.yaml`` goes beside the record. When W&B logs the run, the record's scalar fields also go to
its summary (``record/<field>``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import subprocess
import time
import warnings
from collections import deque
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback, EarlyStopping
from lightning.pytorch.utilities.exceptions import SIGTERMException

from ner_zoo.dotted import short_name
from ner_zoo.io import atomic_write
from ner_zoo.results.fields import (
    RUN_SPECIFIC,
    config_hash,
    decode_sentence_counts,
    encode_sentence_counts,
    floor_epochs,
    sentence_counts,
)
from ner_zoo.results.history import PAUSE_SECONDS

PACKAGES = ("ner-zoo", "torch", "lightning", "torchmetrics", "transformers", "wandb")


def hardware() -> dict:
    info = {"cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "python": platform.python_version()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_count"] = torch.cuda.device_count()
    return info


def node_hardware(trainer: pl.Trainer) -> list[dict]:
    """:func:`hardware` of every node (one entry per ``node_rank``); a collective under DDP: every rank calls it."""
    mine = {"node_rank": trainer.node_rank, "host": platform.node(), **hardware()}
    everyone = [mine]
    if torch.distributed.is_available() and torch.distributed.is_initialized() \
            and torch.distributed.get_world_size() > 1:
        everyone = [None] * torch.distributed.get_world_size()
        torch.distributed.all_gather_object(everyone, mine)
    return list({h["node_rank"]: h for h in everyone}.values())


def versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_state(root: Path = Path(__file__).resolve().parents[2]) -> dict | None:
    """``{"commit", "dirty"}`` of the source checkout this package runs from, or None (an installed copy, no
    git). A tree with uncommitted changes, or files git does not ignore that are not committed, is dirty, and
    ``diff_sha256`` then hashes those changes (:func:`diff_hash`), so two runs from one commit can be told apart
    by the code they ran. ``root`` must be the project root (``pyproject.toml``), so a copy inside some other
    repository's virtual environment never reports that repository's commit."""
    if not (root / "pyproject.toml").exists():
        return None
    try:
        state = {"commit": _git(root, "rev-parse", "HEAD").decode().strip(),
                 "dirty": bool(_git(root, "status", "--porcelain").strip())}
        if state["dirty"]:
            state["diff_sha256"] = diff_hash(root)
        return state
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True, timeout=20).stdout


def diff_hash(root: Path) -> str:
    """sha256 of the checkout's uncommitted changes: ``git diff HEAD --binary`` (staged and unstaged), then the
    path and bytes of every untracked, not ignored file, in path order."""
    h = hashlib.sha256(_git(root, "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff"))
    for name in sorted(_git(root, "ls-files", "--others", "--exclude-standard", "-z").split(b"\0")):
        if name:
            h.update(b"\0" + name + b"\0")
            path = root / os.fsdecode(name)
            h.update(path.read_bytes() if path.is_file() else b"")
    return h.hexdigest()


def complete_epochs(current_epoch: int, fractions: list[float]) -> int:
    """Complete epochs trained: Lightning's ``current_epoch`` counts an epoch cut by ``max_time`` or
    ``max_steps`` as done, so a last partial epoch (its trained fraction below 1) is taken off."""
    return current_epoch - (1 if fractions and fractions[-1] < 1.0 and current_epoch > 0 else 0)


def overlay_names(config_files: list[str]) -> list[str]:
    """Recipe overlays among the ``--config`` files: those in an ``experiments`` folder, by stem."""
    return [Path(f).stem for f in config_files if Path(f).parent.name == "experiments"]


def partial_test(trainer: pl.Trainer) -> bool:
    """True when the test split was not evaluated in full (batch limits, fast_dev_run, truncated corpus)."""
    if trainer.fast_dev_run or trainer.overfit_batches:
        return True
    limit = trainer.limit_test_batches
    if isinstance(limit, float) and limit < 1.0:
        return True
    if isinstance(limit, int):
        loaders = trainer.test_dataloaders
        loaders = loaders if isinstance(loaders, (list, tuple)) else [loaders]
        try:
            if limit < sum(len(dl) for dl in loaders if dl is not None):
                return True
        except TypeError:  # iterable without a length: cannot tell, so not full
            return True
    return getattr(trainer.datamodule, "max_sentences", None) is not None


def _short(class_path: str | None) -> str | None:
    return None if class_path is None else short_name(class_path)


def encoder_name(init: dict) -> str | None:
    """``"<transformer> + <word vectors>"`` from a model's ``init_args``, in the config vocabulary
    (``docs/configs.md``): ``encoder`` is an injected ``TransformerEncoder`` (class_path/init_args with its
    ``model``), ``words`` the word table (its ``vectors``)."""
    encoder, words = init.get("encoder"), init.get("words")
    names = [(encoder.get("init_args") or {}).get("model") if isinstance(encoder, dict) else None,
             words.get("vectors") if isinstance(words, dict) else None]
    return " + ".join(n for n in names if isinstance(n, str)) or None


_SCALAR = (str, int, float, bool)


def wandb_summary(record: dict) -> dict:
    """The record's scalar fields as ``record/<field>``; a mapping of scalars (``protocol``, ``git``) as
    ``record/<field>/<key>``, a list of strings (``overlays``) joined with ``+``. The config and test scores
    are logged elsewhere."""
    out = {}
    for key, value in record.items():
        if key in ("command", "config", "test", "test_sentences"):
            continue
        if isinstance(value, _SCALAR):
            out[f"record/{key}"] = value
        elif isinstance(value, dict):
            out.update({f"record/{key}/{k}": v for k, v in value.items() if isinstance(v, _SCALAR)})
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[f"record/{key}"] = "+".join(value)
    return out


def _wandb_loggers(trainer: pl.Trainer) -> list:
    return [lg for lg in trainer.loggers if type(lg).__name__ == "WandbLogger"]


def _wandb_run(trainer: pl.Trainer) -> dict | None:
    """``{id, project, entity, url}`` of the W&B run (rank 0; url None offline), for ``compare --wandb`` links."""
    loggers = _wandb_loggers(trainer)
    if not loggers or not trainer.is_global_zero:
        return None
    run = loggers[0].experiment
    url = None if getattr(run, "offline", False) else getattr(run, "url", None)
    return {"id": run.id, "project": run.project, "entity": getattr(run, "entity", None) or None, "url": url}


class RunRecorder(Callback):
    """Write ``results.json`` for each run.

    Args:
        path: output file; default ``<run_dir>/results.json`` (:meth:`run_dir`, one folder per run).
        enabled: switch the record off.
    """

    def __init__(self, path: str | None = None, enabled: bool = True):
        self.path, self.enabled = path, enabled
        self.config: dict = {}
        self.config_files: list[str] = []
        self.command: str | None = None  # the command line, set by the CLI (None when built from a dict)
        self.precision_reason: str | None = None  # why the trainer's precision (ner_zoo.run.precision), by the CLI
        self.epoch_times: list[float] = []
        self.fractions: dict[int, float] = {}  # epoch -> share of its batches trained (over every segment)
        self.segments: list[dict] = []  # one per process that trained this run (a resume adds one)
        self.best_val: dict[str, float] = {}  # every val/* value of the best epoch
        self.record: dict = {}
        self._t0: float | None = None  # when this process started timing the current epoch
        self._carried = 0.0  # seconds an earlier process trained the current epoch (resumed mid-epoch)
        self._run_dir: Path | None = None
        self._best: tuple[float, int] | None = None  # (best val/f1, its epoch), kept across a resume
        self._trainer: pl.Trainer | None = None
        self._digests: dict[tuple, str] = {}  # (path, size, mtime) -> sha256
        self._sentences: dict[int, tuple[int, int, int]] = {}  # test sentence index -> (tp, fp, fn)
        self.pauses: list[dict] = []  # stretches between two steps in which the process did not run
        self._tick: tuple[float, float] | None = None  # (wall clock, CPU time) at the last step's start
        self._intervals: deque[float] = deque(maxlen=50)  # wall-clock seconds between the last steps' starts

    @property
    def epoch_fractions(self) -> list[float]:
        return [self.fractions[e] for e in sorted(self.fractions)]

    @epoch_fractions.setter
    def epoch_fractions(self, values: list[float]) -> None:
        self.fractions = dict(enumerate(values))

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._trainer = trainer

    def state_dict(self) -> dict:
        """Saved in every checkpoint, so that a resumed run's record counts the epochs, best epoch and
        segments of the processes before it (an interrupted epoch counts its trained share)."""
        fractions = dict(self.fractions)
        trainer = self._trainer
        if trainer is not None and trainer.state.fn == "fit":
            epoch = trainer.current_epoch
            if epoch not in fractions and self._fraction(trainer) > 0:
                fractions[epoch] = self._fraction(trainer)
        mid_epoch = (trainer is not None and trainer.state.fn == "fit" and self._t0 is not None
                     and 0 < self._fraction(trainer) < 1)
        return {"fractions": fractions, "epoch_times": list(self.epoch_times), "best": self._best,
                "best_val": dict(self.best_val), "segments": [dict(s) for s in self.segments],
                "pauses": [dict(p) for p in self.pauses], "epoch_elapsed": self._elapsed() if mid_epoch else 0.0}

    def load_state_dict(self, state: dict) -> None:
        self.fractions = {int(k): float(v) for k, v in (state.get("fractions") or {}).items()}
        self.epoch_times = list(state.get("epoch_times") or [])
        self._best = tuple(state["best"]) if state.get("best") else None
        self.best_val = dict(state.get("best_val") or {})
        self.segments = [dict(s) for s in state.get("segments") or []]
        self.pauses = [dict(p) for p in state.get("pauses") or []]
        self._carried, self._t0 = float(state.get("epoch_elapsed") or 0.0), None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for seg in self.segments:  # an earlier process stopped after the checkpoint it saved: resumed from there
            if "end_step" not in seg:
                seg.update(end_step=trainer.global_step, status="stopped")
        from ner_zoo.run.folder import slurm_ids

        slurm = slurm_ids()  # job, array job and task
        git = git_state() if trainer.is_global_zero else None
        matrix = os.environ.get("NER_ZOO_MATRIX")  # set by tools/run_matrix.py: "<path> <sha256>"
        self.segments.append({"start_step": trainer.global_step, "start_epoch": trainer.current_epoch,
                              "resumed_from": trainer.ckpt_path, "host": platform.node(),
                              "started": datetime.now().isoformat(timespec="seconds"),
                              **({"commit": git["commit"], "dirty": git["dirty"]} if git else {}),
                              **({"matrix": dict(zip(("path", "sha256"), matrix.rsplit(" ", 1)))} if matrix else {}),
                              **({**slurm, "slurm_restart": int(os.environ.get("SLURM_RESTART_COUNT", 0))}
                                 if slurm else {})})

    def _fraction(self, trainer: pl.Trainer) -> float:
        total, done = trainer.num_training_batches, trainer.fit_loop.epoch_loop.batch_progress.current.ready
        return min(1.0, done / total) if total and total != float("inf") else 1.0

    def _elapsed(self) -> float:
        return self._carried + (time.perf_counter() - self._t0 if self._t0 is not None else 0.0)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._t0 is None and self._carried:  # resumed mid-epoch: the earlier process's share counts
            self._t0 = time.perf_counter()
            return
        self._t0, self._carried = time.perf_counter(), 0.0

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args) -> None:
        if self._t0 is None:  # a mid-epoch resume calls no on_train_epoch_start
            self._t0 = time.perf_counter()
        self._check_pause(trainer.global_step)

    def _check_pause(self, step: int) -> None:
        """A pause: the wall clock between two steps' starts exceeds the process's CPU time by over
        ``PAUSE_SECONDS`` and the stretch is 10x the recent ones (``SIGSTOP``, a suspended machine: contention
        slows every step, never one by a minute; validation keeps the CPU busy)."""
        now = (time.perf_counter(), time.process_time())
        if self._tick is not None:
            wall, cpu = now[0] - self._tick[0], now[1] - self._tick[1]
            usual = statistics.median(self._intervals) if self._intervals else 0.0
            if wall - cpu > PAUSE_SECONDS and wall > 10 * usual:
                self.pauses.append({"step": step, "seconds": round(wall - cpu, 1),
                                    "until": datetime.now().isoformat(timespec="seconds")})
            else:
                self._intervals.append(wall)
        self._tick = now

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.epoch_times.append(self._elapsed())
        self._t0, self._carried = None, 0.0
        self.fractions[trainer.current_epoch] = self._fraction(trainer)

    def protocol(self, trainer: pl.Trainer) -> dict:
        """What the run trained: complete epochs, the fraction of a last partial one, steps, and why it stopped."""
        completed = sum(f >= 1.0 for f in self.epoch_fractions)
        stops = [cb for cb in trainer.callbacks if isinstance(cb, EarlyStopping)]
        max_time = (self.config.get("trainer") or {}).get("max_time")
        if any(cb.stopped_epoch > 0 for cb in stops):
            stopped_by = "early_stopping"
        elif trainer.max_steps not in (None, -1) and trainer.global_step >= trainer.max_steps:
            stopped_by = "max_steps"
        elif trainer.max_epochs is not None and completed >= trainer.max_epochs:
            stopped_by = "max_epochs"
        else:
            stopped_by = "max_time" if max_time else "interrupted"
        return {"epochs_completed": completed, "epochs": floor_epochs(sum(self.epoch_fractions)),
                "steps": trainer.global_step, "max_epochs": trainer.max_epochs, "max_steps": trainer.max_steps,
                "max_time": max_time, "limit_train_batches": trainer.limit_train_batches,
                "early_stopping": bool(stops), "stopped_by": stopped_by}

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        score = trainer.callback_metrics.get("val/f1")
        if score is not None and not trainer.sanity_checking and (self._best is None or float(score) > self._best[0]):
            self._best = (float(score), trainer.current_epoch)
            self.best_val = {k.removeprefix("val/"): float(v) for k, v in trainer.callback_metrics.items()
                             if k.startswith("val/") and getattr(v, "numel", lambda: 1)() == 1}

    def _best_epoch(self, best: float | None) -> int | None:
        """The epoch of the best checkpoint (kept in checkpoints across a resume; None when not seen)."""
        if self._best is None or best is None or abs(self._best[0] - best) > 1e-6:
            return None
        return self._best[1]

    def run_dir(self, trainer: pl.Trainer) -> Path:
        """This run's folder (chosen once; a collective under DDP, rank 0 chooses): the record path's folder,
        the folder the first logger versions per run, or a new ``<Model>[-<variant>]-<Data>/<time>[-<id>]``."""
        if self._run_dir is None:
            log_dir = trainer.log_dir or trainer.default_root_dir  # a collective under DDP
            # Lightning's log_dir is per run only for these loggers (save_dir/name/version_N), else shared
            first = type(trainer.loggers[0]).__name__ if trainer.loggers else None
            versioned = first in ("CSVLogger", "TensorBoardLogger")
            folder = str(Path(self.path).parent) if self.path else log_dir
            if not self.path and not versioned and trainer.is_global_zero:
                folder = self._new_run_dir(trainer, Path(log_dir))
            self._run_dir = Path(trainer.strategy.broadcast(folder))
        return self._run_dir

    def _new_run_dir(self, trainer: pl.Trainer, root: Path) -> str:
        model = _short((self.config.get("model") or {}).get("class_path")) or type(trainer.lightning_module).__name__
        from ner_zoo.run.folder import data_name, folder_part

        data_cfg = self.config.get("data") or {}
        data = folder_part(data_name(data_cfg)) if data_cfg.get("class_path") else "data"
        variant = self.config.get("variant")
        stem = datetime.now().strftime("%Y%m%d-%H%M%S")
        run_ids = [str(lg.experiment.id) for lg in _wandb_loggers(trainer)]
        stem += "".join(f"-{i}" for i in run_ids[:1])
        parent = root / "-".join(x for x in (model, variant, data) if x)
        from ner_zoo.run.folder import claim_folder

        return str(claim_folder(parent, stem))  # never a folder another process made

    def _target(self, trainer: pl.Trainer) -> Path:
        return Path(self.path) if self.path else self.run_dir(trainer) / "results.json"

    def _base(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict:
        from ner_zoo.run.folder import data_name

        model_cfg, data_cfg = self.config.get("model", {}), self.config.get("data", {})
        init = model_cfg.get("init_args", {}) if isinstance(model_cfg, dict) else {}
        dm = trainer.datamodule
        return {
            "model": _short(model_cfg.get("class_path")) or type(pl_module).__name__,
            "data": (data_name(data_cfg) if data_cfg.get("class_path") else None)  # an HF dataset: its source
                    or (type(dm).__name__ if dm is not None else None),
            "encoder": encoder_name(init),
            "seed": self.config.get("seed_everything"),
            "variant": self.config.get("variant"),
            "config_files": self.config_files, "overlays": overlay_names(self.config_files),
            "data_split": getattr(dm, "split_name", None),
            "git": git_state(),
            "command": self.command,
            "config_hash": config_hash(self.config) if self.config else None,
            "config": self.config,
            "precision": str(trainer.precision), "precision_reason": self.precision_reason,
            "devices": trainer.num_devices, "nodes": trainer.num_nodes,
            "hardware": hardware(), "node_hardware": node_hardware(trainer), "versions": versions(),
            "data_notes": dict(getattr(dm, "notes", None) or {}),  # e.g. long training sentences split
            "features_used": list(getattr(pl_module, "features_used", [])),  # data columns the model read
        }

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._fit_record(trainer, pl_module, "completed")
        self._write(trainer)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """An interrupted (Ctrl-C, SIGTERM) or failed run still leaves a record, saying so."""
        interrupted = isinstance(exception, (KeyboardInterrupt, SIGTERMException))
        if trainer.state.fn == "fit":
            self._fit_record(trainer, pl_module, "interrupted" if interrupted else "failed")
        else:
            self.record.update(self._base(trainer, pl_module))
            self.record["status"] = "interrupted" if interrupted else "failed"
        self.record["error"] = f"{type(exception).__name__}: {exception}"[:500]
        try:
            self._write(trainer)
        except Exception as e:  # never hide the original exception
            warnings.warn(f"could not write the run record of the interrupted run: {e}", stacklevel=1)

    def _fit_record(self, trainer: pl.Trainer, pl_module: pl.LightningModule, status: str) -> None:
        ckpt = trainer.checkpoint_callback
        best = None if ckpt is None or ckpt.best_model_score is None else float(ckpt.best_model_score)
        self.record.update(self._base(trainer, pl_module))
        path = getattr(ckpt, "best_model_path", None) or None
        if self.segments and trainer.state.fn == "fit":
            self.segments[-1].update(end_step=trainer.global_step, end_epoch=trainer.current_epoch, status=status)
        self.record.update({"status": status, "epochs": complete_epochs(trainer.current_epoch, self.epoch_fractions),
                            "best_val_f1": best,
                            "best_epoch": self._best_epoch(best),
                            "best_checkpoint": path, "best_checkpoint_sha256": self._sha256(path),
                            "best_val": dict(self.best_val) if self._best_epoch(best) is not None else None,
                            "segments": [dict(s) for s in self.segments],
                            "pauses": [dict(p) for p in self.pauses],
                            "wandb": _wandb_run(trainer),
                            "epoch_seconds": [round(t, 2) for t in self.epoch_times],
                            "fit_seconds": round(sum(self.epoch_times), 2),
                            "protocol": self.protocol(trainer)})

    def _sha256(self, path: str | None) -> str | None:
        """sha256 of the checkpoint file (rank 0; cached while the file is unchanged)."""
        if not path or not Path(path).is_file() or (self._trainer is not None and not self._trainer.is_global_zero):
            return None
        from ner_zoo.run.folder import file_sha256

        st = Path(path).stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._digests:
            self._digests[key] = file_sha256(path)
        return self._digests[key]

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._sentences = {}

    def on_test_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        if dataloader_idx or not isinstance(outputs, list) or getattr(pl_module, "is_pos", True):
            return  # per-sentence counts of the first test set's spans (POS: none)
        for i, pred, sentence in zip(batch.indices.tolist(), outputs, batch.sentences):
            self._sentences[i] = sentence_counts(pred, sentence.spans or [])

    def _test_sentences(self) -> dict | None:
        """Every test sentence's counts in split order (all processes' sentences; a collective under DDP), or
        None when some sentence is missing."""
        counts = self._sentences
        if torch.distributed.is_available() and torch.distributed.is_initialized() \
                and torch.distributed.get_world_size() > 1:
            parts = [None] * torch.distributed.get_world_size()
            torch.distributed.all_gather_object(parts, counts)
            counts = {i: c for part in parts for i, c in part.items()}  # padded duplicates agree
        if not counts or sorted(counts) != list(range(len(counts))):
            return None
        return {"format": "tp,fp,fn per sentence in split order; empty: 0,0,0",
                "counts": encode_sentence_counts([counts[i] for i in range(len(counts))])}

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not self.record:
            self.record.update(self._base(trainer, pl_module))
        self.record.setdefault("status", "completed")
        self.record["test"] = {k.removeprefix("test/"): float(v) for k, v in trainer.callback_metrics.items()
                               if k.startswith("test/")}
        self.record["partial_test"] = partial_test(trainer)
        sentences = self._test_sentences()
        self.record.pop("test_sentences", None)  # never an earlier test's counts beside this test's scores
        if sentences is not None and not self.record["partial_test"]:
            self.record["test_sentences"] = sentences
        self._write(trainer)

    def _write(self, trainer: pl.Trainer) -> None:
        if not self.enabled or (not self.path and self._run_dir is None and trainer.state.fn != "fit"):
            return  # validate/test on their own: a record only where --record.path names it
        target = self._target(trainer)  # trainer.log_dir is a collective under DDP: every rank calls it
        if not trainer.is_global_zero:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(target, overwrite=True) as f:  # rewritten as the run goes
            json.dump(self.record, f, indent=1, default=str)
        wandb = _wandb_loggers(trainer)
        if wandb:  # the record's fields in the W&B run summary
            summary = {**wandb_summary(self.record), "record/path": str(target)}
            # every val/* value of the best epoch (W&B's own summary keeps each key's last value)
            summary.update({f"val/{k}": v for k, v in (self.record.get("best_val") or {}).items()})
            for logger in wandb:
                logger.experiment.summary.update(summary)
