"""``NERModule`` keeps to the lifecycle (issue 31): it stays small, and the cross-cutting work every fit needs
comes as callbacks the module adds itself (``configure_callbacks``), so configs and plain Trainers get it."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

import ner_zoo.training.base as base


def test_the_task_module_is_at_most_250_lines():
    tree = ast.parse(Path(base.__file__).read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NERModule"]
    assert cls.end_lineno - cls.lineno + 1 <= 250


def test_a_plain_trainer_gets_the_random_state_and_lazy_rows_callbacks(tmp_path):
    import lightning.pytorch as pl

    from ner_zoo.data import SampleCorpus
    from ner_zoo.models import BiLSTMCRF
    from ner_zoo.training.lazy_rows import LazyRowsCallback
    from ner_zoo.training.random_state import RandomState
    from ner_zoo.training.words import Words

    dm = SampleCorpus(max_sentences=8, batch_size=4)
    model = BiLSTMCRF(vocabs=dm.vocabs, words=Words(dim=4), lstm_hidden=4, char_encoder=None)
    trainer = pl.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_progress_bar=False,
                         enable_model_summary=False, limit_val_batches=0, default_root_dir=tmp_path)
    trainer.fit(model, datamodule=dm)
    kinds = {type(c) for c in trainer.callbacks}
    assert {RandomState, LazyRowsCallback} <= kinds
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    ckpt = torch.load(tmp_path / "a.ckpt", weights_only=False)  # our own file (its hparams hold a Words)
    assert torch.equal(ckpt["ner_zoo_rng"]["ranks"][0]["torch"], torch.get_rng_state())  # same key as before
