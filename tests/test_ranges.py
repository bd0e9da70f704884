"""Every setting's range, declared once in its class's signature (ner_zoo/ranges.py): the same one-line refusal
naming the argument from Python and from a config, for every constrained argument of every registry class."""

from __future__ import annotations

import math
import re
import typing
from typing import Annotated

import pytest
from cli_cases import ner_zoo, one_error_line

from ner_zoo.cli.config_checks import check_config
from ner_zoo.data.corpora import DATA_MODULES
from ner_zoo.errors import ConfigError
from ner_zoo.ranges import Range, class_hints, problem
from ner_zoo.testing.tiny import TINY, model_class

#: the components a config names by class_path (the zoo's own; torch's optimisers keep the fallback rules)
COMPONENTS = ["ner_zoo.modules.CharBiLSTM", "ner_zoo.modules.CharCNN", "ner_zoo.modules.intnet.IntNet",
              "ner_zoo.modules.embeddings.Words", "ner_zoo.modules.transformer.TransformerEncoder",
              "ner_zoo.modules.span_losses.FocalSpanLoss", "ner_zoo.modules.span_losses.BoundarySmoothingLoss",
              "ner_zoo.training.schedulers.InverseTimeDecay", "ner_zoo.training.schedulers.LinearWarmupDecay"]


def _classes() -> list[tuple[str, str, type]]:
    """(kind, class path, class) of every registry class: models, data modules, components."""
    from ner_zoo.dotted import resolve

    out = [("model", f"{model_class(n).__module__}.{model_class(n).__name__}", model_class(n)) for n in TINY]
    out += [("data", f"ner_zoo.data.corpora.{n}", resolve(f"ner_zoo.data.corpora.{n}")) for n in DATA_MODULES]
    out += [("data", "ner_zoo.data.hf_corpus.HFCorpus", resolve("ner_zoo.data.hf_corpus.HFCorpus"))]
    return out + [("component", p, resolve(p)) for p in COMPONENTS]


def _range(hint) -> tuple[Range, bool] | None:
    """The :class:`Range` an annotation declares and whether the value goes in a list (``Sequence[...]``)."""
    if typing.get_origin(hint) is Annotated:
        return next(((m, False) for m in hint.__metadata__ if isinstance(m, Range)), None)
    args = [a for a in typing.get_args(hint) if a is not type(None) and a is not Ellipsis]
    if typing.get_origin(hint) in (typing.Union, __import__("types").UnionType):
        found = [r for r in map(_range, args) if r is not None]
        return next((r for r in found if not r[1]), found[0] if found else None)
    if args:
        inner = _range(args[0])
        return (inner[0], True) if inner else None
    return None


def _bad(r: Range) -> list:
    out = []
    if r.low is not None:
        out.append(r.low if r.low_open else (int(r.low) - 1 if r.integer else r.low - 0.5))
    if r.high is not None:
        out.append(int(r.high) + 1 if r.integer else (r.high if r.high_open else r.high + 0.5))
    if not r.integer:
        out.append(math.nan)
    return out if r.integer else [float(v) for v in out]  # a float argument holds a float (the parser makes 1 1.0)


def _good(r: Range):
    if r.low is None:
        return 1 if r.integer else 1.0
    return r.low + 0.25 if r.low_open else (int(r.low) if r.integer else float(r.low))


CASES = [(kind, path, cls, name, wrap, bad)
         for kind, path, cls in _classes()
         for name, hint in class_hints(cls).items() if (found := _range(hint)) is not None
         for r, wrap in [found] for bad in _bad(r)]


def test_the_generator_covers_every_kind_of_class():
    kinds = {(kind, path) for kind, path, *_ in CASES}
    assert {k for k, _ in kinds} == {"model", "data", "component"}
    assert len({p for _, p in kinds}) >= len(TINY) + len(DATA_MODULES) + len(COMPONENTS) - 1  # Words: all checked
    assert len(CASES) > 150


def _build(cls: type, kind: str, **kwargs):
    """``cls(**kwargs)`` from Python, with what the class needs besides (a character count, an optimiser)."""
    import torch

    name = cls.__name__
    if name in ("CharBiLSTM", "CharCNN", "IntNet"):
        return cls(10, **kwargs)
    if name in ("InverseTimeDecay", "LinearWarmupDecay"):
        return cls(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), **kwargs)
    if name == "HFCorpus":
        return cls(data_files={"train": "train.jsonl"}, **kwargs)  # read when set up, not here
    return cls(**kwargs)


#: where a config puts each component: (the model that takes it, its argument); Words is a dataclass group
HOMES = {"CharBiLSTM": ("ner_zoo.models.BiLSTMCRF", "char_encoder"), "CharCNN": ("ner_zoo.models.BiLSTMCRF", "char_encoder"),
         "IntNet": ("ner_zoo.models.BiLSTMCRF", "char_encoder"), "Words": ("ner_zoo.models.BiLSTMCRF", "words"),
         "TransformerEncoder": ("ner_zoo.models.transformer_tagger.TransformerTagger", "encoder"),
         "FocalSpanLoss": ("ner_zoo.models.span_classifier.ExhaustiveSpanClassifier", "loss"),
         "BoundarySmoothingLoss": ("ner_zoo.models.span_classifier.ExhaustiveSpanClassifier", "loss"),
         "InverseTimeDecay": ("ner_zoo.models.BiLSTMCRF", "lr_scheduler"),
         "LinearWarmupDecay": ("ner_zoo.models.BiLSTMCRF", "lr_scheduler")}


def _config(kind: str, path: str, cls: type, name: str, value) -> tuple[dict, str]:
    """A fit config setting ``name`` of class ``path`` to ``value`` where a user's config would, and the dotted key
    of that value."""
    if kind != "component":
        return {kind: {"class_path": path, "init_args": {name: value}}}, f"{kind}.init_args.{name}"
    model, arg = HOMES[cls.__name__]
    if cls.__name__ == "Words":  # a dataclass group: its fields, no class_path
        return {"model": {"class_path": model, "init_args": {arg: {name: value}}}}, f"model.init_args.{arg}.{name}"
    extra = {"model": "tiny-bert"} if cls.__name__ == "TransformerEncoder" else {}  # read when built, not here
    node = {"class_path": path, "init_args": {**extra, name: value}}
    return {"model": {"class_path": model, "init_args": {arg: node}}}, f"model.init_args.{arg}.init_args.{name}"


#: the groups a fit config must set, in their smallest form
BASE = {"model": {"class_path": "ner_zoo.models.BiLSTMCRF"}, "data": {"class_path": "ner_zoo.data.SampleCorpus"}}


def _refusal(parser, config: dict) -> str | None:
    """What ``ner-zoo fit`` says of ``config``, through its real parser: jsonargparse's type check (one line, as the
    CLI writes it), then the CLI's checks on the parsed config (nulls, components, every range); None: accepted."""
    import json

    from jsonargparse import ArgumentError

    from ner_zoo.cli.config_checks import check_components, check_nulls
    from ner_zoo.cli.config_errors import argument_error_line

    config = {**BASE, **config}
    try:
        parsed = parser.parse_object(config, defaults=False)  # only what the config sets: what is checked here
    except ArgumentError as e:
        return argument_error_line(str(e))
    def where(key: str) -> str:  # a config given as an object has no file and line
        return "config"

    try:
        check_nulls(parsed.as_dict(), where)
        check_components(parsed.as_dict(), where)
        check_config(json.loads(parser.dump(parsed, format="json", skip_validation=True)), "fit", where)
    except ConfigError as e:
        return str(e)
    return None


@pytest.fixture(scope="module")
def fit_parser():
    from cli_cases import command_parser

    return command_parser("fit")


@pytest.mark.parametrize("kind, path, cls, name, wrap, bad", CASES,
                         ids=[f"{p.rpartition('.')[2]}-{n}-{b!r}" for _, p, _, n, _, b in CASES])
def test_an_out_of_range_value_is_the_same_one_line_from_python_and_from_a_config(fit_parser, kind, path, cls, name,
                                                                                  wrap, bad):
    value = [bad] if wrap else bad
    says = problem(class_hints(cls)[name], value)
    assert says, (path, name, value)
    expected = f"{says}, got {value!r}"
    with pytest.raises(ConfigError) as python:
        _build(cls, kind, **{name: value})
    assert str(python.value) == f"{cls.__name__}: {name} {expected}"
    config, key = _config(kind, path, cls, name, value)
    assert _refusal(fit_parser, config) == f"config: {key} {expected}"


BOUNDARY = sorted({(kind, path, cls, name, wrap) for kind, path, cls, name, wrap, _ in CASES},
                  key=lambda c: (c[1], c[3]))


@pytest.mark.parametrize("kind, path, cls, name, wrap", BOUNDARY,
                         ids=[f"{p.rpartition('.')[2]}-{n}" for _, p, _, n, _ in BOUNDARY])
def test_the_boundary_value_in_range_still_builds(fit_parser, kind, path, cls, name, wrap):
    r, _ = _range(class_hints(cls)[name])
    value = [_good(r)] if wrap else _good(r)
    assert problem(class_hints(cls)[name], value) is None
    assert _refusal(fit_parser, _config(kind, path, cls, name, value)[0]) is None  # the parser and the checks accept it
    if kind != "model" and cls.__name__ != "TransformerEncoder":  # models and the encoder: built by their batteries
        _build(cls, kind, **{name: value})


def test_a_model_with_in_range_settings_builds_from_python():
    from ner_zoo.data import SampleCorpus
    from ner_zoo.models import BiLSTMCRF
    from ner_zoo.modules.embeddings import Words

    BiLSTMCRF(vocabs=SampleCorpus().vocabs, words=Words(dim=1), lstm_hidden=1, lstm_layers=1, dropout=0.0)


def test_every_size_dropout_and_weight_argument_declares_its_range():
    """A new argument named like a size, a dropout, a loss weight or a rate gets a range type, or is listed here."""
    untyped = {"padding_idx", "num_chars", "split_seed", "sample_seed", "token_column", "label_column"}
    pattern = re.compile(r"dropout|_weight$|_dim$|hidden|_layers$|^layers$|batch_size|_lr$|^lr$|width|gamma|^eta$|"
                         r"threshold|workers|window")
    missing = sorted(f"{cls.__name__}.{name}" for _, _, cls in _classes() for name, hint in class_hints(cls).items()
                     if pattern.search(name) and name not in untyped and _range(hint) is None
                     and hint not in (bool, str) and "Literal" not in str(hint))
    assert not missing, missing


# --- through the whole command line (one parse each, no fit) --------------------------------------------------------
@pytest.fixture(scope="module")
def sample_config(tmp_path_factory):
    from cli_cases import config

    return config(tmp_path_factory.mktemp("ranges"))


def test_sample_corpus_batch_size_0_is_the_same_refusal_from_python_and_the_command_line(sample_config, capsys):
    from ner_zoo.data import SampleCorpus

    with pytest.raises(ConfigError, match="^SampleCorpus: batch_size must be a positive integer, got 0$"):
        SampleCorpus(batch_size=0)
    rc, _, err = ner_zoo(capsys, "fit", "--config", sample_config, "--data", "ner_zoo.data.SampleCorpus",
                         "--data.init_args.batch_size", "0")
    assert rc == 2 and one_error_line(err) == ("ner-zoo: error: command line: --data.init_args.batch_size must be a "
                                               "positive integer, got 0"), err[-2000:]


@pytest.mark.parametrize("key, value, says", [
    ("model.init_args.lstm_hidden", "0", "must be a positive integer, got 0"),
    ("model.init_args.dropout", "1.0", "must be a number in [0, 1), got 1.0"),
    ("model.init_args.words.dim", "0", "must be a positive integer, got 0"),
    ("model.init_args.char_encoder.init_args.filters", "-1", "must be a positive integer, got -1"),
])
def test_a_model_or_component_setting_from_the_command_line_is_one_line_naming_its_key(sample_config, capsys, key,
                                                                                       value, says):
    rc, _, err = ner_zoo(capsys, "fit", "--config", sample_config, f"--{key}", value)
    assert rc == 2 and one_error_line(err) == f"ner-zoo: error: command line: --{key} {says}", err[-2000:]


def test_a_setting_in_a_file_names_the_file_and_line(tmp_path, capsys):
    from cli_cases import config

    cfg = config(tmp_path, batch_size=0)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg)
    line = one_error_line(err)
    assert rc == 2 and re.fullmatch(rf"ner-zoo: error: {re.escape(str(cfg))}:\d+: data.init_args.batch_size must be "
                                    r"a positive integer, got 0", line), line
