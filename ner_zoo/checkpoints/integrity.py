"""Checkpoint integrity: a sha256 of the weights (``state_dict``), stored at save time and checked on every load
(``predict``, ``test``/``validate --ckpt_path``, resume). A checkpoint with flipped bytes in its weights then
fails with one line naming the file instead of predicting garbage. The digest is computed from the tensors
already in memory (no copy, no second read of the file). The optimiser state (twice the weights for Adam) is
left out to keep saving cheap; corruption there surfaces only in the resumed training.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

DIGEST_KEY = "ner_zoo_sha256"
#: checkpoint entries covered by the digest (Lightning changes nothing in them after ``on_save_checkpoint``)
COVERED = ("state_dict",)


def _update(h: Any, value: Any, path: str) -> None:
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu").contiguous().reshape(-1)
        h.update(f"{path}:{t.dtype}:{tuple(value.shape)};".encode())
        if t.numel():
            h.update(memoryview(t.view(torch.uint8).numpy()))
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            _update(h, value[key], f"{path}/{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _update(h, item, f"{path}/{i}")
    elif isinstance(value, (int, float, str, bool)) or value is None:
        h.update(f"{path}={value!r};".encode())


def checkpoint_digest(checkpoint: dict) -> str:
    """sha256 over the tensors and plain values of the covered entries of a checkpoint dict."""
    h = hashlib.sha256()
    for key in COVERED:
        if key in checkpoint:
            _update(h, checkpoint[key], key)
    return h.hexdigest()

#: the words that mark the warning about a checkpoint written before digests (filtered where it was said already)
NO_DIGEST = "has no integrity digest"


def no_digest_message(path: object) -> str:
    return f"{path} {NO_DIGEST} (written by an older ner-zoo): corruption cannot be detected"
