"""Checkpoints written as every other output is (:mod:`ner_zoo.io`): a private temporary file from
:func:`tempfile.mkstemp` in the checkpoint's own folder, fsynced, then renamed over the checkpoint's name.

Lightning's ``TorchCheckpointIO`` writes through an fsspec transaction whose temporary file lives in the system
temp folder and is *moved* into place: across file systems that is a copy, so a full disk left a truncated
``last.ckpt`` under its real name (probe F1 of robustness_4), and the error named the temporary. Here a failed
write (no space, file too large, read-only, Ctrl-C, SIGTERM) leaves the previous checkpoint intact, no temporary
file, and an ``OSError`` naming the checkpoint. Remote paths (``s3://`` ...) go to Lightning's own writer.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO


def _write(f: Any, data: memoryview) -> None:
    """The bytes into the temporary file (a function of its own: tests inject a full disk here)."""
    f.write(data)


def _mode(target: Path) -> int:
    """The mode the checkpoint gets: the replaced file's, else ``0666 & ~umask`` (as ``open`` would make it)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _local(path: Any) -> bool:
    text = str(path)
    return "://" not in text or text.startswith("file://")


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` whose save is a same-folder temporary file and an atomic rename."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Optional[Any] = None) -> None:
        if storage_options is not None or not _local(path):
            return super().save_checkpoint(checkpoint, path, storage_options)
        import torch

        target = Path(str(path).removeprefix("file://"))
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)  # serialised first: a write error is then a plain OSError with its errno
        tmp = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "wb") as f:
                _write(f, buffer.getbuffer())
                f.flush()
                os.fchmod(f.fileno(), _mode(target))  # mkstemp's file is private (0600)
                os.fsync(f.fileno())
            os.replace(tmp, target)  # checkpoints are rewritten by design (last.ckpt every epoch)
            tmp = None
        except OSError as e:
            raise type(e)(e.errno, e.strerror or str(e), str(target)) from None
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)


def install(strategy: Any) -> None:
    """Our writer on ``strategy`` where it has Lightning's default one (a user's own plugin is kept)."""
    if type(strategy.checkpoint_io) is TorchCheckpointIO:
        strategy.checkpoint_io = AtomicCheckpointIO()
