"""The transformer encoder in an ONNX tagger (TransformerTagger, HCR or MIN "+BERT"): what the graph takes and
what runs outside it.

Outside the graph, torch-free: the fast tokenizer (``tokenizer.json``, read with the ``tokenizers`` library,
the Rust tokenizer that transformers' fast tokenizers wrap, so the sub-words are the same without importing
transformers) and :func:`ner_zoo.modules.subwords.align`, the very function the PyTorch encoder calls (per-word cap,
unknown-token fallback, context trimmed to fit, overlapping windows over a sentence longer than the model
maximum, each sub-word read from the window where it is most central). Inside the graph: the transformer over the
model rows, the pick of each word's sub-word states, pooling (first / mean / max), the casing embedding and the
rest of the model. Graph inputs besides a word model's ``words``/``chars``/``mask``::

    input_ids [R, W] int64, attention_mask [R, W] int64   model rows (R >= B with windows), padded
    word_subwords [B, L, K] int64   per word, its sub-words' flat positions in the [R, W] output (-1: none;
                                    K = 1 for first-sub-word pooling)
    casing [B, L] int64             casing class per word, when the encoder has a casing embedding

Document context (``context > 0``) is looked up as the PyTorch tagger does: the sentences tagged are their own
documents (:class:`ner_zoo.modules.subwords.DocumentContext`).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Sequence

from ner_zoo.modules.subwords import DocumentContext, Layout, align

if TYPE_CHECKING:
    import numpy as np
    import torch

TOKENIZER = "tokenizer.json"
INPUTS = ["input_ids", "attention_mask", "word_subwords"]


# export ------------------------------------------------------------------------------------------------------
def encoder_spec(encoder) -> dict:
    """The ``encoder`` entry of config.json's ``onnx``: what the runtime needs to make the graph's inputs."""
    return {"tokenizer": TOKENIZER, "prefix": list(encoder.prefix), "suffix": list(encoder.suffix),
            "unk_id": encoder.unk_id, "pad_id": encoder.tokenizer.pad_token_id or 0, "cap": encoder.cap,
            "budget": encoder.budget, "stride": encoder.stride, "pooling": encoder.pooling,
            "casing": encoder.casing is not None, "context": encoder.context}


def write_tokenizer(encoder, folder: Path) -> None:
    encoder.tokenizer.backend_tokenizer.save(str(folder / TOKENIZER))


def encoder_states(encoder, input_ids: "torch.Tensor", attention_mask: "torch.Tensor", word_subwords: "torch.Tensor",
                   casing: "torch.Tensor | None") -> "torch.Tensor":
    """Word states ``[B, L, D]`` as :meth:`TransformerEncoder.encode` computes them, from the graph's inputs."""
    import torch

    need_all = encoder.layers != "last"
    out = encoder.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=need_all)
    h = encoder._mix(out.hidden_states if need_all else (out.last_hidden_state,)).float()
    valid = (word_subwords >= 0).unsqueeze(-1)  # [B, L, K, 1]
    g = h.reshape(-1, h.shape[-1])[word_subwords.clamp(min=0)]  # [B, L, K, D]
    if encoder.pooling == "first":
        states = g[:, :, 0]
    elif encoder.pooling == "mean":
        states = (g * valid).sum(2) / valid.sum(2).clamp(min=1)
    else:
        states = g.masked_fill(~valid, float("-inf")).amax(2)
    states = encoder.dropout(torch.where(valid[:, :, 0], states, torch.zeros_like(states)))  # padding words: 0
    if encoder.casing is not None:
        states = torch.cat([states, encoder.casing(casing).float()], -1)
    return states


def scoring_network(model, encoder) -> "torch.nn.Module":
    """``model``'s emissions as a module of tensors ``(words, chars, mask, input_ids, attention_mask,
    word_subwords[, casing]) -> emissions``: the encoder's word states come from :func:`encoder_states` in place
    of :meth:`~ner_zoo.modules.transformer.TransformerEncoder.encode_sentences`, which tokenises in Python."""
    import torch

    from ner_zoo.data.batching import Batch

    class ScoringNetwork(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, words, chars, mask, input_ids, attention_mask, word_subwords, casing=None):
            states = encoder_states(encoder, input_ids, attention_mask, word_subwords, casing)
            encoder.encode_sentences = lambda *a, **k: SimpleNamespace(word_states=states)
            try:
                batch = Batch([], torch.zeros_like(words[:, 0]), words, chars, mask)
                return self.model.emissions(batch).float()
            finally:
                del encoder.encode_sentences

    return ScoringNetwork().eval()


# runtime (numpy + tokenizers) -------------------------------------------------------------------------------------
class SubwordInputs:
    """The graph's encoder inputs for token rows, made as the PyTorch encoder makes its model input."""

    def __init__(self, folder: str | Path, spec: dict):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            from ner_zoo.errors import ResourceError

            raise ResourceError("this ONNX folder has a transformer encoder: install tokenizers") from None
        self.tokenizer = Tokenizer.from_file(str(Path(folder) / spec["tokenizer"]))
        self.layout = Layout(tuple(spec["prefix"]), tuple(spec["suffix"]), spec["unk_id"], spec["cap"],
                             spec["budget"], spec["stride"])
        self.pad_id, self.pooling, self.casing = spec["pad_id"], spec["pooling"], spec["casing"]
        self.context = spec["context"]
        self.documents = DocumentContext()  # the sentences of the call being tagged (OnnxTagger.predict_sentences)

    def add_documents(self, sentences: Sequence, replace: bool = False) -> None:
        """As :meth:`ner_zoo.modules.transformer.TransformerEncoder.add_documents` (written by
        :func:`ner_zoo.training.prediction.index_context`)."""
        if self.context > 0:
            if replace:
                self.documents = DocumentContext()
            self.documents.add(sentences)

    def neighbours(self, sentences: Sequence) -> tuple[list[list[str]], list[list[str]]]:
        """Left and right context words of ``sentences`` (objects with ``tokens``, ``doc_id``, ``index``)."""
        if self.context <= 0:
            return [[] for _ in sentences], [[] for _ in sentences]
        return self.documents.get(sentences, self.context)

    def __call__(self, rows: Sequence[Sequence[str]], left: Sequence[Sequence[str]] | None = None,
                 right: Sequence[Sequence[str]] | None = None) -> dict[str, "np.ndarray"]:
        import numpy as np

        from ner_zoo.modules.casing import casing_ids

        left = left if left is not None else [[] for _ in rows]
        right = right if right is not None else [[] for _ in rows]
        a = align(self.tokenizer, self.layout, rows, left, right)
        attention = a.input_ids != -1
        width = a.input_ids.shape[1]
        k = 1 if self.pooling == "first" else int(a.rank.max()) + 1
        keep = a.rank < k
        subs = np.full((len(rows), int(a.n_words.max()), k), -1, dtype=np.int64)
        subs[a.seq[keep], a.word[keep], a.rank[keep]] = (a.src_row * width + a.src_col)[keep]
        out = {"input_ids": np.where(attention, a.input_ids, self.pad_id), "attention_mask": attention.astype(np.int64),
               "word_subwords": subs}
        if self.casing:
            casing = np.zeros(subs.shape[:2], dtype=np.int64)
            for b, r in enumerate(rows):
                casing[b, : len(r)] = casing_ids(r)
            out["casing"] = casing
        return out
