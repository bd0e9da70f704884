"""A callback that shows the model tagging a few sentences of the user's own, after testing (the quickstart's
"does it work on text it has never seen")."""

from __future__ import annotations

import lightning.pytorch as pl
import torch

from ner_zoo.data.schema import Sentence, Span


def bracketed(tokens: list[str], spans: list[Span]) -> str:
    """``[Anna Berg]PER flew to [Oslo]LOC .`` (nested spans: the outer bracket first)."""
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    for sp in sorted((Span(*s) for s in spans), key=lambda s: (s.start, -s.end, s.label)):  # outer first
        opens.setdefault(sp.start, []).append("[")
        closes.setdefault(sp.end - 1, []).insert(0, f"]{sp.label}")
    return " ".join("".join(opens.get(i, [])) + tok + "".join(closes.get(i, [])) for i, tok in enumerate(tokens))


class TagExamples(pl.Callback):
    """Print the model's entities in ``sentences`` (whitespace-tokenised) when a test ends.

    Args:
        sentences: plain text, tokens separated by spaces.
        corpus: the data module class the sentences suit (e.g. ``SampleCorpus``: news-like names); with other
            data (``--data my_corpus.yaml`` over the quickstart) nothing is shown. ``None``: any data.
    """

    def __init__(self, sentences: list[str], corpus: str | None = None):
        self.sentences = [Sentence(s.split()) for s in sentences if s.split()]
        self.corpus = corpus

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.is_global_zero or not self.sentences or getattr(pl_module, "is_pos", False):
            return
        if self.corpus is not None and type(trainer.datamodule).__name__ != self.corpus:
            return  # another corpus's labels (a disease model): these sentences would say nothing
        was_training = pl_module.training
        pl_module.eval()
        with torch.no_grad():
            batch = pl_module.collate(list(enumerate(self.sentences))).to(pl_module.device)
            preds = pl_module.decode(batch)
        pl_module.train(was_training)
        print("\nThe model on sentences it has never seen:", flush=True)
        for sent, spans in zip(self.sentences, preds):
            print("  " + bracketed(sent.tokens, [Span(*sp) for sp in spans]), flush=True)
