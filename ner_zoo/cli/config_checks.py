"""Config values checked at the edge: after parsing, before any class is built or data read.

A zoo class's argument declares its own range in its signature (:mod:`ner_zoo.ranges`): :func:`check_ranges`
checks every ``class_path``/``init_args`` value (nested components and dataclass groups such as ``words`` too)
against that one declaration, the same check the class makes when built from Python. What no annotation of ours can
say is the fallback here: the settings of classes we do not own (the Trainer, torch's optimisers, a logger,
``seed_everything``), the tag-scheme names, and any other float under ``model.``/``data.`` must be finite. A
violation is one :class:`~ner_zoo.errors.ConfigError` line naming the key and where it was set (``file:line`` or
the command line). Duplicate keys in a YAML file (which YAML resolves silently to the last value) are refused here
too.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from ner_zoo.dotted import leaves, resolve
from ner_zoo.errors import ConfigError


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def finite(v: Any) -> str | None:
    return None if _num(v) else "must be a finite number"


def positive_int(v: Any) -> str | None:
    return None if _int(v) and v >= 1 else "must be a positive integer"


def optional_positive_int(v: Any) -> str | None:
    return None if v is None else positive_int(v)


def non_negative_int(v: Any) -> str | None:
    return None if _int(v) and v >= 0 else "must be an integer >= 0"


def finite_non_negative(v: Any) -> str | None:
    return None if _num(v) and v >= 0 else "must be a finite number >= 0"


def non_negative_finite(v: Any) -> str | None:
    return None if v is None or (_num(v) and v >= 0) else "must be a finite number >= 0"


def epochs(v: Any) -> str | None:  # Lightning: None (default), -1 (no limit) or a count
    return None if v is None or (_int(v) and v >= -1) else "must be a non-negative integer, or -1 for no limit"


def validation_interval(v: Any) -> str | None:  # Lightning: a fraction of the epoch, or every N training batches
    ok = v is None or (_int(v) and v >= 1) or (isinstance(v, float) and 0 < v <= 1)
    return None if ok else "must be a fraction in (0, 1] of an epoch or a whole number of batches >= 1"


def seed(v: Any) -> str | None:  # Lightning: true/None draws one; numpy's range
    ok = v is None or isinstance(v, bool) or (_int(v) and 0 <= v < 2 ** 32)
    return None if ok else "must be an integer in [0, 4294967295] (or true to draw one)"


def tag_scheme(v: Any) -> str | None:
    from ner_zoo.data.tagging import TagScheme

    try:
        TagScheme.parse(str(v))
    except ValueError as e:
        return str(e).replace(f"unknown tag scheme {v!r}; ", "is not a known tag scheme; ")
    return None


#: (dotted key suffix, check) for the settings of classes that are not ours (the Trainer, torch's optimisers, a
#: logger) and the tag-scheme names; the first rule whose suffix matches a key applies. A zoo class's ranges are in
#: its signature (:mod:`ner_zoo.ranges`), never here.
RULES: list[tuple[str, Callable[[Any], str | None]]] = [
    ("data.init_args.tag_scheme", tag_scheme),
    ("data.init_args.file_scheme", lambda v: None if v in (None, "") else tag_scheme(v)),  # unset: detected
    ("optimizer.init_args.lr", finite_non_negative),
    ("optimizer.init_args.weight_decay", non_negative_finite),
    ("trainer.max_epochs", epochs),
    ("trainer.min_epochs", epochs),
    ("trainer.max_steps", epochs),
    ("trainer.gradient_clip_val", non_negative_finite),
    ("trainer.accumulate_grad_batches", positive_int),
    ("trainer.val_check_interval", validation_interval),
    ("trainer.check_val_every_n_epoch", optional_positive_int),
    ("trainer.log_every_n_steps", lambda v: None if v is None else non_negative_int(v)),  # 0: log no step
    ("logger.init_args.flush_logs_every_n_steps", positive_int),  # CSVLogger: step % n
    ("seed_everything", seed),
]


def located(key: str, where: Callable[[str], str]) -> str:
    """``command line: --key`` or ``file:line: key``: where ``key`` was set, spelled as it was given there."""
    place = where(key)
    return f"{place}: --{key}" if place == "command line" else f"{place}: {key}"


def check_config(config: dict, subcommand: str | None, where: Callable[[str], str]) -> None:
    """Raise a one-line :class:`ConfigError` for the first value in ``config`` (a plain dict of one subcommand)
    that breaks a rule; ``where(key)`` says where the key was set."""
    check_ranges(config, where)
    for key, value in leaves(config):
        rule = next((rule for suffix, rule in RULES if key == suffix or key.endswith("." + suffix)), None)
        if rule is None and key.startswith(("model.", "data.")) and isinstance(value, float):
            rule = finite  # YAML's .nan / .inf reach a float argument; no model or data argument means them
        problem = rule(value) if rule is not None else None
        if problem:
            raise ConfigError(f"{located(key, where)} {problem}, got {value!r}")
    trainer = config.get("trainer") or {}
    if subcommand == "fit":
        for key in ("max_epochs", "max_steps"):
            if trainer.get(key) == 0:
                raise ConfigError(f"{located(f'trainer.{key}', where)} 0 trains nothing; fit needs at least "
                                  "one epoch (to test a checkpoint use `ner-zoo test --ckpt_path`)")
    accelerator = str(trainer.get("accelerator") or "auto")
    if accelerator in ("gpu", "cuda", "mps"):
        from ner_zoo.cli.args import check_accelerator
        from ner_zoo.errors import UsageError

        try:
            check_accelerator(accelerator)
        except UsageError as e:
            raise ConfigError(f"{where('trainer.accelerator')}: trainer.accelerator {accelerator}: "
                              f"{str(e).split(': ', 1)[1]}") from None


def check_ranges(config: dict, where: Callable[[str], str]) -> None:
    """Each value given to a zoo class in ``config`` (``class_path``/``init_args`` nodes at any depth, and the
    fields of a dataclass argument such as ``words``) is in the range its annotation declares
    (:mod:`ner_zoo.ranges`), else one :class:`ConfigError` line naming the key and where it was set."""
    from ner_zoo.ranges import class_hints, nested_class, problem

    def check_class(cls: type, args: dict, path: str) -> None:
        declared = class_hints(cls)
        for arg, given in args.items():
            found = problem(declared[arg], given) if arg in declared else None
            if found:
                raise ConfigError(f"{located(f'{path}.{arg}', where)} {found}, got {given!r}")
            group = nested_class(cls, arg) if isinstance(given, dict) and "class_path" not in given else None
            if group is not None:
                check_class(group, given, f"{path}.{arg}")

    def visit(node: Any, path: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                visit(item, f"{path}.{i}")
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("class_path"), str) and isinstance(node.get("init_args"), dict):
            try:
                cls = resolve(node["class_path"])
            except Exception:  # jsonargparse names an unknown class itself
                cls = None
            if isinstance(cls, type):
                check_class(cls, node["init_args"], f"{path}.init_args" if path else "init_args")
        for key, value in node.items():
            visit(value, f"{path}.{key}" if path else str(key))

    visit(config, "")


def _takes_none(cls: type, name: str) -> bool:
    """Whether ``cls(name=None)`` is declared: the first ``__init__`` along the MRO that names the parameter allows
    None (``Optional``, ``Any``, no annotation, or a None default); True when none names it (``**kwargs`` beyond)."""
    import inspect
    import types
    import typing

    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            param = inspect.signature(init).parameters.get(name)
        except (TypeError, ValueError):
            continue
        if param is None:
            continue
        if param.default is None:
            return True
        try:
            hint = typing.get_type_hints(init).get(name, typing.Any)
        except Exception:  # an annotation that does not resolve here: not ours to judge
            return True
        if hint is typing.Any or hint is type(None):
            return True
        return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
    return True


def check_nulls(config: dict, where: Callable[[str], str]) -> None:
    """A ``null`` given for an argument of a class in the config (``class_path``/``init_args``, nested components
    too) that does not take None is one :class:`ConfigError` line naming the key (jsonargparse lets it through in
    subclass mode, and the class then fails on it far from the config)."""
    def visit(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        cls = None
        if isinstance(node.get("class_path"), str) and isinstance(node.get("init_args"), dict):
            try:
                cls = resolve(node["class_path"])
            except Exception:  # jsonargparse names an unknown class itself
                cls = None
        for key, value in node.items():
            sub = f"{path}.{key}" if path else str(key)
            if key == "init_args" and isinstance(cls, type) and isinstance(value, dict):
                for arg, given in value.items():
                    if given is None and not _takes_none(cls, arg):
                        raise ConfigError(f"{located(f'{sub}.{arg}', where)} cannot be null ({cls.__name__} needs a "
                                          "value)")
            visit(value, sub)

    visit(config, "")


def check_components(config: dict, where: Callable[[str], str]) -> None:
    """A component (``class_path``/``init_args``) whose ``class_path`` names no class is one :class:`ConfigError`
    line naming the key. jsonargparse turns a mapping without a class_path (``--model.init_args.lr_scheduler {}``)
    for an argument that had no class before into ``class_path: typing.Union``, which failed at instantiation
    with a page-long traceback; a mapping without one for an argument that had a class only changes its
    ``init_args`` (jsonargparse's merge), so that stays allowed."""
    def visit(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        class_path = node.get("class_path")
        if class_path is not None:
            try:
                target = resolve(class_path)
            except Exception:  # noqa: BLE001 (jsonargparse names a class path that does not import itself)
                target = None
            if not isinstance(target, type) or str(class_path).startswith("typing."):
                given = "a mapping without a class_path" if str(class_path).startswith("typing.") else \
                    f"class_path {class_path!r}, not a class"
                raise ConfigError(f"{located(path, where)} needs a class_path naming a class "
                                  f"({{class_path: ..., init_args: {{...}}}}), got {given}")
        for key, value in node.items():
            visit(value, f"{path}.{key}" if path else str(key))

    visit(config, "")


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key repeated in one mapping (plain YAML keeps the last value silently)."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(f"{loader.name}:{key_node.start_mark.line + 1}: key {key!r} is repeated (first on line "
                              f"{seen[key]}); YAML would keep only the last value")
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _load_unique(text: str, name: str) -> object:
    """The YAML document ``text``, refusing a repeated key (``name`` names the source in the message); None for
    text that is not valid YAML (``config_errors.yaml_syntax_line`` names that)."""
    loader = _UniqueKeyLoader(text)
    loader.name = name
    try:
        return loader.get_single_data()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def check_yaml_files(files: Sequence[str]) -> None:
    """Each ``--config`` file exists, is not a folder, and has no repeated key (nested files included, when a
    value names one); one :class:`ConfigError` line otherwise."""
    seen: set[Path] = set()
    todo = list(files)
    while todo:
        f = todo.pop(0)
        path = Path(f)
        inline = not path.exists() and (f.lstrip().startswith(("{", "[")) or "\n" in f or ": " in f)
        if inline:  # jsonargparse also takes the config itself as the value: check its keys, nothing to open
            _load_unique(f, "--config")
            continue
        if not path.exists():
            raise ConfigError(f"{f}: config file not found")
        if path.is_dir():
            raise ConfigError(f"{f}: is a directory, expected a YAML config file")
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{f}: cannot read the config file ({e})") from None
        data = _load_unique(text, str(f))
        for key, value in leaves(data) if isinstance(data, dict) else ():
            if isinstance(value, str) and value.endswith((".yaml", ".yml")):  # a nested config file
                nested = (path.parent / value) if not Path(value).is_absolute() else Path(value)
                if nested.resolve() == real:
                    raise ConfigError(f"{f}: {key}: the config file includes itself")
                if key in ("config", "model", "data", "trainer") or key.endswith((".config", "init_args")):
                    if not nested.exists() and not Path(value).exists():
                        raise ConfigError(f"{f}: {key}: config file {value!r} not found")
                    todo.append(str(nested if nested.exists() else value))
