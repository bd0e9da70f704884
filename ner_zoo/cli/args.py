"""Command-line pieces shared by the non-LightningCLI commands (``predict --ckpt_path``, ``score``, ``data``,
``compare``): an argument parser whose errors are the one ``ner-zoo: error:`` line, and option types checked
at the edge (before any file is read or model loaded)."""

from __future__ import annotations

import argparse
import codecs
import math

from ner_zoo.errors import UsageError


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` whose errors raise :class:`UsageError` (one ``ner-zoo: error:`` line, exit 2) instead of
    printing the usage; ``--help`` still shows it."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse's, but a misspelt option is named even when a required option is missing too (``export C
        --outptu x`` said only that ``--output`` is required): a first pass with nothing required finds it."""
        required = [a for a in self._actions if a.required and a.option_strings]
        for a in required:
            a.required = False
        try:
            _, extras = self.parse_known_args(args, argparse.Namespace(**vars(namespace or argparse.Namespace())))
        finally:
            for a in required:
                a.required = True
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return super().parse_args(args, namespace)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _checked(text: str, convert, ok, what: str, shown: str | None = None):
    """``convert(text)`` if it converts and ``ok`` holds, else one argparse error: "expected WHAT, got ..."."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {shown or what}, got {value if convert is int else repr(text)}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (a batch size, a count)."""
    return _checked(text, int, lambda v: v >= 1, "a positive integer")


def port(text: str) -> int:
    return _checked(text, int, lambda v: 0 <= v <= 65535, "a port number", "a port number in 0..65535")


def seconds(text: str) -> float:
    return _checked(text, float, lambda v: 0 <= v < float("inf"), "a number of seconds",
                    "a finite number of seconds >= 0")


def finite_float(text: str) -> float:
    return _checked(text, float, math.isfinite, "a number", "a finite number")


def encoding(text: str) -> str:
    """A Python codec name (``utf-8``, ``latin-1``, ``cp1252`` ...)."""
    try:
        return codecs.lookup(text).name
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r} (a Python codec name, e.g. utf-8, latin-1, "
                                         "cp1252)") from None


def add_encoding(parser: argparse.ArgumentParser) -> None:
    """``--encoding`` for a command that reads text files (the command passes ``encoding_option="--encoding"`` to
    the readers, whose messages then name it)."""
    parser.add_argument("--encoding", type=encoding, default=None,
                        help="encoding of the input files (default: UTF-8, a BOM or UTF-16 mark honoured; a file "
                             "that is not UTF-8 is read as Latin-1 with a warning; mixed encodings are an error)")

def add_overwrite(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing output file (by default nothing is replaced)")


#: Lightning's precision values
PRECISIONS = ("32-true", "32", "16-mixed", "16", "bf16-mixed", "bf16", "16-true", "bf16-true", "64-true", "64",
              "transformer-engine", "transformer-engine-float16")
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps")


def check_accelerator(name: str) -> None:
    """Refuse an accelerator this machine does not have, before the model is loaded."""
    import torch

    if name in ("gpu", "cuda") and not torch.cuda.is_available():
        raise UsageError(f"--accelerator {name}: no CUDA GPU is available here (use --accelerator cpu or auto)")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise UsageError("--accelerator mps: MPS is not available here (use --accelerator cpu or auto)")
