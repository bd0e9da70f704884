"""What a zoo checkpoint carries beside Lightning's entries, and the checks on load: the format version, the
model class, the integrity digest of the weights (:mod:`ner_zoo.checkpoints.integrity`) and, where a data module
is attached, that the checkpoint's vocabularies are this data's."""

from __future__ import annotations

from typing import Any

from ner_zoo.checkpoints.integrity import DIGEST_KEY, checkpoint_digest, no_digest_message
from ner_zoo.data.batching import Vocabularies
from ner_zoo.errors import CheckpointError

#: 2: the weights under ``net.`` (the task module hosts the network; issue 42); 1: the network's own names
FORMAT_VERSION = 2


def stamp(module: Any, checkpoint: dict) -> None:
    """Format version, model class and (last: it covers the weights) the integrity digest."""
    checkpoint["ner_zoo_format"] = FORMAT_VERSION
    checkpoint["ner_zoo_class"] = f"{type(module).__module__}.{type(module).__qualname__}"
    checkpoint[DIGEST_KEY] = checkpoint_digest(checkpoint)


def check(module: Any, checkpoint: dict) -> None:
    """Refuse, with one line, a checkpoint of another format, with corrupted weights, or (a trainer's
    checkpoint) trained on other data; warn about one without a digest."""
    version = checkpoint.get("ner_zoo_format")
    if version is None or version > FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint format {version!r} is not supported by this ner-zoo (format {FORMAT_VERSION}); "
            "use the ner-zoo version that wrote it"
        )
    where = getattr(module._trainer, "ckpt_path", None) if module._trainer is not None else None
    where = where or "the checkpoint"
    stored = checkpoint.get(DIGEST_KEY)
    if stored is None:
        from lightning.pytorch.utilities import rank_zero_warn

        rank_zero_warn(no_digest_message(where))
    elif stored != checkpoint_digest(checkpoint):
        raise CheckpointError(f"{where}: corrupted checkpoint (its weights do not match the sha256 stored when "
                              "it was saved); use another copy or an earlier checkpoint")
    check_vocabularies(module.vocabs, checkpoint, where)


def check_vocabularies(vocabs: Vocabularies, checkpoint: dict, where: str) -> None:
    """A checkpoint trained on other data (vocabularies or labels differ) cannot be evaluated on this data."""
    saved = (checkpoint.get("hyper_parameters") or {}).get("vocabs")
    if saved is None:
        return
    ours, theirs = vocabs.to_dict(), Vocabularies.from_dict(saved).to_dict()
    diff = [k for k in ours if ours[k] != theirs.get(k)]
    if diff:
        def sizes(k: str) -> str:
            a, b = theirs[k]["tokens"], ours[k]["tokens"]
            return f"{k}: {len(a)} in the checkpoint, {len(b)} here, {len(set(a) ^ set(b))} not in both"

        parts = [sizes(k) if k in ("words", "chars") else f"{k}: {theirs.get(k)!r} in the checkpoint, "
                 f"{ours[k]!r} here" for k in diff]
        raise CheckpointError(f"{where} was trained on other data: its vocabularies differ from this data "
                              f"module's ({'; '.join(p[:200] for p in parts)}); evaluate it on the data it was "
                              "trained on, or use `ner-zoo predict --ckpt_path` (it uses the checkpoint's own)")
