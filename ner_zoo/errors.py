"""The project's own error types: every bad input raises one of these, naming where and what."""

from __future__ import annotations


class NerZooError(Exception):
    """Base class of every error ner-zoo raises on purpose."""


class DataFormatError(NerZooError, ValueError):
    """A corpus file is malformed. The message names the file, the line (or record) and the problem."""

    def __init__(self, problem: str, path: object = None, line: int | None = None, hint: str | None = None):
        self.problem, self.path, self.line, self.hint = problem, path, line, hint
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f":{line}"
            where += ": "
        msg = where + problem
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class LabelError(NerZooError, ValueError):
    """A label is not in the label set fixed at training time."""


class CheckpointError(NerZooError, RuntimeError):
    """A checkpoint cannot be used (missing pieces, incompatible version)."""


class ResourceError(NerZooError, RuntimeError):
    """A pretrained resource (encoder directory or hub id, word vectors, an optional package) is not available;
    the message says which and how to get it."""


class ConfigError(NerZooError, ValueError):
    """A config (YAML file or ``--key value`` argument) names a key the class does not accept."""


class OutputError(NerZooError, ValueError):
    """An output would replace a file the user did not ask to replace, or a file the command reads."""


class UsageError(NerZooError, ValueError):
    """A command-line option or argument is invalid (its type, range, or a missing or unknown command)."""


class Interrupted(BaseException):
    """SIGTERM outside a training loop: raised by the CLI's handler so that writers clean up (a ``BaseException``,
    like ``KeyboardInterrupt``, so that no ``except Exception`` swallows it)."""



class TrainingDiverged(NerZooError, FloatingPointError):
    """The training loss became NaN or infinite; the message says at which step and what to change."""


def check_choices(func: object, values: dict) -> None:
    """Each argument of ``func`` annotated ``Literal[...]`` (or ``Literal[...] | None``) holds one of its choices,
    else a one-line ``ValueError``: ``<name> must be a, b or c, got 'x'``. The annotation is the only list of
    choices: jsonargparse checks it on the command line, this on the Python API. Call it as
    ``check_choices(Class.__init__, locals())``; it checks the declared ranges too (:func:`ner_zoo.ranges.check_ranges`)."""
    import inspect
    import typing

    from ner_zoo.ranges import check_ranges

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
