"""``ner-zoo export CKPT --output DIR``: a self-contained model folder (reading it back: :mod:`ner_zoo.api.folder`).

The folder (the layout the Hugging Face Hub shows as a model repository)::

    README.md            model card, generated from the run record (results.json) when one is found
    config.json          model class, format, hyper-parameters (without the optimiser), labels, tag scheme, task
    vocabularies.json    words, characters, tags, labels, feature vocabularies
    model.safetensors    the weights (a transformer encoder's are in its own folder instead)
    encoder-N/           each transformer encoder, fine-tuned, as ``save_pretrained`` writes it (weights,
                         config, tokenizer); config.json records the id or path it started from
                         (``--format onnx``: model.onnx and tokenizer.json instead, :mod:`ner_zoo.api.onnx`)

Loading needs nothing but the folder: not the run folder, not the corpus, not the hub.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ner_zoo.api.folder import DIGESTS, FORMAT, WEIGHTS, encoder_groups, file_digests, load_folder, transformer_encoders  # noqa: F401
from ner_zoo.errors import CheckpointError, DataFormatError

if TYPE_CHECKING:
    import torch

ENCODER_CLASS = "ner_zoo.modules.transformer.TransformerEncoder"
NOT_SAVED = ("optimizer", "lr_scheduler", "pretrained_lr")  # the task module's (training), not the network's


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__dict__") and hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(value))
    raise CheckpointError(f"hyper-parameter value {value!r} cannot be exported (not JSON)")


def saved_hparams(path: Path, cls) -> dict:
    """The init arguments as saved (nested components as ``class_path``/``init_args``, not objects)."""
    if path.is_dir():
        return json.loads((path / "config.json").read_text())["hyper_parameters"]
    import torch

    hp = dict(torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("hyper_parameters") or {})
    from ner_zoo.checkpoints.migrations import migrate_hparams

    return migrate_hparams(cls, hp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _named(e: OSError, path: object) -> OSError:
    return type(e)(e.errno, e.strerror or str(e), str(path)) if e.errno is not None else e


def _refuse_existing(out: Path, given: object) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CheckpointError(f"{given}: exists and is not an empty folder; choose a new --output")


def export(ckpt: str | Path, output: str | Path, record: str | Path | None = None, format: str = "safetensors",
           repo_id: str | None = None) -> Path:
    """Write the folder for checkpoint ``ckpt`` into ``output`` (an existing non-empty folder is refused).

    The folder is written as a private temporary folder (:func:`tempfile.mkdtemp`) beside ``output`` and renamed
    to it in one step: a failure (a full disk, Ctrl-C) leaves nothing, two exports to one new folder give one
    complete folder and one refusal, and a folder that appears meanwhile is never replaced. ``config.json``
    records the sha256 of every other file but the card (``sha256``), checked when the folder is loaded.

    Args:
        ckpt: a checkpoint written by ``ner-zoo fit`` (or an exported folder, re-exported).
        output: the folder to write.
        record: the run record for the model card; default: ``results.json`` next to the checkpoint or one
            folder up, when present.
        format: ``safetensors`` (the weights; loads into the PyTorch model) or ``onnx`` (taggers: the scoring
            network as ``model.onnx``, decoded outside it; :mod:`ner_zoo.api.onnx`).
        repo_id: the Hub repository the folder is pushed to (``--push-to-hub``): the card's usage snippet loads
            it by that id (else by the folder's name).

    No local path is written into the folder (a card is public once pushed): an encoder that started from a local
    folder is named by that folder's name.
    """
    if format not in ("safetensors", "onnx"):
        raise CheckpointError(f"unknown export format {format!r} (safetensors or onnx)")
    from ner_zoo.api.card import find_record, model_card
    from ner_zoo.api.tagger import load_any

    out = Path(os.path.abspath(output))  # `.` and `x/..` have a name to put a temporary beside
    _refuse_existing(out, output)  # early, before the slow load; enforced again by the final rename
    try:
        rec = find_record(Path(ckpt), record)
    except ValueError as e:  # json's error: the record given (or found) is not JSON
        raise DataFormatError(f"not a run record: invalid JSON ({e})", record or ckpt) from None
    model = load_any(ckpt, "cpu")
    hp = _jsonable({k: v for k, v in saved_hparams(Path(ckpt), type(model)).items()
                    if k not in NOT_SAVED and k != "vocabs" and not k.startswith("_")})
    encoders = transformer_encoders(model)
    groups = encoder_groups(hp)
    if len(groups) != len(encoders):
        raise CheckpointError(f"{ckpt}: {len(encoders)} transformer encoder(s) but {len(groups)} in the "
                              "hyper-parameters; cannot export")
    try:  # a private temporary folder beside the output: never another process's or a user's folder
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    except OSError as e:
        raise _named(e, output) from None
    try:
        skip, runtime = [], {}
        if format == "onnx":
            from ner_zoo.api.onnx import write_onnx

            runtime = {"runtime": "onnx", "onnx": write_onnx(model, tmp)}
        for k, ((name, enc), group) in enumerate(zip(encoders, groups)):
            group["init_args"]["base_model"] = _public_name(group["init_args"].get("model"))
            if format == "onnx":  # the weights are in the graph, the tokenizer in tokenizer.json
                continue
            folder = f"encoder-{k}"
            enc.model.save_pretrained(tmp / folder)
            enc.tokenizer.save_pretrained(tmp / folder)
            group["init_args"]["model"] = f"./{folder}"  # relative to the exported folder
            skip.append(f"{name}.model.")
        state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()
                 if not any(k.startswith(p) for p in skip)}
        if format == "safetensors":  # serialised in memory, written by Python: a full disk is a plain OSError
            from safetensors.torch import save

            (tmp / WEIGHTS).write_bytes(save(state, metadata={"format": "pt", "ner_zoo_format": str(FORMAT)}))
        vocabs = model.vocabs
        (tmp / "vocabularies.json").write_text(json.dumps(vocabs.to_dict(), ensure_ascii=False) + "\n")
        from ner_zoo.checkpoints.migrations import paper

        model_class = f"{type(model).__module__}.{paper(type(model).__qualname__)}"  # the name configs use
        config = {"ner_zoo_format": FORMAT, "model_class": model_class,
                  "task": model.task, "labels": list(vocabs.labels or []), "tag_scheme": vocabs.scheme,
                  "hyper_parameters": hp, "encoders": [g["init_args"]["base_model"] for g in groups],
                  "encoder_weights_in": [f"encoder-{k}" for k in range(len(groups)) if format != "onnx"], **runtime,
                  DIGESTS: file_digests(tmp)}  # every file but config.json and the card, checked at load
        (tmp / "config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n")
        (tmp / "README.md").write_text(model_card(config, rec, Path(ckpt), repo_id=repo_id, folder_name=out.name))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's folder is private (0700); the export is a normal folder
        try:
            os.rename(tmp, out)  # atomic; replaces only an empty folder: another writer's output is kept
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise CheckpointError(f"{output}: exists and is not an empty folder (written meanwhile?); choose a "
                                      "new --output") from None
            raise
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) and (e.filename is None or str(tmp) in str(e.filename)):
            raise _named(e, output) from None  # the output, not the temporary, named
        raise
    return out


def _public_name(model: Any) -> Any:
    """A Hub id as is; a local folder (absolute, or ``~``) by its name only."""
    text = str(model) if model is not None else None
    if text and (Path(text).is_absolute() or text.startswith("~")):
        return Path(text).name
    return model


def push_to_hub(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Upload an exported folder to the Hugging Face Hub as model repository ``repo_id``; its URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="model",
                             commit_message="ner-zoo export")
    return str(getattr(info, "commit_url", None) or f"https://huggingface.co/{repo_id}")
