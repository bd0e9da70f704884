"""Every setting's range, declared once in the signature of the class that takes it.

A numeric argument says what it accepts in its annotation, ``batch_size: PositiveInt = 10`` or
``dropout: Probability = 0.5``: ``Annotated[int, Range(...)]``, plain ``int``/``float`` underneath (jsonargparse
parses the base type and carries the annotation; a value stays a plain number in hparams and checkpoints). The one
declaration is checked twice, by the same :func:`problem`:

* **from Python**, when the class is built: :func:`check_ranges` (called as ``check_ranges(Class.__init__,
  locals())`` in ``__init__``; networks and data modules get it from their base), one :class:`ConfigError` line
  ``SampleCorpus: batch_size must be a positive integer, got 0``;
* **from a config**, after parsing and before any class is built: :func:`config_problem` walks each
  ``class_path``/``init_args`` node (:func:`ner_zoo.cli.config_checks.check_config`), one line naming the key and
  where it was set, ``configs/x.yaml:12: data.init_args.batch_size must be a positive integer, got 0``.

Values are numbers of the right kind (``bool`` is not an int here) and, for floats, finite.
"""

from __future__ import annotations

import collections.abc
import inspect
import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Callable

from ner_zoo.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """What a numeric argument accepts: ``low``/``high`` bounds (open or closed), integers only or finite numbers;
    ``what`` is the message's noun phrase (``a positive integer``)."""

    what: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def __repr__(self) -> str:  # what ``--help`` shows: ``Annotated[int, range [1, inf)]``
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"  # the bounds in use are small numbers
        return (f"range {'(' if self.low_open or self.low is None else '['}{low}, {high}"
                f"{')' if self.high_open or self.high is None else ']'}")

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is in range, else ``must be <what>``."""
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return f"must be {self.what}"
        ok = (self.integer or math.isfinite(value)) and (
            self.low is None or (value > self.low if self.low_open else value >= self.low)) and (
            self.high is None or (value < self.high if self.high_open else value <= self.high))
        return None if ok else f"must be {self.what}"


PositiveInt = Annotated[int, Range("a positive integer", low=1, integer=True)]
NonNegativeInt = Annotated[int, Range("an integer >= 0", low=0, integer=True)]
PositiveFloat = Annotated[float, Range("a finite number > 0", low=0, low_open=True)]
NonNegativeFloat = Annotated[float, Range("a finite number >= 0", low=0)]
#: a dropout (or other) probability that must leave something: [0, 1)
Probability = Annotated[float, Range("a number in [0, 1)", low=0, high=1, high_open=True)]
#: a fraction or threshold: [0, 1]
UnitInterval = Annotated[float, Range("a number in [0, 1]", low=0, high=1)]


def _arms(hint: Any) -> tuple:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _is_sequence_hint(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return isinstance(origin, type) and origin is not str and issubclass(origin, (list, tuple, collections.abc.Sequence))


def problem(hint: Any, value: Any) -> str | None:
    """What is wrong with ``value`` for an argument annotated ``hint`` (``must be ...``), or None: the ranges of
    its :class:`Range` annotations (through ``X | None``, unions of a number and a list, and lists or tuples of
    such numbers, each item checked)."""
    arms = _arms(hint)
    if len(arms) > 1:
        if value is None and type(None) in arms:
            return None
        seq = isinstance(value, (list, tuple))
        matching = [a for a in arms if a is not type(None) and _is_sequence_hint(a) == seq]
        return problem(matching[0], value) if matching else None
    if _is_sequence_hint(hint):
        if not isinstance(value, (list, tuple)):
            return None
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        for i, item in enumerate(value):
            inner = args[0] if len(args) == 1 else args[i] if i < len(args) else None
            found = problem(inner, item) if inner is not None else None
            if found:
                return f"{found} (each item)"
        return None
    if typing.get_origin(hint) is Annotated:
        for meta in hint.__metadata__:
            if isinstance(meta, Range):
                found = meta.problem(value)
                if found:
                    return found
    return None


_HINTS: dict[Any, dict[str, Any]] = {}


def hints(func: Callable) -> dict[str, Any]:
    """``func``'s evaluated annotations with their ``Annotated`` extras (postponed ones evaluated in its module;
    one that does not resolve there, a name imported for type checking only, left out)."""
    key = func
    if key in _HINTS:
        return _HINTS[key]
    try:
        found = typing.get_type_hints(func, include_extras=True)
    except Exception:  # one annotation that does not resolve: evaluate the others one by one
        found = {}
        namespace = {**vars(typing), **getattr(func, "__globals__", {})}
        for name, text in getattr(func, "__annotations__", {}).items():
            try:
                found[name] = eval(text, namespace) if isinstance(text, str) else text  # noqa: S307
            except Exception:
                continue
    _HINTS[key] = found
    return found


def class_hints(cls: type) -> dict[str, Any]:
    """The annotations of ``cls``'s init arguments, along its MRO (the first ``__init__`` naming one wins: the
    one a ``**kwargs`` passes it on to comes after), a dataclass's fields included."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        try:
            names = inspect.signature(init).parameters
        except (TypeError, ValueError):
            continue
        found = hints(init)
        for name in names:
            if name in found and name not in out:
                out[name] = found[name]
    return out


def check_ranges(func: Callable, values: dict, owner: str | None = None) -> None:
    """Each argument of ``func`` whose annotation declares a :class:`Range` holds a value in it, else one
    :class:`ConfigError` line ``<Class>: <name> must be ..., got <value>``. Call it as
    ``check_ranges(Class.__init__, locals())``; the class named is ``type(self)`` (the one the user built), else
    ``owner``, else ``func``'s own."""
    if owner is None:
        owner = type(values["self"]).__name__ if "self" in values else func.__qualname__.split(".")[0]
    for name, hint in hints(func).items():
        if name in values and name != "return":
            found = problem(hint, values[name])
            if found:
                raise ConfigError(f"{owner}: {name} {found}, got {values[name]!r}")


def config_problem(cls: type, name: str, value: Any) -> str | None:
    """What is wrong with ``value`` given as ``cls``'s init argument ``name`` in a config, or None."""
    hint = class_hints(cls).get(name)
    return None if hint is None else problem(hint, value)


def nested_class(cls: type, name: str) -> type | None:
    """The dataclass that ``cls``'s argument ``name`` is (``words: Words``), given in a config as a plain mapping
    of its fields; None for any other argument."""
    import dataclasses

    hint = class_hints(cls).get(name)
    for arm in _arms(hint) if hint is not None else ():
        if typing.get_origin(arm) is Annotated:
            arm = arm.__origin__
        if isinstance(arm, type) and dataclasses.is_dataclass(arm):
            return arm
    return None


def check_choices(func: object, values: dict) -> None:
    """Each argument of ``func`` annotated ``Literal[...]`` (or ``Literal[...] | None``) holds one of its choices,
    else a one-line ``ValueError``: ``<name> must be a, b or c, got 'x'``. The annotation is the only list of
    choices: jsonargparse checks it on the command line, this on the Python API. Call it as
    ``check_choices(Class.__init__, locals())``; it checks the declared ranges too (:func:`check_ranges`)."""
    import inspect
    import typing

    for name, param in inspect.signature(func).parameters.items():
        hint = param.annotation
        if name not in values or not (isinstance(hint, str) and "Literal[" in hint or typing.get_origin(hint)):
            continue
        if isinstance(hint, str):  # postponed annotations: evaluated in the function's module
            hint = eval(hint, {**getattr(func, "__globals__", {}), "Literal": typing.Literal})  # noqa: S307
        choices = _literal_choices(hint)
        if choices is not None and values[name] not in choices:
            shown = ["null" if c is None else str(c) for c in choices]
            listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
            raise ValueError(f"{name} must be {listed}, got {values[name]!r}")
    check_ranges(func, values)


def _literal_choices(hint: object) -> list | None:
    """The values a ``Literal`` (optionally in a union with ``None`` or other literals) allows; None otherwise."""
    import types
    import typing

    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return list(typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        out = []
        for arg in typing.get_args(hint):
            if arg is type(None):
                out.append(None)
            elif typing.get_origin(arg) is typing.Literal:
                out += list(typing.get_args(arg))
            else:
                return None
        return out
    return None
