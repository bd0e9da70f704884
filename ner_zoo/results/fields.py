"""Pure functions over run-record fields (no Lightning, so ``ner-zoo compare`` starts fast): the recipe hash and
the per-sentence counts of the test predictions. :mod:`ner_zoo.run.recorder` writes them."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

#: config keys that differ between runs of one recipe (seed, output paths, loggers, stop time)
RUN_SPECIFIC = ("seed_everything", "logger", "default_root_dir", "dirpath", "ckpt_path", "save_dir", "path",
                "max_time", "enable_progress_bar", "test_after_fit", "record")


def sentence_counts(pred, gold) -> tuple[int, int, int]:
    """``(tp, fp, fn)`` of one sentence: exact matches of ``(start, end, label)``, spans as sets (as the metrics)."""
    ps, gs = ({(int(s[0]), int(s[1]), s[2]) for s in spans} for spans in (pred, gold))
    return len(ps & gs), len(ps - gs), len(gs - ps)


def encode_sentence_counts(counts: list[tuple[int, int, int]]) -> str:
    """``"tp,fp,fn;tp,fp,fn;..."``, one item per sentence, an empty item for ``0,0,0`` (compact in JSON)."""
    return ";".join("" if c == (0, 0, 0) else ",".join(map(str, c)) for c in counts)


def decode_sentence_counts(text: str) -> list[tuple[int, int, int]]:
    """The inverse of :func:`encode_sentence_counts`."""
    return [(0, 0, 0) if not item else tuple(int(x) for x in item.split(",")) for item in text.split(";")]


def config_hash(config: dict) -> str:
    """Hash of the config without run-specific keys (seed, paths, loggers): runs of one recipe share it."""
    def strip(d: Any) -> Any:
        if isinstance(d, dict):
            return {k: strip(v) for k, v in sorted(d.items())
                    if k not in RUN_SPECIFIC}
        if isinstance(d, list):
            return [strip(v) for v in d]
        return d
    return hashlib.sha1(json.dumps(strip(config), sort_keys=True, default=str).encode()).hexdigest()[:12]


def floor_epochs(x: float) -> float:
    """Epochs to 3 decimals, rounded down: 2.9996 epochs is 2.999, never 3."""
    return math.floor(round(x * 1000, 6)) / 1000
