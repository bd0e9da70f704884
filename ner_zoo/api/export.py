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

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ner_zoo.api.folder import FORMAT, encoder_groups, load_folder, transformer_encoders  # noqa: F401
from ner_zoo.errors import CheckpointError

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
    from ner_zoo.training.migrations import migrate_hparams

    return migrate_hparams(cls, hp)


def export(ckpt: str | Path, output: str | Path, record: str | Path | None = None, format: str = "safetensors") -> Path:
    """Write the folder for checkpoint ``ckpt`` into ``output`` (an existing non-empty folder is refused).

    Args:
        ckpt: a checkpoint written by ``ner-zoo fit`` (or an exported folder, re-exported).
        output: the folder to write.
        record: the run record for the model card; default: ``results.json`` next to the checkpoint or one
            folder up, when present.
        format: ``safetensors`` (the weights; loads into the PyTorch model) or ``onnx`` (taggers: the scoring
            network as ``model.onnx``, decoded outside it; :mod:`ner_zoo.api.onnx`).
    """
    if format not in ("safetensors", "onnx"):
        raise CheckpointError(f"unknown export format {format!r} (safetensors or onnx)")
    from safetensors.torch import save_file

    from ner_zoo.api.card import find_record, model_card
    from ner_zoo.api.tagger import load_any

    out = Path(output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CheckpointError(f"{out}: exists and is not an empty folder; choose a new --output")
    model = load_any(ckpt, "cpu")
    hp = _jsonable({k: v for k, v in saved_hparams(Path(ckpt), type(model)).items()
                    if k not in NOT_SAVED and k != "vocabs" and not k.startswith("_")})
    encoders = transformer_encoders(model)
    groups = encoder_groups(hp)
    if len(groups) != len(encoders):
        raise CheckpointError(f"{ckpt}: {len(encoders)} transformer encoder(s) but {len(groups)} in the "
                              "hyper-parameters; cannot export")
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        skip, runtime = [], {}
        if format == "onnx":
            from ner_zoo.api.onnx import write_onnx

            runtime = {"runtime": "onnx", "onnx": write_onnx(model, tmp)}
        for k, ((name, enc), group) in enumerate(zip(encoders, groups)):
            group["init_args"]["base_model"] = group["init_args"].get("model")
            if format == "onnx":  # the weights are in the graph, the tokenizer in tokenizer.json
                continue
            folder = f"encoder-{k}"
            enc.model.save_pretrained(tmp / folder)
            enc.tokenizer.save_pretrained(tmp / folder)
            group["init_args"]["model"] = f"./{folder}"  # relative to the exported folder
            skip.append(f"{name}.model.")
        state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()
                 if not any(k.startswith(p) for p in skip)}
        if format == "safetensors":
            save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt", "ner_zoo_format": str(FORMAT)})
        vocabs = model.vocabs
        from ner_zoo.training.migrations import paper

        model_class = f"{type(model).__module__}.{paper(type(model).__qualname__)}"  # the name configs use
        config = {"ner_zoo_format": FORMAT, "model_class": model_class,
                  "task": model.task, "labels": list(vocabs.labels or []), "tag_scheme": vocabs.scheme,
                  "hyper_parameters": hp, "encoders": [g["init_args"]["base_model"] for g in groups],
                  "encoder_weights_in": [f"encoder-{k}" for k in range(len(groups)) if format != "onnx"], **runtime}
        (tmp / "config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n")
        (tmp / "vocabularies.json").write_text(json.dumps(vocabs.to_dict(), ensure_ascii=False) + "\n")
        rec = find_record(Path(ckpt), record)
        (tmp / "README.md").write_text(model_card(config, rec, Path(ckpt)))
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def push_to_hub(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Upload an exported folder to the Hugging Face Hub as model repository ``repo_id``; its URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="model",
                             commit_message="ner-zoo export")
    return str(getattr(info, "commit_url", None) or f"https://huggingface.co/{repo_id}")
