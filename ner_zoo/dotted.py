"""Dotted names: nested config mappings as dotted keys (``model.init_args.char_encoder.init_args.char_dim``, the
spelling of the command line's options), and class paths (``ner_zoo.models.HCR``) resolved and shortened here
alone."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` for every non-mapping value under ``value`` (lists are values)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    else:
        yield path, value


def resolve(class_path: str) -> Any:
    """The object a class path names (``package.module.Name``); ``ImportError`` or ``AttributeError`` when there
    is none."""
    module, _, attr = str(class_path).rpartition(".")
    if not module:
        raise ImportError(f"{class_path!r} is not a dotted path")
    return getattr(importlib.import_module(module), attr)


def short_name(class_path: Any) -> str:
    """``ner_zoo.models.hcr.HCR`` -> ``HCR`` (a class or a config group's ``class_path`` too)."""
    if isinstance(class_path, Mapping):
        class_path = class_path.get("class_path", "")
    if isinstance(class_path, type):
        return class_path.__name__
    return str(class_path).rpartition(".")[2]
