"""Checkpoint integrity: a sha256 of the weights and optimiser state, stored at save time and checked on every
load (``predict``, ``test``/``validate --ckpt_path``, resume). A checkpoint with flipped bytes then fails with
one line naming the file instead of predicting garbage. The digest is computed from the tensors already in
memory, so checking it costs no second read of the file.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

DIGEST_KEY = "ner_zoo_sha256"
#: checkpoint entries covered by the digest (Lightning adds nothing to them after ``on_save_checkpoint``)
COVERED = ("state_dict", "optimizer_states")


def _update(h: Any, value: Any, path: str) -> None:
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu").contiguous().reshape(-1)
        h.update(f"{path}:{t.dtype}:{tuple(value.shape)};".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
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
