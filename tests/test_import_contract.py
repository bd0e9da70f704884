"""The layering of ``ner_zoo/``, read from the import statements (AST): see ``docs/architecture.md``."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ner_zoo"
# layer -> the layers it may import (besides itself); a top-level module is its own layer
ALLOWED = {
    "errors": set(), "ranges": {"errors"}, "io": {"errors"}, "dotted": set(), "__init__": set(), "hardware": set(),
    "data": {"ranges", "errors", "io", "dotted"},
    "modules": {"ranges", "errors"},
    "metrics": {"ranges", "data", "errors"},
    "checkpoints": {"ranges", "data", "errors"},
    "training": {"ranges", "hardware", "data", "modules", "metrics", "checkpoints", "errors", "io", "dotted"},
    "models": {"ranges", "data", "modules", "training", "errors"},
    "results": {"ranges", "data", "metrics", "training", "errors", "io", "dotted"},
    "run": {"ranges", "hardware", "data", "metrics", "checkpoints", "training", "results", "errors", "io", "dotted"},
    "api": {"ranges", "hardware", "data", "modules", "metrics", "checkpoints", "training", "errors", "io", "dotted"},
    "testing": {"ranges", "hardware", "data", "modules", "metrics", "checkpoints", "training", "models", "api",
                "errors", "io", "dotted"},
    "cli": {"ranges", "hardware", "data", "modules", "metrics", "checkpoints", "training", "models", "results", "run",
            "api", "errors", "io", "dotted"},
}
NO_LIGHTNING = ("modules", "metrics")  # building blocks and metrics work without a Trainer


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def layer(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def violations(root: Path = PACKAGE) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        own = layer(".".join(rel.with_suffix("").parts))
        for lineno, name in imports(path):
            where = f"{rel}:{lineno} imports {name}"
            top = name.split(".")[0]
            if top in ("tests", "pytest") or (top in ("lightning", "pytorch_lightning") and own in NO_LIGHTNING):
                bad.append(where)
            if top != "ner_zoo" or layer(name) == own:
                if own == "models" and name.startswith("ner_zoo.models.") and rel.name != "__init__.py":
                    bad.append(f"{where} (a model file imports another model file)")
                continue
            if layer(name) not in ALLOWED.get(own, set()):
                bad.append(f"{where} ({own} may import {sorted(ALLOWED.get(own, set()))})")
    return bad


def test_layers_hold():
    assert violations() == []


def test_contract_catches_a_breach(tmp_path):
    pkg = tmp_path / "ner_zoo"
    for sub, text in {"data/a.py": "from ner_zoo.modules.x import y\n", "models/b.py": "import ner_zoo.models.c\n",
                      "metrics/m.py": "import lightning.pytorch\n", "training/t.py": "from ner_zoo.cli import main\n",
                      "modules/ok.py": "from ner_zoo.errors import E\nimport torch\n"}.items():
        (pkg / sub).parent.mkdir(parents=True, exist_ok=True)
        (pkg / sub).write_text(text)
    found = violations(pkg)
    assert [v.split(":")[0] for v in found] == ["ner_zoo/data/a.py", "ner_zoo/metrics/m.py", "ner_zoo/models/b.py",
                                                "ner_zoo/training/t.py"], found
