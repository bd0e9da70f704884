"""One line for a config key that a class does not accept: where it is (``file:line`` or the command line) and,
for a key renamed by the config vocabulary (``docs/configs.md``), its new name; one line for a config file that
is not valid YAML.

jsonargparse reports such a key inside a many-line ``Union`` message that dumps the whole section; this reads
the key path and the class out of it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import yaml

from ner_zoo.dotted import resolve, short_name

_OPTION = re.compile(r"Option '(\w+)' is not accepted")
_KEY = re.compile(r'Parser key "([\w.]+)"')
_CLASS = re.compile(r"class_path '([\w.]+)'")
_LINE = re.compile(r"^(\s*)([A-Za-z_][\w.]*)\s*:")


def option_values(args: Sequence[str], *names: str) -> list[str]:
    """The values given to option ``names`` on a command line (``--x v`` or ``--x=v``), in order."""
    values = []
    for i, a in enumerate(args):
        if a in names and i + 1 < len(args):
            values.append(args[i + 1])
        elif a.startswith("--") and a.partition("=")[0] in names and "=" in a:
            values.append(a.partition("=")[2])
    return values


def config_files(args: Sequence[str]) -> list[str]:
    """The ``--config``/``-c`` files of a command line, in order."""
    return option_values(args, "--config", "-c")


def find_key(path: str, text: str) -> int | None:
    """The line number (1-based) of the block-style YAML key ``path`` (dotted) in ``text``, or None."""
    want, stack = path.split("."), []
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if m is None or line.lstrip().startswith("#"):
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group(2)))
        if [k for _, k in stack] == want:
            return n
    return None


def renamed(class_path: str, option: str) -> str | None:
    """The new name of ``option`` when ``class_path``'s class renamed it (``checkpoints/migrations.py``)."""
    try:
        cls = resolve(class_path)
    except (ImportError, AttributeError):
        return None
    from ner_zoo.checkpoints.migrations import renamed_keys

    return renamed_keys(cls).get(option)


def unknown_key_line(message: str, args: Sequence[str]) -> str | None:
    """The one-line explanation of jsonargparse's ``message`` when it rejects an unknown key, else None."""
    option = _OPTION.search(message)
    if option is None:
        return None
    head = message[: option.start()]
    keys, classes = _KEY.findall(head), _CLASS.findall(head)
    if not keys:
        return None
    path = ".init_args.".join(keys) + ".init_args." + option.group(1)
    owner = classes[-1] if len(classes) == len(keys) else None  # the class whose init_args hold the key
    what = f"{short_name(owner)} has no option '{option.group(1)}'" if owner else "unknown key"
    new = renamed(owner, option.group(1)) if owner else None
    if new:
        what += f" (renamed '{new}', see docs/configs.md)"
    return f"{where_set(path, args)}: {path}: {what}"


def where_set(path: str, args: Sequence[str]) -> str:
    """Where the dotted key ``path`` was given: ``command line``, ``file:line`` of the last config file that sets
    it, or ``config``."""
    if f"--{path}" in args or any(a.startswith(f"--{path}=") for a in args):
        return "command line"
    parts = path.split(".")
    for n in range(len(parts) - 1, 0, -1):  # inside a JSON/YAML value given on the command line
        if any(parts[-1] in value for value in option_values(args, "--" + ".".join(parts[:n]))):
            return "command line"
    for f in reversed(config_files(args)):
        try:
            line = find_key(path, Path(f).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if line is not None:
            return f"{f}:{line}"
    return "config"


_COMPONENT = re.compile(r"Callable\[\[|import path|subclass spec|subclass of|Subtypes: \[<class '[\w.]+\.[A-Z]")


def _component(tail: str) -> str | None:
    """What a component argument (a class given by ``class_path``, jsonargparse's subclass mode) takes, from its
    error (``expected a class_path naming an Optimizer``), or None when ``tail`` is not about one."""
    if not _COMPONENT.search(tail):
        return None
    spec = re.search(r"Callable\[\[[^\]]*\], (.*)", tail) or re.search(r"Subtypes: \[(<class '[\w.]+'>)", tail) \
        or re.search(r"subclass of ([\w.]+)", tail)
    names = [n for n in re.findall(r"\b(?:[a-z_]\w*\.)+([A-Z]\w*)", spec.group(1)) if n not in ("Union", "Optional")] \
        if spec else []
    kinds = " or ".join(dict.fromkeys(names))
    what = f"{'an' if kinds[0] in 'AEIOU' else 'a'} {kinds}" if kinds else "a class"
    nullable = bool(re.search(r"Subtypes: \[.*<class 'NoneType'>\]", tail)) and "Callable" in tail
    path = "Expected a path but" in tail  # jsonargparse also reads a config file there
    return (f"expected a class_path naming {what} ({{class_path: ..., init_args: {{...}}}})"
            + (" or a config file" if path else "") + (" or null" if nullable else ""))


def argument_error_line(message: str) -> str:
    """jsonargparse's many-line message for any other bad argument, as one line: the key path (its nested
    ``Parser key`` names), the expected type and the given value."""
    keys = _KEY.findall(message)
    path = ".init_args.".join(keys)
    tail = message[message.rfind('Parser key "'):] if keys else message
    tail = tail.split(":", 1)[1] if keys else tail
    lines = [ln.strip(" -") for ln in tail.splitlines() if ln.strip(" -")]
    unknown = re.search(r"Problem with given class_path '([\w.]+)':\s*Option '(\w+)[\w.]*' is not accepted", tail)
    if unknown:  # a component given to a class that has no such argument
        return f"{path}.init_args.{unknown.group(2)}: {short_name(unknown.group(1))} has no option " \
               f"'{unknown.group(2)}'"
    types = [t for t in re.findall(r"Expected an? <class '([\w.]+)'>", tail) if t != "NoneType"]
    component = None if types else _component(tail)  # a plain type (float, int) says it better
    reason = component or (f"expected {' or '.join(types)}" if types else lines[0] if lines else "invalid value")
    value = re.search(r"Given value: (.*?)(?:\. Got value|$)", message, re.M) or \
        re.search(r"Got value: (.*)$", message, re.M)
    text = f"{path}: {reason}" if path else reason
    if value and (types or component):
        given = value.group(1)
        nested = re.fullmatch(r"NestedArg\(key=.*, val=(.*)\)", given)
        text += f", got {nested.group(1) if nested else given}"
    return text[:400]


def yaml_syntax_line(args: Sequence[str]) -> str | None:
    """``file:line: not valid YAML: problem`` for the first ``--config`` file that does not parse, else None
    (jsonargparse names such a file ``<unicode string>``)."""
    for f in config_files(args):
        try:
            yaml.safe_load(Path(f).read_text(encoding="utf-8"))
        except OSError:
            continue
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{f}:{mark.line + 1}" if mark is not None else f
            return f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}"
    return None
