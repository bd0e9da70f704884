"""No import circle inside ``ner_zoo``: the graph of its modules' imports of each other, read from the AST (every
``import`` statement, at module level or inside a function, except those under ``if TYPE_CHECKING``), is acyclic.
A lazy import inside a function still ties the two modules together, so it counts."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ner_zoo"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node, except the bodies of ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            test = child.test if isinstance(child, ast.If) else None
            if test is not None and "TYPE_CHECKING" in ast.unparse(test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the ``ner_zoo`` modules it imports (``from a import b`` is ``a.b`` when that is a module)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in files and t != name}
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan), each as a path."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_lazy_circle(tmp_path):
    pkg = tmp_path / "ner_zoo"
    (pkg / "results").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "results" / "__init__.py").write_text("")
    (pkg / "results" / "a.py").write_text("from ner_zoo.results.b import f\n")
    (pkg / "results" / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "results" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from ner_zoo.results import a\n")
    graph = import_graph(pkg)
    assert graph["ner_zoo.results.b"] == {"ner_zoo.results.a"} and graph["ner_zoo.results.c"] == set()
    assert cycles(graph) == [["ner_zoo.results.a", "ner_zoo.results.b"]]


def test_no_import_circle_in_ner_zoo():
    """Not even through imports inside functions."""
    assert cycles(import_graph()) == []


def test_no_import_circle_at_module_level():
    """Counting only the imports at module level (what an import cycle breaks at import time)."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
        graph[module_name(path)] = tree, top
    full = import_graph()
    module_level = {name: {t for t in full[name] if _imported_at_top(graph[name][1], t)} for name in full}
    assert cycles(module_level) == []


def _imported_at_top(top: ast.Module, target: str) -> bool:
    for node in top.body:
        names = [a.name for a in node.names]
        if isinstance(node, ast.Import) and target in names:
            return True
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == target or any(f"{node.module}.{n}" == target for n in names)):
            return True
    return False
