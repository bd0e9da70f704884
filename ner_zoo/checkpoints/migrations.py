"""Configs and checkpoints of older code: the one place of renamed init arguments and renamed weights.

Init arguments (:data:`RENAMED_KEYS`, per model class, old -> new): an old key in a config is refused with one
line naming the new one (``cli/config_errors.py``); a checkpoint saved with it still loads (:func:`migrate_hparams`,
called by ``load_model``, ``--ckpt_path`` and export). A dotted new name (``encoder.init_args.model``) moved into
a group, made from :data:`GROUPS` when the checkpoint has none.

Like Hugging Face transformers' conversion of renamed weights, a model attribute may be renamed freely: add a row
``(model class name, old key prefix, new key prefix)`` to :data:`STATE_DICT_RENAMES`. The rows of a class apply in
order, each to the keys that start with its old prefix, so a later row never re-matches what an earlier one
wrote; a checkpoint in the current layout matches no row (``tests/test_old_checkpoints.py`` checks both, on a
checkpoint of every model saved before the renames).

Weights are named by the network (``<Paper>Net``, whose rows are its paper's); a checkpoint of the task module
holds them under ``net.`` (format 2; format 1, before issue 42, held the network's names as they are, as
exported folders do). This module is the one key-conversion table: :func:`network_state` gives a network its
weights from any of them (``ner_zoo.load``, export), :func:`to_host` gives the task module its own
(:meth:`NERModule.on_load_checkpoint <ner_zoo.training.base.NERModule.on_load_checkpoint>`, after checking the
digest of the weights as stored, so ``predict``, ``test --ckpt_path`` and resuming all read the new names).
"""

from __future__ import annotations

import copy
from typing import Any, Mapping, MutableMapping

from ner_zoo.errors import CheckpointError

#: the word-table keys of older configs and checkpoints, old -> new (every model with a ``words`` table)
WORDS_RENAMED = {"embeddings": "words.vectors", "word_dim": "words.dim", "freeze_embeddings": "words.freeze",
                 "singleton_unk": "words.singleton_unk"}
_LSTM = {"hidden": "lstm_hidden", "num_layers": "lstm_layers"}
_ENCODER = "ner_zoo.modules.transformer.TransformerEncoder"


def _into_encoder(*keys: str) -> dict[str, str]:
    return {k: f"encoder.init_args.{k}" for k in keys}


#: model class name -> its renamed init arguments, old -> new
RENAMED_KEYS: dict[str, dict[str, str]] = {
    "BiLSTMCRF": {**_LSTM, **WORDS_RENAMED},
    "PSA": {**_LSTM, **WORDS_RENAMED},
    "HCR": {"hidden": "lstm_hidden", "transformer": "encoder", **WORDS_RENAMED},
    "MIN": {"hidden": "lstm_hidden", "transformer": "encoder", "max_segment": "max_width", **WORDS_RENAMED},
    "ExhaustiveSpanClassifier": {**_LSTM, "features": "encoder", "features_dropout": "encoder_dropout",
                                 **WORDS_RENAMED},
    "LocateAndLabel": {**_LSTM, "features": "encoder", "features_dropout": "encoder_dropout",
                       "eval_width": "max_width", **WORDS_RENAMED},
    "TransformerTagger": _into_encoder("model", "pooling", "max_subwords_per_word", "layers", "window_stride",
                                       "context", "freeze", "casing_dim"),
    "DSpERT": {"max_span_size": "max_width",
               **_into_encoder("model", "max_subwords_per_word", "context", "plm_dropout", "casing_dim")},
    "BiaffineNER": _into_encoder("model", "pooling", "max_subwords_per_word", "context", "plm_dropout", "casing_dim"),
}
#: a group key -> its saved form before any moved key goes in
GROUPS: dict[str, dict] = {"words": {}, "encoder": {"class_path": _ENCODER, "init_args": {}}}


def renamed_keys(cls: type) -> Mapping[str, str]:
    """The renamed init arguments of model class ``cls`` (of its nearest listed base class; none: ``{}``)."""
    for base in getattr(cls, "__mro__", ()):
        if paper(base.__name__) in RENAMED_KEYS:
            return RENAMED_KEYS[paper(base.__name__)]
    return {}


def migrate_hparams(cls: type, hparams: Mapping[str, Any]) -> dict:
    """Saved init arguments of model class ``cls`` with their old names replaced by the current ones; keys that
    moved into a group are nested there (the group made from :data:`GROUPS` when it was not saved)."""
    out = dict(hparams)
    for old, new in renamed_keys(cls).items():
        if old not in out:
            continue
        group, *path = new.split(".")
        if not path:
            if new not in out:
                out[new] = out.pop(old)
            continue
        if out.get(group) is None:
            out[group] = copy.deepcopy(GROUPS[group])
        node = out[group] = copy.deepcopy(out[group])
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node.setdefault(path[-1], out[old])
        del out[old]
    return out

_TOKENS = ("embedder.", "tokens.")  # WordCharEmbedder -> TokenEncoder (same sub-module names words, chars)

#: (model class name, old key prefix, new key prefix), in the order they apply
STATE_DICT_RENAMES: list[tuple[str, str, str]] = [
    # TransformerTagger: the casing embedding moved into the TransformerEncoder
    ("TransformerTagger", "casing.embedding.", "encoder.casing.embedding."),
    # issue 31: TokenEncoder (self.tokens); the BiLSTM is self.lstm; the transformer is the TokenEncoder's encoder
    ("BiLSTMCRF", "encoder.", "lstm."),
    ("BiLSTMCRF", *_TOKENS),
    ("PSA", "encoder.", "lstm."),
    ("PSA", *_TOKENS),
    ("ExhaustiveSpanClassifier", "encoder.", "lstm."),
    ("ExhaustiveSpanClassifier", "features.", "tokens.encoder."),
    ("ExhaustiveSpanClassifier", *_TOKENS),
    ("LocateAndLabel", "encoder.", "lstm."),
    ("LocateAndLabel", "features.", "tokens.encoder."),
    ("LocateAndLabel", "pos.", "tokens.features.0."),
    ("LocateAndLabel", *_TOKENS),
    ("HCR", "encoder.", "lstm."),
    ("HCR", "sentence_encoder.", "sentence_lstm."),
    ("HCR", "sentence_embedder.", "sentence_tokens."),
    ("HCR", "transformer.", "tokens.encoder."),
    ("HCR", *_TOKENS),
    ("MIN", "ner_encoder.", "lstm."),
    ("MIN", "bdy_encoder.", "bdy_lstm."),
    ("MIN", "type_encoder.", "type_lstm."),
    ("MIN", "transformer.", "tokens.encoder."),
    ("MIN", *_TOKENS),
]


#: where the task module holds its network's weights
NET = "net."


def paper(class_name: str) -> str:
    """The paper a class name stands for: ``HCR`` for the host ``HCR`` and for its network ``HCRNet``."""
    return class_name[:-len("Net")] if class_name.endswith("Net") else class_name


def state_dict_renames(class_name: str) -> list[tuple[str, str]]:
    """The ``(old prefix, new prefix)`` rows of model class ``class_name`` (a host or its network), in order."""
    return [(old, new) for name, old, new in STATE_DICT_RENAMES if name == paper(class_name)]


def migrate_state_dict(class_name: str, state: MutableMapping) -> list[str]:
    """Rename, in place, the keys of ``state`` (a model's saved ``state_dict``) that older code of model class
    ``class_name`` wrote; the old keys renamed (none for a checkpoint in the current layout)."""
    renamed = []
    for old, new in state_dict_renames(class_name):
        for key in [k for k in state if k.startswith(old)]:
            target = new + key[len(old):]
            if target in state:
                raise CheckpointError(f"the weights hold both {key} (older code) and {target}: not a checkpoint "
                                      "ner-zoo wrote")
            state[target] = state.pop(key)
            renamed.append(key)
    return renamed


def network_state(class_name: str, state: Mapping) -> dict:
    """The network's weights, in today's names, from ``state``: a task module's (``net.*``), or a network's as
    older code or an export wrote them."""
    hosted = bool(state) and all(k.startswith(NET) for k in state)
    out = {k[len(NET):] if hosted else k: v for k, v in state.items()}
    migrate_state_dict(class_name, out)
    return out


def to_host(class_name: str, state: MutableMapping) -> None:
    """Rename, in place, the weights of ``state`` (of any age) to the task module's names (``net.*``)."""
    net = network_state(class_name, state)
    state.clear()
    state.update({NET + k: v for k, v in net.items()})
