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
