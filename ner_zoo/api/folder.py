"""Reading an exported model folder (written by :mod:`ner_zoo.api.export`) back into its PyTorch model: the
folder alone is needed, not the run folder, the corpus or the hub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ner_zoo.errors import CheckpointError

if TYPE_CHECKING:
    import torch

FORMAT = 1


def transformer_encoders(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    from ner_zoo.modules.transformer import TransformerEncoder

    return [(name, m) for name, m in model.named_modules() if isinstance(m, TransformerEncoder)]


def encoder_groups(node: Any) -> list[dict]:
    """Every ``{"class_path": TransformerEncoder, "init_args": {...}}`` in the hyper-parameters, in order."""
    out = []
    if isinstance(node, dict):
        if str(node.get("class_path", "")).endswith("TransformerEncoder") and isinstance(node.get("init_args"), dict):
            out.append(node)
        for v in node.values():
            out += encoder_groups(v)
    elif isinstance(node, list):
        for v in node:
            out += encoder_groups(v)
    return out


def _network_class(name: str, where: Path):
    if not str(name).startswith("ner_zoo."):  # never import an arbitrary module named by a file
        raise CheckpointError(f"{where} names model class {name!r}, which is not part of ner-zoo")
    from ner_zoo.training.checkpoint_checks import network_class

    try:
        return network_class(name)
    except (ImportError, AttributeError):
        raise CheckpointError(f"{where} names model class {name!r}, which this ner-zoo does not have") from None


def load_folder(folder: str | Path):
    """The network exported into ``folder`` (eval mode, on the CPU; no Lightning imported)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg_path = folder / "config.json"
    if (folder / "model.onnx").is_file() and not (folder / "model.safetensors").is_file():
        raise CheckpointError(f"{folder}: holds an ONNX model (no PyTorch weights): load it with ner_zoo.load")
    if not cfg_path.is_file() or not (folder / "model.safetensors").is_file():
        raise CheckpointError(f"{folder}: not an exported ner-zoo model (config.json and model.safetensors expected)")
    config = json.loads(cfg_path.read_text())
    if config.get("ner_zoo_format", 0) > FORMAT:
        raise CheckpointError(f"{folder}: export format {config.get('ner_zoo_format')} is newer than this ner-zoo's "
                              f"({FORMAT}); upgrade ner-zoo")
    cls = _network_class(config["model_class"], cfg_path)
    hp = json.loads(json.dumps(config["hyper_parameters"]))
    for group in encoder_groups(hp):
        group["init_args"].pop("base_model", None)
        model_dir = group["init_args"]["model"]
        if model_dir.startswith("./"):
            group["init_args"]["model"] = str((folder / model_dir[2:]).resolve())
    hp["vocabs"] = json.loads((folder / "vocabularies.json").read_text())
    from ner_zoo.training.inference import instantiate, network_arguments
    from ner_zoo.training.migrations import network_state

    model = instantiate(cls, network_arguments(cls, hp))
    state = network_state(cls.__name__, load_file(str(folder / "model.safetensors")))  # renamed since written
    missing, unexpected = model.load_state_dict(state, strict=False)
    from_encoders = tuple(f"{name}.model." for name, _ in transformer_encoders(model))
    missing = [k for k in missing if not k.startswith(from_encoders)]
    if missing or unexpected:
        raise CheckpointError(f"{folder}: the weights do not fit the model (missing {missing[:5]}, unexpected "
                              f"{unexpected[:5]})")
    model.prepared = True
    return model.eval()
