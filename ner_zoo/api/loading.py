"""``ner_zoo.load(path)``: a checkpoint, an exported folder or an ONNX folder -> the tagger that runs it. Kept
apart from :mod:`ner_zoo.api.tagger` because the ONNX tagger builds on the PyTorch one."""

from __future__ import annotations

from pathlib import Path

from ner_zoo.api.tagger import Tagger, load_any


def load(path: str | Path, device: str | None = None, batch_size: int = 32, precision: str = "auto",
         _allow_pos: bool = False, *, revision: str | None = None, token: str | bool | None = None) -> Tagger:
    """A :class:`Tagger` from a checkpoint written by ``ner-zoo fit``, a folder written by ``ner-zoo export``, or
    such a folder on the Hugging Face Hub (``"user/repo"``, as ``export --push-to-hub`` uploads it).

    Args:
        path: ``best.ckpt``, an exported folder, or a Hub model id ``namespace/name`` (a local path of that name
            wins; :mod:`ner_zoo.api.hub`: downloaded into the Hugging Face cache, ``HF_HUB_OFFLINE=1`` reads the
            cache only).
        device: ``cpu``, ``cuda``, ``cuda:1`` ...; default: a GPU when there is one.
        batch_size: sentences per forward pass.
        precision: ``auto`` (default): bf16 where the device computes it natively and the model's bf16 quality
            was measured equal to fp32's (:func:`ner_zoo.hardware.default_precision`: the TransformerTagger on a
            CPU with AVX-512 BF16 or AMX, or an Ampere+ GPU), else fp32; or ``32``, ``bf16``, ``16`` to choose.
            The tagger's ``precision`` says what was taken.
        revision: with a Hub id: a branch, tag or commit (default: ``main``).
        token: with a Hub id: a token for a private repository (default: ``HF_TOKEN`` or the saved login).

    A folder exported with ``--format onnx`` gives an :class:`~ner_zoo.api.onnx.OnnxTagger` (same interface; runs
    on onnxruntime without torch). Otherwise the network is built alone (plain torch; Lightning is never imported).
    """
    from ner_zoo.api.hub import resolve
    from ner_zoo.api.onnx import is_onnx_folder

    path = resolve(path, revision=revision, token=token)  # a Hub id -> its snapshot folder; a local path as is
    if is_onnx_folder(path):
        from ner_zoo.api.onnx import OnnxTagger

        return OnnxTagger(path, device=device, batch_size=batch_size, _allow_pos=_allow_pos)
    model = load_any(path, device)
    if precision == "auto":
        from ner_zoo.hardware import default_precision

        precision = default_precision(type(model).__name__, str(next(iter(model.parameters())).device.type))
    return Tagger(model, batch_size=batch_size, precision=precision, _allow_pos=_allow_pos)
