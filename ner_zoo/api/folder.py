"""Reading an exported model folder (written by :mod:`ner_zoo.api.export`) back into its PyTorch model: the
folder alone is needed, not the run folder, the corpus or the hub."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ner_zoo.errors import CheckpointError

if TYPE_CHECKING:
    import torch

FORMAT = 1
WEIGHTS = "model.safetensors"
#: config.json's key for the sha256 of each file of the folder (relative path -> hex digest), written at export
DIGESTS = "sha256"
UNHASHED = ("config.json", "README.md")  # the card may be edited; config.json holds the digests


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digests(folder: Path) -> dict[str, str]:
    """The sha256 of every file under ``folder`` but config.json and README.md, by relative path."""
    return {p.relative_to(folder).as_posix(): _sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.relative_to(folder).as_posix() not in UNHASHED}


def read_json(path: Path, what: str = "file") -> Any:
    """A JSON file of an exported folder; a missing or damaged one is one :class:`CheckpointError` naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing; not a complete ner-zoo export") from None
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{path}: not a JSON {what} (byte {e.object[e.start]:#04x} is not UTF-8)") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: not a JSON {what} ({e.msg} at line {e.lineno})") from None
    except OSError as e:
        raise CheckpointError(f"{path}: {e.strerror or e}") from None


def read_config(folder: Path) -> dict:
    """``config.json`` of an exported folder, checked to be ner-zoo's (a plain Hugging Face model folder is not)."""
    path = folder / "config.json"
    config = read_json(path, "model config")
    if not isinstance(config, dict) or "model_class" not in config or "ner_zoo_format" not in config:
        raise CheckpointError(f"{path}: not a ner-zoo export's config (no 'model_class'/'ner_zoo_format'; a Hugging "
                              "Face model folder?); ner-zoo loads folders written by ner-zoo export")
    version = config["ner_zoo_format"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError(f"{path}: 'ner_zoo_format' is {version!r}, not an integer")
    if version > FORMAT:
        raise CheckpointError(f"{folder}: export format {version} is newer than this ner-zoo's ({FORMAT}); upgrade "
                              "ner-zoo")
    return config


def verify_files(folder: Path, config: dict) -> None:
    """Every file config.json lists is there with the sha256 recorded at export (flipped bytes, a truncated or
    replaced file, a missing crf.json: one line naming the file); an export without digests is read with a
    warning."""
    digests = config.get(DIGESTS)
    if digests is None:
        warnings.warn(f"{folder}: exported without file digests (an older ner-zoo); corruption cannot be detected: "
                      "export it again", UserWarning, stacklevel=3)
        return
    if not isinstance(digests, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in digests.items()):
        raise CheckpointError(f"{folder / 'config.json'}: {DIGESTS!r} is not a mapping of file names to digests")
    for rel, want in digests.items():
        path = folder / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise CheckpointError(f"{folder / 'config.json'}: lists {rel!r}, which is outside the folder")
        if not path.is_file():
            raise CheckpointError(f"{path}: missing (config.json lists it); not a complete ner-zoo export")
        if _sha256(path) != want:
            raise CheckpointError(f"{path}: corrupted (its sha256 differs from the one recorded at export); export "
                                  "the model again or use another copy")


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
    """The network exported into ``folder`` (eval mode, on the CPU; no Lightning imported). A damaged or foreign
    folder is one :class:`CheckpointError` naming the file."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    if (folder / "model.onnx").is_file() and not (folder / WEIGHTS).is_file():
        raise CheckpointError(f"{folder}: holds an ONNX model (no PyTorch weights): load it with ner_zoo.load")
    if not cfg_path.is_file() or not (folder / WEIGHTS).is_file():
        raise CheckpointError(f"{folder}: not an exported ner-zoo model (config.json and model.safetensors expected)")
    config = read_config(folder)
    verify_files(folder, config)
    cls = _network_class(config["model_class"], cfg_path)
    hp = config.get("hyper_parameters")
    if not isinstance(hp, dict):
        raise CheckpointError(f"{cfg_path}: 'hyper_parameters' is {type(hp).__name__}, not a mapping")
    hp = json.loads(json.dumps(hp))
    for group in encoder_groups(hp):
        group["init_args"].pop("base_model", None)
        model_dir = group["init_args"].get("model")
        if isinstance(model_dir, str) and model_dir.startswith("./"):
            group["init_args"]["model"] = str((folder / model_dir[2:]).resolve())
    vocab_path = folder / "vocabularies.json"
    hp["vocabs"] = read_json(vocab_path, "vocabulary file")
    from ner_zoo.data.batching import Vocabularies

    try:
        Vocabularies.from_dict(hp["vocabs"])
    except Exception as e:
        raise CheckpointError(f"{vocab_path}: not ner-zoo vocabularies ({type(e).__name__}: {e})"[:400]) from None
    from ner_zoo.checkpoints.migrations import network_state
    from ner_zoo.training.inference import instantiate, network_arguments

    try:
        model = instantiate(cls, network_arguments(cls, hp))
    except CheckpointError:
        raise
    except Exception as e:
        line = " ".join(str(e).split())[:300]
        raise CheckpointError(f"{cfg_path}: its hyper-parameters do not build {cls.__name__} ({line})") from None
    weights = folder / WEIGHTS
    try:
        from safetensors.torch import load_file

        state = load_file(str(weights))
    except Exception as e:  # SafetensorError (truncated, not safetensors), OSError
        line = " ".join(str(e).split())[:200]
        raise CheckpointError(f"{weights}: not a readable safetensors file ({line})") from None
    state = network_state(cls.__name__, state)  # weights renamed since the folder was written
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as e:  # shapes: config.json describes another size than the weights have
        first = next((ln.strip() for ln in str(e).splitlines() if "size mismatch" in ln), str(e).splitlines()[0])
        raise CheckpointError(f"{weights}: the weights do not fit the model config.json describes ({first[:300]})"
                              ) from None
    from_encoders = tuple(f"{name}.model." for name, _ in transformer_encoders(model))
    missing = [k for k in missing if not k.startswith(from_encoders)]
    if missing or unexpected:
        raise CheckpointError(f"{weights}: the weights do not fit the model (missing {missing[:5]}, unexpected "
                              f"{unexpected[:5]})")
    model.prepared = True
    return model.eval()
