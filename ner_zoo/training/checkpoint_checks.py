"""Checks on a checkpoint file before a model is built from it, and one-line errors from Lightning's own loader:
every checkpoint problem (missing, empty, not a zip archive, corrupted blocks, not a dict, a class that is not a
zoo model, a future format, weights that do not fit the recorded class) is one ``CheckpointError`` naming the
file, whichever command reads it (``predict``, ``test``/``validate --ckpt_path``, ``fit --ckpt_path``).

The integrity digest itself is checked where the weights are loaded (the module's ``on_load_checkpoint``); here
only its absence is reported, naming the file.
"""

from __future__ import annotations

import pickle
import warnings
import zipfile
from pathlib import Path
from typing import Any

import torch

from ner_zoo.checkpoints.integrity import DIGEST_KEY, NO_DIGEST, no_digest_message
from ner_zoo.dotted import resolve, short_name
from ner_zoo.errors import CheckpointError


def read(path: str | Path, weights_only: bool = True) -> dict:
    """The checkpoint dict in ``path`` (tensors memory-mapped, not read), or one line naming the file."""
    p = Path(path)
    if not p.is_file():
        where = "" if p.is_absolute() else f" (looked for {p.resolve()})"
        raise CheckpointError(f"{path}: checkpoint not found{where}" if not p.exists()
                              else f"{path}: not a checkpoint file")
    try:
        if p.stat().st_size == 0:
            raise CheckpointError(f"{path}: empty file, not a checkpoint")
        if not zipfile.is_zipfile(p):  # torch.save writes a zip archive; its end (central directory) is missing
            raise CheckpointError(f"{path}: not a readable checkpoint (not a complete zip archive: truncated, "
                                  "corrupted or not written by torch.save)")
        ckpt = torch.load(p, map_location="cpu", weights_only=weights_only, mmap=True)
    except CheckpointError:
        raise
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"{path} holds pickled objects that safe loading refuses ({str(e)[:300]}); "
                              "if you trust the file, load it with weights_only=False") from None
    except (RuntimeError, EOFError, ValueError, OSError, zipfile.BadZipFile) as e:
        raise CheckpointError(f"{path}: not a readable checkpoint ({reason(e)})") from None
    if not isinstance(ckpt, dict):
        raise CheckpointError(f"{path} was not written by ner-zoo (it holds a {type(ckpt).__name__})")
    from ner_zoo.checkpoints.entries import FORMAT_VERSION

    version = ckpt.get("ner_zoo_format")
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {version!r} is not supported by this ner-zoo (format "
                              f"{FORMAT_VERSION}); use the ner-zoo version that wrote it")
    if not isinstance(ckpt.get("state_dict"), dict):
        raise CheckpointError(f"{path} holds no model weights (no state_dict)")
    if not isinstance(ckpt.get("hyper_parameters", {}), dict):
        raise CheckpointError(f"{path}: its hyper_parameters are not a mapping")
    check_trainer_state(ckpt, path)
    return ckpt


LOOPS = ("fit_loop", "validate_loop", "test_loop", "predict_loop")


def check_trainer_state(ckpt: dict, path: str | Path) -> None:
    """The entries Lightning reads when it restores a run have the types it indexes them with; a checkpoint whose
    ``loops``, ``callbacks``, optimizer states, step counters or digest were damaged is one line naming the entry,
    not a ``TypeError``/``KeyError`` from inside Lightning. Absent entries stay allowed (Lightning skips them)."""

    def bad(key: str, what: str) -> CheckpointError:
        return CheckpointError(f"{path}: its {key!r} entry is damaged ({what}, found {type(ckpt[key]).__name__})")

    for key in ("epoch", "global_step"):
        if key in ckpt and (not isinstance(ckpt[key], int) or isinstance(ckpt[key], bool) or ckpt[key] < 0):
            raise bad(key, "not a count")
    for key in ("optimizer_states", "lr_schedulers"):
        if key in ckpt and not (isinstance(ckpt[key], list) and all(isinstance(x, dict) for x in ckpt[key])):
            raise bad(key, "not a list of state dicts")
    if "callbacks" in ckpt and not isinstance(ckpt["callbacks"], dict):
        raise bad("callbacks", "not a mapping of callback states")
    if "loops" in ckpt and not (isinstance(ckpt["loops"], dict)
                                and all(isinstance(ckpt["loops"].get(k), dict) for k in LOOPS)):
        raise bad("loops", f"not a mapping with the states of {', '.join(LOOPS)}")
    if DIGEST_KEY in ckpt and ckpt[DIGEST_KEY] is not None and not isinstance(ckpt[DIGEST_KEY], str):
        raise bad(DIGEST_KEY, "not a hex digest")


def lightning_name(path: str | Path) -> bool:
    """``--ckpt_path best``/``last``/``hpc``/``registry...``: a name Lightning resolves, not a file."""
    return str(path) in ("best", "last", "hpc") or str(path).startswith("registry")


def class_path(ckpt: dict) -> str | None:
    return ckpt.get("ner_zoo_class") or (ckpt.get("hyper_parameters") or {}).get("_class_path")


def model_class(ckpt: dict, path: str | Path, required: bool = True, network: bool = False) -> type | None:
    """The zoo model class the checkpoint names (``network``: its network, found without making the
    LightningModule, so without importing Lightning); never imports a module outside ner-zoo."""
    name = class_path(ckpt)
    if name is None:
        if required:
            raise CheckpointError(f"{path} was not written by ner-zoo (no model class recorded)")
        return None
    if not isinstance(name, str) or not name.startswith("ner_zoo."):
        raise CheckpointError(f"{path} names model class {name!r}, which is not part of ner-zoo")
    try:
        cls = network_class(name) if network else resolve(name)
    except (ImportError, AttributeError):
        raise CheckpointError(f"{path} names model class {name!r}, which this ner-zoo does not have") from None
    if network:
        return cls
    from ner_zoo.training.base import NERModule

    if not (isinstance(cls, type) and issubclass(cls, NERModule)):
        raise CheckpointError(f"{path} names class {name!r}, which is not a ner-zoo model")
    return cls


def network_class(name: str) -> type:
    """The network of the model class ``name`` names: ``<Name>Net`` beside a host ``<Name>`` (or ``name``
    itself when it names a network); ``AttributeError`` when it names neither."""
    from ner_zoo.training.network import Network

    for candidate in ([name] if name.endswith("Net") else [f"{name}Net", name]):
        try:
            cls = resolve(candidate)
        except AttributeError:
            continue
        if isinstance(cls, type) and issubclass(cls, Network):
            return cls
    raise AttributeError(name)


def warn_if_no_digest(ckpt: dict, path: str | Path) -> None:
    if ckpt.get(DIGEST_KEY) is None:
        warnings.warn(no_digest_message(path), UserWarning, stacklevel=2)


def preflight(path: str | Path, weights_only: bool = True) -> tuple[dict, type | None]:
    """The checkpoint dict and its model class, or one line naming what is wrong with the file."""
    ckpt = read(path, weights_only=weights_only)
    return ckpt, model_class(ckpt, path, required=False)


def settings_error(path: str | Path, name: str | None, e: BaseException) -> CheckpointError:
    """The recorded settings do not fit the recorded class (jsonargparse's error is a long dump: its first line)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines()] or [type(e).__name__]
    first = next((ln for ln in lines if "unexpected keyword" in ln or "missing" in ln), lines[0]).lstrip("- ")[:200]
    return CheckpointError(f"{path}: cannot rebuild {short_name(str(name))} from this checkpoint (its "
                           f"settings do not fit the recorded class: {first})")


def reason(e: BaseException) -> str:
    """A short reason for a checkpoint that does not load: torch's first line, or the keys that do not fit."""
    text = str(e).strip()
    if "Error(s) in loading state_dict" in text or "size mismatch for" in text:
        return ("its weights do not fit the recorded model class (missing, unexpected or differently shaped "
                "keys): the class was changed or the file corrupted")
    first = text.splitlines()[0] if text else type(e).__name__
    if "PytorchStreamReader" in first or "zip" in first.lower():
        return f"corrupted archive: {first[:200]}"
    return f"{type(e).__name__}: {first[:200]}"


class NamedLoad:
    """A checkpoint IO's ``load_checkpoint`` whose failures (unreadable archive, corrupted blocks) are one
    ``CheckpointError`` naming the file; it remembers the path for :class:`NamedStateDict`. A class, not a
    closure, so that ``ddp_spawn`` can pickle the strategy holding it."""

    def __init__(self, load: Any):
        self.load, self.path = load, None

    def __call__(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self.path = path
        try:
            ckpt = self.load(path, *args, **kwargs)
        except CheckpointError:
            raise
        except (RuntimeError, EOFError, ValueError, OSError, pickle.UnpicklingError, zipfile.BadZipFile) as e:
            raise CheckpointError(f"{path}: not a readable checkpoint ({reason(e)})") from None
        if isinstance(ckpt, dict):
            check_trainer_state(ckpt, path)
        return ckpt


class NamedStateDict:
    """A strategy's ``load_model_state_dict``: weights that do not fit the model are one line naming the file."""

    def __init__(self, load: Any, loader: NamedLoad):
        self.load, self.loader = load, loader

    def __call__(self, checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.load(checkpoint, *args, **kwargs)
        except RuntimeError as e:
            if "state_dict" not in str(e):
                raise
            raise CheckpointError(f"{self.loader.path or 'the checkpoint'}: cannot load its weights into this "
                                  f"model ({reason(e)})") from None


def name_load_errors(strategy: Any) -> None:
    """Lightning's loader path (``test``/``validate``/``fit --ckpt_path``) raises one line naming the file."""
    loader = NamedLoad(strategy.checkpoint_io.load_checkpoint)
    strategy.checkpoint_io.load_checkpoint = loader
    strategy.load_model_state_dict = NamedStateDict(strategy.load_model_state_dict, loader)
