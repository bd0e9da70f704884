"""The one registry of tiny model configs (``class_path``/``init_args``, in the config vocabulary of
``docs/configs.md``): what the model battery, the reliability and long-input tests, the config audit and the
benchmarks build. A model of ``ner_zoo/models/`` missing here fails ``tests/test_tiny_registry.py``
(:func:`unregistered`).

Each model is small enough to fit a few steps on the sample corpus in seconds on a CPU. Transformer models
take the directory of a tiny BERT (:mod:`ner_zoo.testing.tiny_bert`); ``extra`` keys override ``init_args``.
"""

from __future__ import annotations

import copy
import importlib
import inspect
from pathlib import Path
from types import ModuleType
from typing import Iterable

from ner_zoo.dotted import resolve

ADAM = {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}
ADAMW = {"class_path": "torch.optim.AdamW", "init_args": {"lr": 0.01}}
CHAR_LSTM = {"class_path": "ner_zoo.modules.CharBiLSTM", "init_args": {"char_dim": 8, "hidden": 8}}
CHAR_CNN = {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8, "filters": 8}}
INTNET = {"class_path": "ner_zoo.modules.intnet.IntNet",
          "init_args": {"char_dim": 8, "first_filters": 8, "filters": 4, "layers": 3, "dropout": 0.1}}

#: name -> (class path, init_args); transformer models get ``encoder`` (:func:`tiny_model`)
TINY: dict[str, tuple[str, dict]] = {
    "bilstm_crf": ("ner_zoo.models.BiLSTMCRF",
                   {"words": {"dim": 16}, "lstm_hidden": 16, "char_encoder": CHAR_LSTM, "dropout": 0.1, "optimizer": ADAM}),
    "psa": ("ner_zoo.models.PSA",
            {"words": {"dim": 16}, "lstm_hidden": 12, "dropout": 0.1, "window": 3, "attention_dropout": 0.1,
             "char_encoder": {"class_path": "ner_zoo.modules.CharBiLSTM", "init_args": {"char_dim": 8, "hidden": 6}},
             "optimizer": ADAM}),
    "hcr": ("ner_zoo.models.HCR",
            {"words": {"dim": 16}, "lstm_hidden": 16, "sentence_hidden": 8, "label_kernel": 5, "memory_slots": 20,
             "char_encoder": INTNET, "dropout": 0.1, "loss_reduction": "mean", "optimizer": ADAM}),
    "min": ("ner_zoo.models.MIN",
            {"words": {"dim": 16}, "lstm_hidden": 12, "dropout": 0.1, "char_encoder": CHAR_LSTM, "optimizer": ADAM}),
    "span_classifier": ("ner_zoo.models.span_classifier.ExhaustiveSpanClassifier",
                        {"words": {"dim": 16}, "lstm_hidden": 16, "max_width": 4, "width_dim": 8, "ffn_dim": 32,
                         "dropout": 0.1, "char_encoder": {"class_path": "ner_zoo.modules.CharCNN"}, "optimizer": ADAM}),
    "locate_and_label": ("ner_zoo.models.locate_and_label.LocateAndLabel",
                         {"words": {"dim": 16}, "lstm_hidden": 16, "ffn_dim": 32, "train_widths": [1, 2, 3], "max_width": 4,
                          "embed_dropout": 0.1, "dropout": 0.1, "score_threshold": 0.3,
                          "char_encoder": {"class_path": "ner_zoo.modules.CharCNN"}, "optimizer": ADAM}),
    "transformer_tagger": ("ner_zoo.models.transformer_tagger.TransformerTagger",
                           {"dropout": 0.1, "pretrained_lr": 1e-3,
                            "optimizer": {"class_path": "torch.optim.AdamW", "init_args": {"lr": 5e-3}}}),
    "dspert": ("ner_zoo.models.dspert.DSpERT",
               {"max_width": 6, "lstm_hidden": 8, "width_dim": 4, "ffn_dim": 16, "pretrained_lr": 1e-3,
                "optimizer": ADAMW}),
    "biaffine_ner": ("ner_zoo.models.biaffine_ner.BiaffineNER",
                     {"lstm_hidden": 8, "ffn_dim": 16, "max_width": 8, "pretrained_lr": 1e-3, "optimizer": ADAMW}),
}
#: name -> the ``init_args`` of its ``encoder`` (a ``TransformerEncoder``) besides ``model``
TRANSFORMER_MODELS: dict[str, dict] = {"transformer_tagger": {"casing_dim": 4},
                                       "dspert": {"max_subwords_per_word": 5, "plm_dropout": 0.2},
                                       "biaffine_ner": {"plm_dropout": 0.2}}


def tiny_model(name: str, bert_dir: str | Path | None = None, encoder: dict | None = None, **extra) -> dict:
    """The tiny config of model ``name`` (a fresh copy), with ``extra`` init arguments on top. A transformer
    model's ``encoder`` reads the tiny transformer in ``bert_dir``, with ``encoder``'s init arguments on top;
    another model takes ``encoder`` as its whole (optional) component."""
    class_path, init = TINY[name]
    init = copy.deepcopy(init)
    if name in TRANSFORMER_MODELS:
        if bert_dir is None:
            raise ValueError(f"{name} needs the directory of a tiny transformer (bert_dir)")
        init["encoder"] = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                           "init_args": {"model": str(bert_dir), **TRANSFORMER_MODELS[name], **(encoder or {})}}
    elif encoder is not None:  # an optional encoder (HCR, MIN, span models): the whole component
        init["encoder"] = encoder
    return {"class_path": class_path, "init_args": {**init, **extra}}


def model_class(name: str) -> type:
    """The class of registry entry ``name``."""
    return resolve(TINY[name][0])


def network_class(name: str) -> type:
    """The plain network (``<Paper>Net``) that registry entry ``name``'s LightningModule hosts."""
    cls = model_class(name)
    return getattr(cls, "network", cls)


def takes_encoder(name: str) -> bool:
    """Whether model ``name`` takes a transformer ``encoder`` component (always or optionally)."""
    return name in TRANSFORMER_MODELS or "encoder" in inspect.signature(model_class(name).__init__).parameters


def plain_taggers() -> list[str]:
    """Registry taggers without a required transformer: the reliability suite fits these and tags a 1,000-token
    sentence (tests/test_reliability.py); the long-input suite reads every other model with its transformer
    (tests/test_long_documents.py), so every registry model is in exactly one of the two."""
    from ner_zoo.training.tagger import SequenceTagger

    return [n for n in TINY if n not in TRANSFORMER_MODELS and issubclass(network_class(n), SequenceTagger)]


MODELS = Path(__file__).resolve().parents[1] / "models"


def model_module(path: Path, package: str = "ner_zoo.models") -> ModuleType:
    """The model file ``path`` imported as ``<package>.<stem>`` (a file outside the package too, the guide's: its
    folder joins the package's search path)."""
    folder = str(path.parent.resolve())
    search = importlib.import_module(package).__path__
    if folder not in search:
        search.append(folder)
    return importlib.import_module(f"{package}.{path.stem}")


def zoo_modules() -> list[ModuleType]:
    """``ner_zoo.models`` and every model file in it."""
    return [importlib.import_module("ner_zoo.models")] + [model_module(p) for p in sorted(MODELS.glob("*.py"))
                                                           if not p.stem.startswith("_")]


def unregistered(modules: Iterable[ModuleType] | None = None) -> list[str]:
    """``module.Class`` of every model (a network ``<Class>Net`` defined in, or a model exported by, ``modules``;
    default :func:`zoo_modules`) that no entry of ``TINY`` builds: models the per-model suites would miss."""
    from ner_zoo.checkpoints.migrations import paper
    from ner_zoo.training.network import Network

    registered = {model_class(name).network for name in TINY}
    found = {}
    for module in zoo_modules() if modules is None else modules:
        values = [*vars(module).values(), *(getattr(module, k).network for k in getattr(module, "__all__", ()))]
        for value in values:
            if isinstance(value, type) and issubclass(value, Network) and value.__name__.endswith("Net") and \
                    (value.__module__ == module.__name__ or module.__name__ == "ner_zoo.models"):
                found[f"{value.__module__}.{paper(value.__qualname__)}"] = value
    return sorted(path for path, cls in found.items() if cls not in registered)


def column_fit_config(folder: Path, model: dict, train: str, dev: str, epochs: int = 1, **data) -> Path:
    """Write ``train.conll`` and ``dev.conll`` (also the test file) into ``folder`` and a one-CPU ``fit`` config
    over them (CSV log, checkpoints and runs inside ``folder``; ``data`` adds data-module arguments); its path."""
    import yaml

    (folder / "train.conll").write_text(train)
    (folder / "dev.conll").write_text(dev)
    cfg = {"model": model,
           "data": {"class_path": "ner_zoo.data.ColumnDataModule",
                    "init_args": {"data_dir": str(folder), "train_file": "train.conll", "dev_file": "dev.conll",
                                  "test_file": "dev.conll", "batch_size": 2, **data}},
           "trainer": {"max_epochs": epochs, "accelerator": "cpu", "enable_progress_bar": False,
                       "enable_model_summary": False, "num_sanity_val_steps": 0, "log_every_n_steps": 1,
                       "default_root_dir": str(folder / "runs"),
                       "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger",
                                  "init_args": {"save_dir": str(folder / "runs"), "name": "csv"}}},
           "checkpoint": {"dirpath": str(folder / "ckpt"), "filename": "best"}}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
