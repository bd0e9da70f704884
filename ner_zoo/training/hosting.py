"""The line a model file ends with, ``__getattr__ = hosts(<Paper>Net)``: the LightningModule of a network, made on
first access (kept apart from :mod:`ner_zoo.training.network`, which the task module imports, so no import runs in
a circle)."""

from __future__ import annotations

from collections.abc import Callable

from ner_zoo.training.network import Network


def hosts(*networks: type[Network]) -> Callable[[str], type]:
    """A model file's module ``__getattr__`` that makes, on first access, the LightningModule of each network
    ``<Name>Net``: ``<Name>``, a :class:`~ner_zoo.training.base.NERModule` whose init arguments are the network's
    (plus the optimiser's), so configs name ``ner_zoo.models.<file>.<Name>`` and fit it."""
    by_name = {net.__name__[:-len("Net")]: net for net in networks if net.__name__.endswith("Net")}
    if len(by_name) != len(networks):
        raise TypeError("a network's class name ends in Net (its LightningModule takes the name without it)")
    made: dict[str, type] = {}

    def __getattr__(name: str) -> type:
        if name not in by_name:
            raise AttributeError(f"module {networks[0].__module__!r} has no attribute {name!r}")
        if name not in made:
            from ner_zoo.training.base import host_class

            made[name] = host_class(by_name[name], name)
        return made[name]

    return __getattr__
