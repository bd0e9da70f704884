"""The LightningDataModule that batches a corpus for a fit: :class:`NERDataModule`, a
:class:`~ner_zoo.data.corpus.Corpus` (reading, vocabularies; plain Python) with the loaders, samplers and ``setup``
a Trainer calls. The corpus classes (:mod:`ner_zoo.data.corpora`) get theirs made on first access.
"""

from __future__ import annotations

from typing import Callable

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_warn
from torch.utils.data import DataLoader

from ner_zoo.data.batching import Collator, IndexedDataset, ResumableDataLoader, ShardSampler, TokenBudgetSampler
from ner_zoo.data.batching import Vocabularies  # noqa: F401  (imported from here by older code)
from ner_zoo.data.corpus import SPLITS, Corpus, Task, data_root  # noqa: F401  (imported from here by older code)
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import DataFormatError


class NERDataModule(Corpus, pl.LightningDataModule):
    """A corpus batched for a fit: the arguments are :class:`~ner_zoo.data.corpus.Corpus`'s."""

    _model = None  # the model fed outside a Trainer (:meth:`use_model`)

    # loaders ----------------------------------------------------------------------------------------------
    def setup(self, stage: str | None = None) -> None:
        wanted = {"fit": ("train", "dev"), "validate": ("dev",), "test": ("test",)}.get(stage or "", SPLITS)
        if self.train_on == "train+dev" and stage == "validate":
            raise DataFormatError("validate: dev was trained on (data.train_on: train+dev), so a score on it "
                                  "would not measure the model", self.split_path("dev"))
        for split in wanted:
            sents = self.sentences(split)
            if not sents and split == "dev" and self.split_path("dev") is None:  # carved from train, to nothing
                raise DataFormatError(
                    f"the dev split has no sentences: there is no dev file, and dev_fraction {self.dev_fraction} of "
                    f"the {len(self.sentences('train'))} training sentences held out none (set "
                    "--data.init_args.dev_file, or a larger --data.init_args.dev_fraction)", self.split_path("train"))
            if not sents:
                raise DataFormatError(f"the {split} split has no sentences", self.split_path(split))
            if split != "train" and not (split == "dev" and self.train_on == "train+dev"):
                self._check_labels(split, sents)

    def _loader(self, sentences: list[Sentence], train: bool, collate: Callable | None = None) -> DataLoader:
        world, rank = 1, 0
        if self.trainer is not None:
            world, rank = self.trainer.world_size, self.trainer.global_rank
        bs = self.batch_size if train else self.eval_batch_size
        lengths = [len(s) for s in sentences]
        # trainer.overfit_batches: the same first batches every epoch, so none shuffled; and Lightning replaces any
        # loader's sampler but a SequentialSampler by one over single sentences, so ours goes in as batch_sampler
        overfit = bool(self.trainer is not None and self.trainer.overfit_batches)
        if train and self.batch_tokens is not None:
            sampler = TokenBudgetSampler(lengths, self.batch_tokens, shuffle=not overfit, num_replicas=world,
                                         rank=rank, seed=self.split_seed)
            if sampler.over_budget:
                rank_zero_warn(f"{len(sampler.over_budget)} training sentence(s) are longer than data.batch_tokens="
                               f"{self.batch_tokens} (longest {sampler.over_budget[-1]} tokens); each is a batch of "
                               "its own")
        else:
            if self.bucket or not train:
                lengths = self.bucket_lengths(sentences)
            sampler = ShardSampler(lengths, bs, shuffle=train and not overfit, bucket=self.bucket or not train,
                                   pad=train, num_replicas=world, rank=rank, seed=self.split_seed)
        loader = ResumableDataLoader if train else DataLoader  # train: resumable mid-epoch (see batching)
        collate = collate or self.collate_fn()
        if train and isinstance(collate, Collator):  # ids of every training sentence built once, up front
            for s in sentences:
                collate.sentence_ids(s)
        if overfit:
            return DataLoader(IndexedDataset(sentences), batch_sampler=sampler, collate_fn=collate,
                              num_workers=self.num_workers, pin_memory=self.pin_memory)
        # a generator of its own: starting an epoch then draws nothing from the global random state, so the
        # dropout masks of a run resumed from a checkpoint (which stores that state) match the first run's
        return loader(IndexedDataset(sentences), batch_size=None, sampler=sampler,  # the sampler yields batches
                      collate_fn=collate, num_workers=self.num_workers,
                      persistent_workers=self.num_workers > 0, pin_memory=self.pin_memory,
                      generator=torch.Generator().manual_seed(self.split_seed))

    def use_model(self, model: object) -> None:
        """Build loaders for ``model`` outside a Trainer (in one, the data module feeds the trainer's model)."""
        self._model = model

    def fed_model(self) -> object | None:
        """The model this data module feeds: the trainer's, else the one given to :meth:`use_model`."""
        model = getattr(self.trainer, "lightning_module", None) if self.trainer is not None else None
        return model or self._model

    def bucket_lengths(self, sentences: list[Sentence]) -> list[int]:
        """What each sentence costs the model this data module feeds, by which ``bucket`` sorts: the model's
        ``bucket_lengths`` where it has one (the TransformerTagger's sub-words), else the words."""
        costs = getattr(self.fed_model(), "bucket_lengths", None)
        return list(costs(sentences)) if costs is not None else [len(s) for s in sentences]

    def collate_fn(self) -> Callable:
        """The collator of the model this data module feeds, asked through its public ``collator`` (the
        trainer's model, else the one given to :meth:`use_model`); without one, the vocabularies' collator."""
        collator = getattr(self.fed_model(), "collator", None)
        return collator if collator is not None else self.vocabularies.collator()

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_sentences(), train=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.sentences("dev"), train=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.sentences("test"), train=False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(self.sentences("test"), train=False)
