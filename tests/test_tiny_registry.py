"""The tiny registry (``ner_zoo/testing/tiny.py``) is the one list of the zoo's models: every model class of
``ner_zoo/models/`` is in it, and every entry has its battery. The suites that run every model (reliability,
long inputs, the config audit, model use) read ``TINY``, so a model cannot be forgotten by one of them."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from ner_zoo.testing.tiny import TINY, model_class, model_module, unregistered, zoo_modules

TESTS = Path(__file__).resolve().parent

FORGOTTEN = '''
from ner_zoo.training.hosting import hosts
from ner_zoo.training.tagger import SequenceTagger


class ForgottenNet(SequenceTagger):
    def emissions(self, batch):
        raise NotImplementedError


__getattr__ = hosts(ForgottenNet)
'''


def test_every_zoo_model_is_in_the_tiny_registry():
    assert unregistered() == [], "add these models to TINY in ner_zoo/testing/tiny.py (docs/adding_a_model.md)"


def test_a_model_missing_from_the_registry_is_named(tmp_path):
    """A model file dropped into ner_zoo/models/ without a registry entry: the test above would fail, naming it."""
    path = tmp_path / "forgotten.py"
    path.write_text(FORGOTTEN)
    try:
        module = model_module(path)
        assert unregistered(zoo_modules() + [module]) == ["ner_zoo.models.forgotten.Forgotten"]
    finally:
        sys.modules.pop("ner_zoo.models.forgotten", None)


def test_long_input_suites_cover_the_registry():
    """The reliability suite takes the plain taggers, the long-input suite the rest: each model is in one."""
    from test_long_documents import NAMES
    from test_reliability import TAGGERS

    assert sorted(TAGGERS + NAMES) == sorted(TINY) and not set(TAGGERS) & set(NAMES)
    assert TAGGERS and NAMES, "one suite is empty: the split tests nothing there"  # (hosts are not taggers)


def _registry_calls(tree: ast.Module) -> set[str]:
    """The first arguments of every call of ``tiny_model`` (under any alias) in a test file."""
    aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module == "ner_zoo.testing.tiny" for a in node.names if a.name == "tiny_model"}
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in aliases
            and node.args and isinstance(node.args[0], ast.Constant)}


@pytest.mark.parametrize("name", TINY)
def test_every_registry_model_has_its_battery(name):
    """``tests/test_model_<name>.py`` subclasses the battery and builds the model from the registry."""
    path = TESTS / f"test_model_{name}.py"
    assert path.is_file(), f"{name}: no {path.name}"
    tree = ast.parse(path.read_text())
    batteries = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                 and any(isinstance(b, ast.Name) and b.id == "ModelBattery" for b in node.bases)]
    assert batteries, f"{path.name} has no ModelBattery subclass"
    assert name in _registry_calls(tree), f"{path.name} never builds tiny_model({name!r})"



def test_every_zoo_model_is_exported_and_in_the_readme():
    """A model class is exported from ``ner_zoo.models`` and has a row in the README's model table."""
    import ner_zoo.models

    readme = (TESTS.parent / "README.md").read_text()
    for name in TINY:
        cls = model_class(name)
        assert getattr(ner_zoo.models, cls.__name__, None) is cls and cls.__name__ in ner_zoo.models.__all__, name
        assert f"| `{cls.__name__}` |" in readme, f"README.md: no row for {cls.__name__} in the model table"
