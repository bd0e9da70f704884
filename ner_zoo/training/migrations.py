"""Checkpoints saved by older code: the one table of renamed weights (state-dict keys), applied on load.

Like Hugging Face transformers' conversion of renamed weights, a model attribute may be renamed freely: add a row
``(model class name, old key prefix, new key prefix)`` to :data:`STATE_DICT_RENAMES`. The rows of a class apply in
order, each to the keys that start with its old prefix, so a later row never re-matches what an earlier one
wrote; a checkpoint in the current layout matches no row (``tests/test_old_checkpoints.py`` checks both, on a
checkpoint of every model saved before the renames). :meth:`NERModule.on_load_checkpoint
<ner_zoo.training.base.NERModule.on_load_checkpoint>` calls :func:`migrate_state_dict` after checking the digest
of the weights as stored, so ``predict``, ``test --ckpt_path`` and resuming all read the new names.
"""

from __future__ import annotations

from typing import MutableMapping

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


def state_dict_renames(class_name: str) -> list[tuple[str, str]]:
    """The ``(old prefix, new prefix)`` rows of model class ``class_name``, in order."""
    return [(old, new) for name, old, new in STATE_DICT_RENAMES if name == class_name]


def migrate_state_dict(class_name: str, state: MutableMapping) -> list[str]:
    """Rename, in place, the keys of ``state`` (a model's saved ``state_dict``) that older code of model class
    ``class_name`` wrote; the old keys renamed (none for a checkpoint in the current layout)."""
    renamed = []
    for old, new in state_dict_renames(class_name):
        for key in [k for k in state if k.startswith(old)]:
            target = new + key[len(old):]
            if target in state:
                raise KeyError(f"migrating {key!r} to {target!r}: the checkpoint holds both")
            state[target] = state.pop(key)
            renamed.append(key)
    return renamed
