"""Paper-config audit: every YAML under ``configs/`` parses with the real CLI parser and its model builds.

Parsing goes through ``NERZooCLI``'s parser (built once), so unknown keys and wrong types in model, data,
trainer and checkpoint sections fail here. The model is then instantiated with tiny substitutions: the
vocabularies of the bundled sample corpus (with the task of the config's data class), ``embeddings: null`` / ``words.vectors: null``
instead of GloVe and the tiny random BERT of ``tests/tiny_bert.py`` (12 layers) for every transformer ``model`` key.
Ablation files (``<paper>/ablations/*.yaml``) are composed over ``<paper>/conll2003.yaml`` (or the first
config of that folder); ``logging/*.yaml`` over ``configs/quickstart.yaml``. Real corpora are never read.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
import torch
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

from ner_zoo.testing.tiny import TINY, model_class

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
SKIP_DIRS = ("sweeps", "experiments")  # not `ner-zoo fit` configs (W&B sweep, run matrix)


def config_files() -> list[Path]:
    return sorted(p for p in CONFIGS.rglob("*.yaml") if p.relative_to(CONFIGS).parts[0] not in SKIP_DIRS)


def compose(path: Path) -> list[Path]:
    """The ``--config`` files that make a complete run config out of ``path``."""
    rel = path.relative_to(CONFIGS)
    if rel.parts[0] == "logging":
        return [CONFIGS / "quickstart.yaml", path]
    if path.parent.name == "ablations":
        folder = path.parent.parent
        parent = folder / "conll2003.yaml"
        if not parent.exists():
            parent = sorted(folder.glob("*.yaml"))[0]
        return [parent, path]
    return [path]


@pytest.fixture(scope="session")
def deep_tiny_bert(tiny_bert_dir, tmp_path_factory) -> Path:  # noqa: F811
    """The tiny BERT with 12 layers (hidden 32), so configs that pick a layer of a base model stay valid."""
    import shutil

    from transformers import BertConfig, BertModel

    out = tmp_path_factory.mktemp("deep_tiny_bert")
    for f in tiny_bert_dir.iterdir():
        if f.is_file() and not f.name.startswith(("model", "config")):
            shutil.copy(f, out / f.name)  # tokenizer files
    config = BertConfig.from_pretrained(tiny_bert_dir)
    config.num_hidden_layers = 12
    torch.manual_seed(0)
    BertModel(config).save_pretrained(out)
    return out


@lru_cache(maxsize=1)
def cli_parser():
    """The parser of ``ner-zoo`` (what ``fit --config`` uses), built once without instantiating anything."""
    from ner_zoo.cli.lightning_cli import NERZooCLI, cli_in_process

    class ParseOnly(NERZooCLI):
        def instantiate_classes(self) -> None:
            pass

    return cli_in_process(["--config", str(CONFIGS / "quickstart.yaml")], ParseOnly, run=False).parser


def parse(files: list[Path], extra: list[str] = ()) -> dict:
    args = tuple(a for f in files for a in ("--config", str(f))) + tuple(str(a) for a in extra)
    return json.loads(_parsed(args))  # a fresh dict per caller


@lru_cache(maxsize=None)
def _parsed(args: tuple[str, ...]) -> str:
    """One parse per distinct command line (run matrices repeat theirs across seeds and files): ~0.3 s each."""
    parser = cli_parser()
    cfg = parser.parse_args(list(args))  # validates; the dump need not validate again (a third of the time)
    return parser.dump(cfg, format="json", skip_validation=True)


@lru_cache(maxsize=None)
def tiny_vocabs(task: str, scheme: str) -> dict:
    """Vocabularies of the sample corpus, shaped like those of a ``task`` corpus."""
    from ner_zoo.data.corpora import SampleCorpus
    from ner_zoo.data.datamodule import Vocabularies
    from ner_zoo.data.vocab import Vocab

    dm = SampleCorpus(tag_scheme=scheme, max_sentences=60)
    v = dm.vocabularies
    if task == "pos":
        labels = ["DT", "IN", "JJ", "NN", "NNP", "VBD", "."]
        v = Vocabularies("pos", None, labels, Vocab.labels(labels, name="tag"), v.words, v.chars, tag_column="pos")
    elif task == "nested_ner":
        v = Vocabularies("nested_ner", None, v.labels, None, v.words, v.chars)
    elif task == "chunk":
        v = Vocabularies("chunk", v.scheme, v.labels, v.tags, v.words, v.chars)
    return v.to_dict()


def substitute(node, transformer_dir: str):
    """Tiny stand-ins: no pretrained vectors, the tiny BERT for every transformer ``model`` string."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("embeddings", "vectors"):  # the data module's and the models' words.vectors
                out[key] = None
            elif key == "model" and isinstance(value, str):
                out[key] = transformer_dir
            else:
                out[key] = substitute(value, transformer_dir)
        return out
    if isinstance(node, list):
        return [substitute(v, transformer_dir) for v in node]
    return node


def data_task(config: dict) -> tuple[str, str]:
    data = config["data"]
    module, _, name = data["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    return cls.task, data.get("init_args", {}).get("tag_scheme") or "bioes"


@lru_cache(maxsize=1)
def model_parser():
    """A parser of one ``model`` (any NERModule subclass), built once: it holds no state between parses."""
    from jsonargparse import ArgumentParser

    from ner_zoo.training.base import NERModule

    parser = ArgumentParser(exit_on_error=False)
    parser.add_subclass_arguments(NERModule, "model", required=True)
    return parser


def tiny_model_config(config: dict, transformer_dir: str) -> dict:
    """The ``model`` section of ``config`` with the tiny substitutions and the sample vocabularies."""
    model = substitute(copy.deepcopy(config["model"]), transformer_dir)
    model.setdefault("init_args", {})["vocabs"] = tiny_vocabs(*data_task(config))
    return model


def instantiate_model(config: dict, transformer_dir: str, model: dict | None = None):
    model = model or tiny_model_config(config, transformer_dir)
    parser = model_parser()
    instantiate = getattr(parser, "instantiate", None) or parser.instantiate_classes  # renamed in jsonargparse 4.49
    return instantiate(parser.parse_object({"model": model})).model


@lru_cache(maxsize=None)
def _sample_sentences(n: int) -> tuple:
    from ner_zoo.data.corpora import SampleCorpus

    return tuple(SampleCorpus(max_sentences=n).sentences("train"))


def sample_sentences(n: int) -> list:
    """The first training sentences of the sample corpus (read once; a fresh copy per caller)."""
    return copy.deepcopy(list(_sample_sentences(n)))


def sample_batch(model):
    return model.collate(list(enumerate(sample_sentences(4))))


#: the tiny model configs (after substitution, with their vocabularies) already built and checked in this test
#: process: many paper configs differ only in data, trainer or optimiser keys, which the parse above checks, and
#: give the same tiny model; building that model again checks nothing new
_BUILT_MODELS: set[str] = set()


def test_every_config_is_audited():
    files = config_files()
    names = {str(p.relative_to(CONFIGS)) for p in files}
    assert "quickstart.yaml" in names and "baselines/conll2003.yaml" in names


@pytest.mark.parametrize("name", TINY)
def test_every_registry_model_has_a_config(name):
    """Each model of the tiny registry has a config here, so the audit below parses and builds it."""
    paths = [(load_yaml(p).get("model") or {}).get("class_path") for p in config_files()
             if p.parent.name != "ablations"]
    assert any(path and resolve(path) is model_class(name) for path in paths), f"no config under configs/ builds {name}"


@pytest.mark.parametrize("path", config_files(), ids=lambda p: str(p.relative_to(CONFIGS)))
def test_config_parses_and_model_builds(path, deep_tiny_bert):
    """The audit, and ``logging/wandb.yaml`` composed last over the config (one parse for both: the logging
    file sets only the trainer's loggers, which the audit does not read)."""
    files = compose(path)
    if path.parent.name == "logging":
        audit_config(files, deep_tiny_bert)
    else:
        audit_config(files, deep_tiny_bert, then=[CONFIGS / "logging" / "wandb.yaml"])


def load_yaml(path: Path) -> dict:
    import yaml

    data = yaml.safe_load(path.read_text())
    return data if isinstance(data, dict) else {}


def resolve(class_path: str) -> type:
    module, _, name = class_path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def audit_config(files: list[Path], deep_tiny_bert: Path, then: list[Path] = ()) -> None:
    """The audit of one run config (``files`` composed): it parses with the CLI parser, keeps the house
    conventions, and its model builds on the sample vocabularies and computes a finite loss. With ``then``
    (``logging/wandb.yaml``), that file is composed last and its loggers checked too (:func:`check_loggers`)."""
    assert files[-1].read_text().startswith("# "), "the first line says what the config reproduces"
    config = parse([*files, *then])
    if then:
        check_loggers(config)
    assert config["model"]["class_path"].startswith("ner_zoo.models.")
    assert config["data"]["class_path"].startswith("ner_zoo.data.")
    assert config["checkpoint"]["monitor"] == "val/f1"
    tiny = tiny_model_config(config, str(deep_tiny_bert))
    key = json.dumps(tiny, sort_keys=True, default=str)
    if key in _BUILT_MODELS:  # this very model was built and computed a finite loss for an earlier config
        return
    torch.manual_seed(0)
    model = instantiate_model(config, str(deep_tiny_bert), tiny)
    assert type(model).__name__ == config["model"]["class_path"].rsplit(".", 1)[-1]
    assert sum(p.numel() for p in model.parameters()) > 0
    if model.task == "pos":  # the sample corpus has no POS column: instantiation only
        _BUILT_MODELS.add(key)
        return
    model.prepare(sample_sentences(20), {})  # label vectors, memory index (HCR)
    loss = model.compute_loss(sample_batch(model))
    assert loss.ndim == 0 and torch.isfinite(loss)
    _BUILT_MODELS.add(key)


def matrix_entries() -> list[tuple[str, dict]]:
    """The runs of every run matrix (``configs/experiments/*.yaml`` files holding a list)."""
    import yaml

    entries = []
    for path in sorted((CONFIGS / "experiments").glob("*.yaml")):
        runs = yaml.safe_load(path.read_text())
        if isinstance(runs, list):
            entries += [(f"{path.stem}:{run['name']}", run) for run in runs]
    return entries


@pytest.mark.parametrize("name,run", matrix_entries(), ids=[n for n, _ in matrix_entries()])
def test_run_matrix_entry_parses(name, run):
    """Each run of a matrix (its configs, recipe overlays and extra arguments) is a valid ``fit`` config."""
    config = parse([ROOT / c for c in run["configs"]], run.get("args", []))
    assert config["model"]["class_path"].startswith("ner_zoo.models.")


def fit_error(capsys, *args: str) -> tuple[int, str]:
    """``ner-zoo fit ARGS --print_config`` in this process: (exit code, stderr)."""
    import sys

    from ner_zoo.cli.main import main

    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        rc = main(["fit", *map(str, args), "--print_config"])
    except SystemExit as e:
        rc = e.code
    finally:
        sys.argv = argv
    return rc, capsys.readouterr().err


def test_unknown_key_is_rejected(tmp_path, capsys):
    """A mistyped key, and a key renamed by the config vocabulary, in a file or on the command line: one line
    naming where (file:line) and the key (and the new name), exit status 2."""
    text = (CONFIGS / "quickstart.yaml").read_text()
    line = 1 + text.splitlines().index(next(ln for ln in text.splitlines() if ln.strip().startswith("dropout:")))
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("dropout:", "dropuot:"))
    assert fit_error(capsys, "--config", bad) == (
        2, f"ner-zoo: error: {bad}:{line}: model.init_args.dropuot: BiLSTMCRF has no option 'dropuot'\n")
    line = 1 + text.splitlines().index(next(ln for ln in text.splitlines() if ln.strip().startswith("lstm_hidden:")))
    old = tmp_path / "old.yaml"
    old.write_text(text.replace("lstm_hidden:", "hidden:"))
    assert fit_error(capsys, "--config", old) == (
        2, f"ner-zoo: error: {old}:{line}: model.init_args.hidden: BiLSTMCRF has no option 'hidden' (renamed "
           "'lstm_hidden', see docs/configs.md)\n")
    assert fit_error(capsys, "--config", CONFIGS / "quickstart.yaml", "--model.init_args.num_layers", "2") == (
        2, "ner-zoo: error: command line: model.init_args.num_layers: BiLSTMCRF has no option 'num_layers' (renamed "
           "'lstm_layers', see docs/configs.md)\n")
    assert fit_error(capsys, "--config", CONFIGS / "quickstart.yaml", "--model.init_args.word_dim", "50") == (
        2, "ner-zoo: error: command line: model.init_args.word_dim: BiLSTMCRF has no option 'word_dim' (renamed "
           "'words.dim', see docs/configs.md)\n")


def test_config_that_is_not_yaml_names_its_file_and_line(tmp_path, capsys):
    """A YAML syntax error: one line naming the file and line (jsonargparse alone says "<unicode string>")."""
    text = (CONFIGS / "quickstart.yaml").read_text().splitlines()
    line = 1 + text.index(next(ln for ln in text if ln.strip().startswith("dropout:")))
    bad = tmp_path / "bad.yaml"
    bad.write_text("\n".join(ln.replace("dropout:", "dropout: [0.5") if n == line else ln
                             for n, ln in enumerate(text, 1)) + "\n")
    rc, err = fit_error(capsys, "--config", CONFIGS / "quickstart.yaml", "--config", bad)
    assert rc == 2 and err.startswith(f"ner-zoo: error: {bad}:") and "not valid YAML" in err, err
    assert err.count("\n") == 1 and "unicode string" not in err

def test_flat_transformer_key_names_its_place_in_the_encoder(tmp_path, capsys):
    """DSpERT's transformer settings moved into ``encoder`` (issue 20): an old flat key is one line naming it."""
    text = (CONFIGS / "dspert" / "genia.yaml").read_text()
    line = 1 + text.splitlines().index(next(ln for ln in text.splitlines() if ln.strip().startswith("encoder:")))
    old = tmp_path / "old.yaml"
    flat = text.replace("    encoder:\n      class_path: ner_zoo.modules.transformer.TransformerEncoder\n"
                        "      init_args:\n", "")  # the encoder's keys back under the model's init_args
    old.write_text("\n".join(ln[4:] if ln.startswith(" " * 8) else ln for ln in flat.splitlines()))
    assert fit_error(capsys, "--config", old) == (
        2, f"ner-zoo: error: {old}:{line}: model.init_args.model: DSpERT has no option 'model' (renamed "
           "'encoder.init_args.model', see docs/configs.md)\n")


REPRO = sorted((CONFIGS / "experiments").glob("repro_*.yaml"))


@pytest.mark.parametrize("path", REPRO, ids=lambda p: p.stem)
def test_reproduction_matrix_pairs_its_arms(path):
    """A reproduction matrix (issue 16) compares arms that ``ner-zoo compare`` pairs: one shared recipe (trainer,
    data, optimiser) and overlays, identical epochs set explicitly, the same seeds, at least 5 (PSA 9), and
    no wall-clock budget in the schedule."""
    import yaml

    from ner_zoo.results.paired import MIN_SEEDS, PAIRS, shared_recipe
    from ner_zoo.run.recorder import overlay_names

    runs = yaml.safe_load(path.read_text())
    pairs = {(m, base) for m, base, *_ in PAIRS}
    arms = {(r.get("variant") or yaml_variant(r)) for r in runs}
    if not any((m[1], base[1]) in {(a, b) for a in arms for b in arms} for m, base in pairs):
        # no pair inside the matrix: its arms pair with published records (folders named in its header)
        named = [d.name for d in sorted((ROOT / "docs" / "runs").iterdir()) if d.name in path.read_text()]
        return _pairs_with_published_records(runs, named, pairs)
    assert len(runs) >= 2
    keys, seeds = set(), set()
    for run in runs:
        variant = ["--variant", run["variant"]] if run.get("variant") else []
        config = parse([ROOT / c for c in run["configs"]], run.get("args", []) + variant)
        assert "--trainer.max_epochs" in run["args"] and config["trainer"].get("max_time") is None
        scheduler = config["model"]["init_args"].get("lr_scheduler") or {}
        assert not (scheduler.get("init_args") or {}).get("fit_to_max_time"), run["name"]
        keys.add((shared_recipe({"config": config}), tuple(overlay_names(run["configs"]))))
        seeds.add(tuple(run["seeds"]))
        model = config["model"]["class_path"].rsplit(".", 1)[-1]
        assert len(run["seeds"]) >= MIN_SEEDS.get(model, 5), run["name"]
    assert len(keys) == 1, keys
    assert len(seeds) == 1, seeds


def yaml_variant(run: dict) -> str | None:
    """The ``variant:`` a run's last config file sets (an ablation's), else None."""
    import yaml

    found = [yaml.safe_load((ROOT / c).read_text()).get("variant") for c in run["configs"]]
    return next((v for v in reversed(found) if v), None)


def _pairs_with_published_records(runs: list[dict], folders: list[str], pairs: set) -> None:
    """Each run of a matrix that adds one arm to published records (issue 32) pairs with the other arm's records
    in the folders its header names: a pair of ``PAIRS``, same data, overlays and recipe (trainer, data,
    optimiser; the records' accelerator), the run's seeds and epochs."""
    from ner_zoo.results.compare import _overlays, _variant, load_records
    from ner_zoo.results.paired import shared_recipe
    from ner_zoo.run.recorder import overlay_names

    assert folders, "a matrix without both arms of a pair names the published records it pairs with"
    records = load_records([ROOT / "docs" / "runs" / f for f in folders])
    for run in runs:
        variant = run.get("variant") or yaml_variant(run)
        bases = {base[1] for m, base in pairs if m[1] == variant}
        partners = [r for r in records if _variant(r) in bases]
        assert partners, run["name"]
        accelerator = ["--trainer.accelerator", partners[0]["config"]["trainer"].get("accelerator", "auto")]
        config = parse([ROOT / c for c in run["configs"]], run.get("args", []) + accelerator)
        assert "--trainer.max_epochs" in run["args"] and config["trainer"].get("max_time") is None
        data = config["data"]["class_path"].rsplit(".", 1)[-1]
        key = (data, shared_recipe({"config": config}), "+".join(overlay_names(run["configs"])))
        partners = [r for r in partners if (r["data"], shared_recipe(r), _overlays(r)) == key]
        assert partners, (run["name"], key)
        assert set(run["seeds"]) <= {r["seed"] for r in partners}, run["name"]
        assert {r["protocol"]["epochs"] for r in partners} == {float(config["trainer"]["max_epochs"])}


def test_run_matrix_subset_and_dry_run(tmp_path):
    import subprocess
    import sys

    matrix = CONFIGS / "experiments" / "repro_min_wnut17.yaml"
    cmd = [sys.executable, str(ROOT / "tools" / "run_matrix.py"), str(matrix), "--out", str(tmp_path),
           "--only", "min-wnut17,min-ner-only-wnut17", "--seeds", "2,4", "--dry-run"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 4 and not list(tmp_path.iterdir())
    assert [line.split("--seed_everything ")[1].split()[0] for line in lines] == ["2", "4", "2", "4"]
    assert sum("ablations/ner_only.yaml" in line for line in lines) == 2
    bad = subprocess.run(cmd[:5] + ["--only", "nope", "--dry-run"], capture_output=True, text=True, timeout=120)
    assert bad.returncode and "no run named ['nope']" in bad.stderr

@pytest.mark.parametrize("path", [p for p in config_files() if p.parent.name == "ablations"],
                         ids=lambda p: str(p.relative_to(CONFIGS)))
def test_wandb_logging_composes_before_an_ablation(path):
    """``logging/wandb.yaml`` after any config (before or after an ablation) gives exactly its two loggers, with
    the W&B run name left to the CLI (``<Model>[-<variant>]-<Data>-s<seed>``). A config whose logger is a single
    mapping, not a list, would merge its ``name`` into the WandbLogger; an ablation setting the logger name
    would not parse after the list. The order with the logging file last is checked by the audit of every config
    (:func:`test_config_parses_and_model_builds`); this is the order with it between base and ablation."""
    base, *ablation = compose(path)
    check_loggers(parse([base, CONFIGS / "logging" / "wandb.yaml", *ablation]))


def check_loggers(config: dict) -> None:
    """``logging/wandb.yaml`` composed into ``config``: exactly its two loggers, no inherited run name."""
    loggers = config["trainer"]["logger"]
    assert [lg["class_path"].rsplit(".", 1)[-1] for lg in loggers] == ["WandbLogger", "CSVLogger"]
    assert loggers[0]["init_args"].get("name") is None


# documented one-line overrides ------------------------------------------------------------------------------
OVERRIDE = "# override:"
FLAG = re.compile(r"--(model|data|trainer)\.\S")


def documented_overrides() -> list[tuple[Path, str]]:
    """Every ``# override: ARGS`` line in a config's comments (encoders, GloVe 100d, BioWordVec, switches)."""
    return [(path, line[len(OVERRIDE):].strip()) for path in config_files()
            for line in path.read_text().splitlines() if line.startswith(OVERRIDE)]


def test_every_documented_flag_is_an_override_line():
    """A ``--model.``/``--data.``/``--trainer.`` flag written in a config's comments must be an ``# override:``
    line, so the test below parses it (before, ``configs/hcr/conll2002_es.yaml:8`` used renamed keys)."""
    loose = [f"{p.relative_to(ROOT)}:{i}" for p in config_files()
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if line.lstrip().startswith("#") and FLAG.search(line) and not line.startswith(OVERRIDE)]
    assert not loose, loose
    named: dict[str, str] = {}
    for p, args in documented_overrides():
        named[p.relative_to(CONFIGS).as_posix()] = named.get(p.relative_to(CONFIGS).as_posix(), "") + " " + args
    assert "--model.init_args.words.dim 100" in named["psa/conll2003.yaml"]  # GloVe 100d
    assert "biobert-large-cased-v1.1" in named["locate_and_label/genia.yaml"]  # the paper's encoder
    assert "BioWordVec" in named["locate_and_label/genia.yaml"]
    assert "words.vectors" in named["hcr/conll2002_es.yaml"]


@pytest.mark.parametrize("path, args", documented_overrides(),
                         ids=[f"{p.relative_to(CONFIGS)}:{a[:40]}" for p, a in documented_overrides()])
def test_documented_override_parses(path, args):
    import shlex

    argv = shlex.split(args)
    config = parse(compose(path), argv)
    for flag, value in zip(argv[::2], argv[1::2]):  # each --key value pair landed where it says
        node = config
        for key in flag.removeprefix("--").split("."):
            node = node[key] if isinstance(node, dict) and key in node else None
        if isinstance(node, (str, int, float)) and not value.startswith(("{", "[")):
            assert str(node) == value or value == "null", (flag, node, value)
