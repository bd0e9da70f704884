"""Nested config mappings as dotted keys (``model.init_args.char_encoder.init_args.char_dim``), the spelling
of the command line's options."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` for every non-mapping value under ``value`` (lists are values)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    else:
        yield path, value
