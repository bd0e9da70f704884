"""The configs shipped inside the package (``ner_zoo/configs/``), found by name from any working directory.

One rule: a ``--config`` value that is not a file is looked up among the packaged configs, with or without a
leading ``configs/`` and with or without ``.yaml``. So ``--config baselines/conll2003``, ``--config
baselines/conll2003.yaml`` and ``--config configs/baselines/conll2003.yaml`` all name the packaged copy, and a
file of that name in the working directory wins. ``configs/`` at the root of a source checkout is a link to
the packaged folder, so the README's paths work in both places. ``ner-zoo configs`` lists them.
"""

from __future__ import annotations

from pathlib import Path

#: the packaged configs (real files; the checkout's ``configs/`` links here)
PACKAGED = Path(__file__).resolve().parents[1] / "configs"
_FLAGS = ("-c", "--config")


def packaged_config(name: str) -> Path | None:
    """The packaged config ``name`` names (see the module's rule), or ``None``."""
    rel = name.replace("\\", "/")
    rel = rel[2:] if rel.startswith("./") else rel
    if not rel or Path(rel).is_absolute() or ".." in Path(rel).parts:
        return None
    if rel.startswith("configs/"):
        rel = rel[len("configs/"):]
    for candidate in (rel, rel + ".yaml"):
        path = PACKAGED / candidate
        if path.is_file() and PACKAGED in path.resolve().parents:
            return path
    return None


def resolve_config(value: str) -> str:
    """``value`` itself when it is a file (or not a packaged name), else the packaged config's path."""
    if Path(value).exists():
        return value
    found = packaged_config(value)
    return str(found) if found is not None else value


def resolve_config_args(args: list[str]) -> list[str]:
    """The command line with every ``--config``/``-c`` value resolved by :func:`resolve_config`."""
    out, expect = [], False
    for a in args:
        if expect:
            out.append(resolve_config(a))
            expect = False
        elif a in _FLAGS:
            out.append(a)
            expect = True
        elif a.startswith("--config="):
            out.append("--config=" + resolve_config(a[len("--config="):]))
        else:
            out.append(a)
    return out


def packaged_names() -> list[str]:
    """Every packaged config, by the name ``--config`` takes (``baselines/conll2003``)."""
    return sorted(str(p.relative_to(PACKAGED).with_suffix("")) for p in PACKAGED.rglob("*.yaml"))
