"""Reproducible dev carving for corpora without an official dev split."""

from __future__ import annotations

import random

from ner_zoo.data.schema import Sentence, documents


def carve_dev(train: list[Sentence], fraction: float, seed: int, by_document: bool = True
              ) -> tuple[list[Sentence], list[Sentence]]:
    """Split ``train`` into (train, dev) with a seeded shuffle.

    Whole documents move when the corpus has document ids (``by_document``), so no document is split
    across train and dev; otherwise single sentences move. The same seed and input give the same split.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"dev fraction must be in (0, 1), got {fraction}")
    units = documents(train) if by_document else [[s] for s in train]
    order = list(range(len(units)))
    random.Random(seed).shuffle(order)
    target = round(fraction * len(train))
    dev_units, count = set(), 0
    for u in order:
        if count >= target:
            break
        dev_units.add(u)
        count += len(units[u])
    new_train = [s for i, u in enumerate(units) if i not in dev_units for s in u]
    dev = [s for i, u in enumerate(units) if i in dev_units for s in u]
    return new_train, dev
