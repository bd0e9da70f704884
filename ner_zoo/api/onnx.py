"""Taggers in ONNX: ``ner-zoo export CKPT --output DIR --format onnx`` and loading such a folder on onnxruntime.

Only the scoring network (words, characters and, with a transformer encoder, sub-word rows -> emission scores
per token and tag) is exported; decoding runs here in numpy: Viterbi over the CRF's scores (``crf.json``), or
argmax of a softmax tagger; entity scores are the CRF's forward-backward marginals (softmax probabilities), as
:class:`ner_zoo.Tagger` gives. Loading and tagging import neither torch, Lightning nor transformers. The folder::

    README.md, config.json, vocabularies.json   as ``ner-zoo export`` writes them (config.json: "runtime": "onnx")
    model.onnx   inputs words [B, L] int64, chars [B, L, C] int64, mask [B, L] bool (batch, sentence length
                 and word length are dynamic axes), and with a transformer encoder its sub-word inputs
                 (:mod:`ner_zoo.api.onnx_transformer`) -> emissions [B, L, T] float32
    crf.json     CRF taggers: start [T], transitions [T, T] (from, to) and end [T] scores; forbidden moves
                 of the tag scheme score -10000, as in training
    tokenizer.json   with a transformer encoder: its fast tokenizer, run outside the graph with ``tokenizers``

Exportable: the taggers (BiLSTM-CRF, PSA, HCR, MIN, TransformerTagger; HCR and MIN with or without their "+BERT"
transformer) with at most one transformer encoder and no feature columns. Refused with one line: span models,
feature columns, two transformer encoders, a word-level casing embedding.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Sequence

from ner_zoo.api.tagger import Tagger
from ner_zoo.data.schema import Sentence
from ner_zoo.errors import CheckpointError, ResourceError

if TYPE_CHECKING:
    import numpy as np
    import torch

#: sentences traced (the example) and checked against PyTorch after export (other batch size, lengths)
TRACE_EXAMPLE = [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]]
CHECK_EXAMPLE = [["Only", "France", "and", "Britain", "backed", "Fischler", "'s", "proposal", "."], ["Yes"],
                 ["Brussels", "1996-08-22"]]


def is_onnx_folder(path: str | Path) -> bool:
    """A folder holding ``model.onnx``, or whose config.json says it was exported as ONNX (then a missing
    ``model.onnx`` is named as such)."""
    path = Path(path)
    if not path.is_dir():
        return False
    if (path / "model.onnx").is_file():
        return True
    try:
        return json.loads((path / "config.json").read_text()).get("runtime") == "onnx"
    except (OSError, ValueError, AttributeError):
        return False


# export ------------------------------------------------------------------------------------------------------
def scoring_network(model) -> "torch.nn.Module":
    """``model``'s emissions as a module of tensors ``(words, chars, mask) -> emissions`` (what is traced)."""
    import torch

    from ner_zoo.data.batching import Batch

    class ScoringNetwork(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, words: torch.Tensor, chars: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            batch = Batch([], torch.zeros_like(words[:, 0]), words, chars, mask)
            return self.model.emissions(batch).float()

    return ScoringNetwork().eval()


def check_exportable(model) -> None:
    from ner_zoo.modules.token_encoder import TokenEncoder
    from ner_zoo.modules.transformer import TransformerEncoder
    from ner_zoo.training.tagger import SequenceTagger

    name = type(model).__name__
    if not isinstance(model, SequenceTagger):
        raise CheckpointError(f"{name} is not a token tagger: --format onnx exports taggers (their emission scores); "
                              "export this model without --format")
    if sum(isinstance(m, TransformerEncoder) for m in model.modules()) > 1:
        raise CheckpointError(f"{name} has more than one transformer encoder; --format onnx exports taggers with "
                              "at most one; export without --format")
    if any(isinstance(m, TokenEncoder) and m.casing is not None for m in model.modules()):
        raise CheckpointError(f"{name} has a word-level casing embedding (TokenEncoder casing_dim), which the ONNX "
                              "graph does not take; export without --format")
    if model.vocabs.features:
        raise CheckpointError(f"{name} reads feature columns ({', '.join(model.vocabs.features)}), which the ONNX "
                              "graph does not take; export without --format")


def transformer_encoder(model):
    """The model's transformer encoder, or ``None``."""
    from ner_zoo.modules.transformer import TransformerEncoder

    return next((m for m in model.modules() if isinstance(m, TransformerEncoder)), None)


def _example(model, sentences: list[list[str]], known: slice) -> list[list[str]]:
    """``sentences`` with words of the model's vocabulary added (a size-1 axis, such as the one distinct known
    word of a sentence of unknown words, would be traced as a broadcast and frozen)."""
    vocab = [w for w in model.vocabs.words.itos[2:60] if w and not any(c.isspace() for c in w)]
    extra = vocab[known]
    return [list(t) + extra[k::len(sentences)] for k, t in enumerate(sentences)]


def write_onnx(model, folder: Path, opset: int = 17) -> dict:
    """Write ``model.onnx`` (and ``crf.json``, ``tokenizer.json``) into ``folder``; check the graph, fed by this
    module's runtime code, against the PyTorch model on sentences of other lengths and batch size than the traced
    ones (a shape frozen into the graph fails here), a sentence longer than a transformer's window among them, with
    document context when the encoder reads it; the ``onnx`` entry of config.json."""
    import warnings

    import numpy as np
    import torch

    check_exportable(model)
    model = model.cpu().eval()
    encoder, spec = transformer_encoder(model), None
    names = ["words", "chars", "mask"]
    axes = {"words": {0: "batch", 1: "length"}, "chars": {0: "batch", 1: "length", 2: "word_length"},
            "mask": {0: "batch", 1: "length"}, "emissions": {0: "batch", 1: "length"}}
    subwords = None
    if encoder is None:
        net = scoring_network(model)
    else:
        from ner_zoo.api import onnx_transformer as ot

        ot.write_tokenizer(encoder, folder)
        spec = ot.encoder_spec(encoder)
        subwords = ot.SubwordInputs(folder, spec)
        net = ot.scoring_network(model, encoder)
        names += ot.INPUTS + (["casing"] if spec["casing"] else [])
        axes.update({"input_ids": {0: "rows", 1: "row_length"}, "attention_mask": {0: "rows", 1: "row_length"},
                     "word_subwords": {0: "batch", 1: "length", 2: "subwords"}, "casing": {0: "batch", 1: "length"}})
    vocabs = model.vocabs

    def feeds(rows, left=None, right=None) -> dict:
        out = dict(zip(["words", "chars", "mask"], collate(vocabs.words, vocabs.chars, rows)))
        return {**out, **(subwords(rows, left, right) if subwords is not None else {})}

    trace = feeds(_example(model, TRACE_EXAMPLE, slice(0, 5)))
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer warnings on Python-side checks (all inputs are valid batches)
        torch.onnx.export(net, tuple(torch.from_numpy(trace[k]) for k in names), str(folder / "model.onnx"),
                          dynamo=False, input_names=names, output_names=["emissions"],
                          dynamic_axes={k: v for k, v in axes.items() if k in names + ["emissions"]},
                          opset_version=opset)
    crf = model.crf
    if crf is not None:
        from ner_zoo.modules.crf import NEG

        start, trans, end = crf.start_transitions.detach(), crf.transitions.detach(), crf.end_transitions.detach()
        if crf.allowed_transitions is not None:
            start = start.masked_fill(~crf.allowed_start, NEG)
            trans = trans.masked_fill(~crf.allowed_transitions, NEG)
            end = end.masked_fill(~crf.allowed_end, NEG)
        scores = {"start": start.tolist(), "transitions": trans.tolist(), "end": end.tolist()}
        (folder / "crf.json").write_text(json.dumps(scores) + "\n")
    rows = _example(model, CHECK_EXAMPLE, slice(5, 20))
    if encoder is not None:  # and a sentence longer than the window: sub-word windows
        words = [w for r in rows for w in r]
        rows.insert(1, [words[i % len(words)] for i in range(encoder.budget + 7)])
    sentences = [Sentence(r, doc_id="check", index=i) for i, r in enumerate(rows)]
    left = right = None
    saved = encoder.documents if encoder is not None else None
    try:
        if encoder is not None and encoder.context > 0:  # the check sentences are one document, in both runtimes
            from ner_zoo.training.prediction import index_context

            index_context(model, sentences, replace=True)
            subwords.add_documents(sentences, replace=True)
            left, right = subwords.neighbours(sentences)
        with torch.no_grad():
            want = model.emissions(model.collate(list(enumerate(sentences)))).float().numpy()
    finally:
        if encoder is not None:
            encoder.documents = saved
    session = OnnxModel.session_for(folder / "model.onnx", "cpu")
    check = feeds(rows, left, right)
    got = session.run(None, {i.name: check[i.name] for i in session.get_inputs()})[0]
    if got.shape != want.shape or not np.allclose(got, want, atol=1e-4, rtol=1e-4):
        raise CheckpointError(f"{type(model).__name__}: the ONNX graph does not reproduce the emissions on a batch of "
                              "other shapes than the traced one (a data-dependent shape was frozen, or the inputs "
                              "are made differently outside the graph); not exported")
    return {"file": "model.onnx", "opset": opset, "inputs": [i.name for i in session.get_inputs()],
            "outputs": ["emissions"], "decoder": "crf" if crf is not None else "softmax",
            "tags": list(model.vocabs.tags.itos), **({"encoder": spec} if spec is not None else {})}


def collate(words_vocab, chars_vocab, rows: Sequence[Sequence[str]]):
    """``(words [B, L], chars [B, L, C], mask [B, L])`` as numpy arrays, as the PyTorch collator pads them."""
    import numpy as np

    lmax, cmax = max(len(r) for r in rows), max(len(t) for r in rows for t in r)
    words = np.zeros((len(rows), lmax), dtype=np.int64)
    chars = np.zeros((len(rows), lmax, cmax), dtype=np.int64)
    mask = np.zeros((len(rows), lmax), dtype=bool)
    get = chars_vocab.stoi.get
    for b, r in enumerate(rows):
        words[b, : len(r)] = words_vocab.lookup_indices(list(r))
        mask[b, : len(r)] = True
        for i, tok in enumerate(r):
            chars[b, i, : len(tok)] = [get(c, 1) for c in tok]
    return words, chars, mask


# runtime (numpy + onnxruntime) -----------------------------------------------------------------------------------
def _logsumexp(x: "np.ndarray", axis: int) -> "np.ndarray":
    import numpy as np

    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def viterbi(em: "np.ndarray", start: "np.ndarray", trans: "np.ndarray", end: "np.ndarray") -> list[int]:
    """Best tag path of one sentence's emissions ``[n, T]``."""
    score, back = start + em[0], []
    for t in range(1, len(em)):
        cand = score[:, None] + trans  # [from, to]
        back.append(cand.argmax(0))
        score = cand.max(0) + em[t]
    path = [int((score + end).argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return path[::-1]


def marginals(em: "np.ndarray", start: "np.ndarray", trans: "np.ndarray", end: "np.ndarray") -> "np.ndarray":
    """Posterior tag probabilities ``[n, T]`` of one sentence (forward-backward in log space, float64)."""
    import numpy as np

    n = len(em)
    alpha, beta = np.empty_like(em), np.empty_like(em)
    alpha[0] = start + em[0]
    for t in range(1, n):
        alpha[t] = _logsumexp(alpha[t - 1][:, None] + trans, 0) + em[t]
    beta[n - 1] = end
    for t in range(n - 2, -1, -1):
        beta[t] = _logsumexp(trans + (em[t + 1] + beta[t + 1])[None, :], 1)
    return np.exp(alpha + beta - _logsumexp(alpha[n - 1] + end, 0))


def viterbi_batch(em: "np.ndarray", lengths: "np.ndarray", start: "np.ndarray", trans: "np.ndarray",
                  end: "np.ndarray") -> "np.ndarray":
    """Best tag paths ``[B, L]`` (int64) of a padded batch of emissions ``[B, L, T]`` with ``lengths`` ``[B]`` (each
    >= 1); positions past a row's length are 0. Row by row the paths of :func:`viterbi` (same ties: the first
    maximum), in one pass over the positions for the whole batch."""
    import numpy as np

    batch, length, _ = em.shape
    lengths = np.asarray(lengths)
    score = start + em[:, 0]  # [B, T]
    back = np.zeros((max(length - 1, 0),) + score.shape, dtype=np.int64)  # back[t - 1]: best previous tag at t
    for t in range(1, length):
        cand = score[:, :, None] + trans  # [B, from, to]
        best = back[t - 1] = cand.argmax(1)
        live = (t < lengths)[:, None]  # a row's score stays at its last position once it has ended
        score = np.where(live, np.take_along_axis(cand, best[:, None, :], 1)[:, 0] + em[:, t], score)
    rows = np.arange(batch)
    cur = (score + end).argmax(1)  # each row's tag at its last position
    path = np.zeros((batch, length), dtype=np.int64)
    for t in range(length - 1, 0, -1):
        live = t < lengths
        path[:, t] = np.where(live, cur, 0)
        cur = np.where(live, back[t - 1][rows, cur], cur)
    path[:, 0] = cur
    return path


def marginals_batch(em: "np.ndarray", lengths: "np.ndarray", start: "np.ndarray", trans: "np.ndarray",
                    end: "np.ndarray") -> "np.ndarray":
    """Posterior tag probabilities ``[B, L, T]`` of a padded batch, 0 past each row's length; row by row
    :func:`marginals` (within 1e-12).

    Forward-backward over the whole batch per position, in probability space with each position's vector
    rescaled to sum 1 (float64): one ``[B, T] x [T, T]`` product per position instead of a ``[B, T, T]``
    log-sum-exp; a posterior is ``alpha * beta`` normalised over the tags, so the scales cancel. Scores are shifted
    by their maxima before ``exp``; a row whose rescaled vector underflows to zero (emissions hundreds apart
    under the transition constraints) is decoded again in log space (:func:`marginals_log_batch`)."""
    import numpy as np

    batch, length, _ = em.shape
    lengths = np.asarray(lengths)
    with np.errstate(under="ignore", divide="ignore", invalid="ignore", over="ignore"):
        move = np.exp(trans - trans.max())  # [from, to]; forbidden moves (-10000) are 0
        prob = np.exp(em - em.max(-1, keepdims=True))  # [B, L, T], each position's best tag 1
        alpha, beta = np.empty_like(em), np.empty_like(em)
        a = np.exp(start - start.max()) * prob[:, 0]
        alpha[:, 0] = a / a.sum(-1, keepdims=True)
        for t in range(1, length):  # past a row's end alpha is not read
            a = (alpha[:, t - 1] @ move) * prob[:, t]
            alpha[:, t] = a / a.sum(-1, keepdims=True)
        stop = np.exp(end - end.max())
        beta[:, length - 1] = stop
        for t in range(length - 2, -1, -1):  # each row's backward pass starts at its own last position
            b = (prob[:, t + 1] * beta[:, t + 1]) @ move.T
            b = b / b.sum(-1, keepdims=True)
            beta[:, t] = np.where((t < lengths - 1)[:, None], b, stop)
        post = alpha * beta
        post = post / post.sum(-1, keepdims=True)
    inside = np.arange(length) < lengths[:, None]  # [B, L]
    post = np.where(inside[:, :, None], post, 0.0)
    bad = ~(np.isfinite(post).all((1, 2)) & (np.abs(post.sum(-1) - inside) < 1e-6).all(1))
    if bad.any():
        post[bad] = marginals_log_batch(em[bad], lengths[bad], start, trans, end)
    return post


def marginals_log_batch(em: "np.ndarray", lengths: "np.ndarray", start: "np.ndarray", trans: "np.ndarray",
                        end: "np.ndarray") -> "np.ndarray":
    """:func:`marginals_batch` in log space (log-sum-exp per position; slower, no underflow)."""
    import numpy as np

    batch, length, _ = em.shape
    lengths = np.asarray(lengths)
    alpha, beta = np.empty_like(em), np.empty_like(em)
    alpha[:, 0] = start + em[:, 0]
    for t in range(1, length):  # past a row's end alpha is not read
        alpha[:, t] = _logsumexp(alpha[:, t - 1, :, None] + trans, 1) + em[:, t]
    beta[:, length - 1] = end
    for t in range(length - 2, -1, -1):  # each row's backward pass starts at its own last position
        step = _logsumexp(trans + (em[:, t + 1] + beta[:, t + 1])[:, None, :], 2)
        beta[:, t] = np.where((t < lengths - 1)[:, None], step, end)
    last = alpha[np.arange(batch), lengths - 1]  # [B, T]
    log_z = _logsumexp(last + end, 1)  # [B]
    inside = (np.arange(length) < lengths[:, None])[:, :, None]
    return np.exp(np.where(inside, alpha + beta - log_z[:, None, None], -np.inf))


def _omp_threads() -> int | None:
    """``OMP_NUM_THREADS`` as a positive int, else None (onnxruntime's default)."""
    import os

    try:
        threads = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return None
    return threads if threads > 0 else None


class OnnxModel:
    """An exported ONNX tagger: vocabularies, the onnxruntime session, the CRF scores; what :class:`OnnxTagger`
    and ``ner-zoo predict`` read (``task``, ``is_pos``, ``vocabs``) as they read a PyTorch model's."""

    def __init__(self, folder: str | Path, device: str | None = None):
        import numpy as np

        from ner_zoo.api.folder import read_config, read_json, verify_files
        from ner_zoo.data.vocab import Vocab

        folder = Path(folder)
        if not (folder / "config.json").is_file():
            raise CheckpointError(f"{folder}: not an exported ner-zoo model (no config.json)")
        config = read_config(folder)  # a foreign or damaged file: one line naming it
        verify_files(folder, config)
        vocab_path = folder / "vocabularies.json"
        vocabs = read_json(vocab_path, "vocabulary file")
        self.folder, self.config = folder, config
        self.task = config.get("task")
        self.is_pos = self.task == "pos"
        try:
            self.vocabs = SimpleNamespace(labels=list(vocabs["labels"]), scheme=vocabs.get("scheme"),
                                          tag_column=vocabs.get("tag_column"), tags=list(vocabs["tags"]))
            self.words, self.chars = Vocab.from_state(vocabs["words"]), Vocab.from_state(vocabs["chars"])
        except Exception as e:
            raise CheckpointError(f"{vocab_path}: not ner-zoo vocabularies ({type(e).__name__}: {e})"[:400]) from None
        self.crf = None
        onnx_info = config.get("onnx") if isinstance(config.get("onnx"), dict) else {}
        crf_path = folder / "crf.json"
        if crf_path.is_file() or onnx_info.get("decoder") == "crf":  # a CRF tagger's scores: required
            crf = read_json(crf_path, "CRF score file")
            try:
                self.crf = tuple(np.asarray(crf[k], dtype=np.float64) for k in ("start", "transitions", "end"))
                n = len(self.vocabs.tags)
                if [c.shape for c in self.crf] != [(n,), (n, n), (n,)]:
                    raise ValueError(f"shapes {[c.shape for c in self.crf]} for {n} tags")
            except Exception as e:
                raise CheckpointError(f"{crf_path}: not the CRF scores of this model ({type(e).__name__}: {e})"
                                      [:300]) from None
        self.subwords = None  # a transformer encoder's inputs (onnx_transformer.py)
        if config.get("onnx", {}).get("encoder"):
            from ner_zoo.api.onnx_transformer import SubwordInputs

            self.subwords = SubwordInputs(folder, config["onnx"]["encoder"])
        self.device = "cpu"
        self.to(device)

    @staticmethod
    def session_for(path: Path, device: str):
        try:
            import onnxruntime as ort
        except ImportError:
            raise ResourceError("this folder holds an ONNX model: install onnxruntime (pip install "
                                "onnxruntime, or ner-zoo's extra onnx: pip install -e '.[onnx]' in the checkout)") from None
        providers = ["CPUExecutionProvider"]
        if device.startswith("cuda"):
            providers.insert(0, ("CUDAExecutionProvider", {"device_id": int(device.partition(":")[2] or 0)}))
        opts = ort.SessionOptions()
        opts.log_severity_level = 3  # errors only: nothing printed unless asked
        threads = _omp_threads()
        if threads:  # the thread count torch takes (OMP_NUM_THREADS), not onnxruntime's own (all physical cores,
            opts.intra_op_num_threads = threads  # spinning): 1.75x faster at 1 thread on the shared 2-core VM
        if not Path(path).is_file():
            raise CheckpointError(f"{path}: missing; not a complete ONNX export")
        try:
            return ort.InferenceSession(str(path), opts, providers=providers)
        except Exception as e:  # onnxruntime's InvalidProtobuf, Fail, InvalidGraph
            if isinstance(e, (ImportError, MemoryError)):
                raise
            line = " ".join(str(e).split())[:200]
            raise CheckpointError(f"{path}: not a loadable ONNX model ({type(e).__name__}: {line})") from None

    def to(self, device: str | None) -> "OnnxModel":
        """``cpu``, ``cuda``/``cuda:N`` (needs onnxruntime-gpu) or ``None``/``auto`` (a GPU when onnxruntime has one)."""
        if device in (None, "auto"):
            import onnxruntime as ort

            device = "cuda" if "CUDAExecutionProvider" in ort.get_available_providers() else "cpu"
        self.device = str(device)
        self.session = self.session_for(self.folder / "model.onnx", self.device)
        self.input_names = [i.name for i in self.session.get_inputs()]
        return self

    def context_encoders(self) -> list:
        """The inputs that read neighbouring sentences (a transformer encoder's, ``context > 0``), as a PyTorch
        network's :meth:`~ner_zoo.training.network.Network.context_encoders`: what
        :func:`ner_zoo.training.prediction.index_context` writes."""
        return [self.subwords] if self.subwords is not None and self.subwords.context > 0 else []

    def emissions(self, rows: Sequence[Sequence[str]], left: Sequence[Sequence[str]] | None = None,
                  right: Sequence[Sequence[str]] | None = None) -> "np.ndarray":
        """Emission scores ``[B, L, T]`` (float32) of token rows (with context words per row: ``left``/``right``)."""
        feeds = dict(zip(["words", "chars", "mask"], collate(self.words, self.chars, rows)))
        if self.subwords is not None:
            feeds.update(self.subwords(rows, left, right))
        return self.session.run(None, {k: feeds[k] for k in self.input_names})[0]

    def decode(self, rows: Sequence[Sequence[str]], left: Sequence[Sequence[str]] | None = None,
               right: Sequence[Sequence[str]] | None = None) -> list[tuple[list, list[float] | None]]:
        """Per row, ``(spans, scores)`` (POS: ``(tags, None)``): Viterbi and marginals, or argmax and softmax."""
        import numpy as np

        from ner_zoo.data.tagging import tags_to_spans

        out = []
        emissions = self.emissions(rows, left, right).astype(np.float64)
        if self.crf is not None:  # the whole padded batch at once
            lengths = np.array([len(row) for row in rows], dtype=np.int64)
            paths = viterbi_batch(emissions, lengths, *self.crf)
            all_probs = marginals_batch(emissions, lengths, *self.crf)
        for b, (row, em) in enumerate(zip(rows, emissions)):
            em = em[: len(row)]
            if self.crf is not None:
                ids = paths[b, : len(row)].tolist()
                probs = all_probs[b, : len(row)]
            else:
                ids = em.argmax(1).tolist()
                probs = np.exp(em - em.max(1, keepdims=True))
                probs /= probs.sum(1, keepdims=True)
            tags = [self.vocabs.tags[i] for i in ids]
            if self.is_pos:
                out.append((tags, None))
                continue
            picked = probs[np.arange(len(ids)), ids]
            spans = tags_to_spans(tags)
            out.append((spans, [min(1.0, max(0.0, float(picked[s.start:s.end].mean()))) for s in spans]))
        return out


class OnnxTagger(Tagger):
    """:class:`ner_zoo.Tagger` on an ONNX folder (``ner_zoo.load(DIR)`` makes one): same calls, same entities;
    onnxruntime computes the emissions, numpy decodes them.

    Args:
        folder: a folder written by ``ner-zoo export ... --format onnx``.
        device: ``cpu`` (default where onnxruntime has no GPU), ``cuda`` or ``auto``.
        batch_size: sentences per run of the graph.
        batch_tokens: at most this many padded words per run too (``None``: no token budget).

    Batches and document context come from the one inference path (:func:`ner_zoo.training.prediction.run`,
    through :meth:`ner_zoo.Tagger.predict_sentences`); this class only runs a batch (:meth:`_decode`).
    """

    def __init__(self, folder: str | Path, device: str | None = None, batch_size: int = 32,
                 split_sentences: bool = True, _allow_pos: bool = False, batch_tokens: int | None = None):
        model = OnnxModel(folder, device)
        if model.is_pos and not _allow_pos:
            raise CheckpointError("this is a POS tagger: Tagger returns entities")
        self.model, self.batch_size, self.precision, self.split_sentences = model, batch_size, "32", split_sentences
        self.batch_tokens = batch_tokens

    @property
    def device(self) -> str:
        return self.model.device

    @property
    def labels(self) -> list[str]:
        return list(self.model.vocabs.labels)

    def to(self, device: str) -> "OnnxTagger":
        self.model.to(device)
        return self

    def _decode(self, items: list[tuple[int, Sentence]]) -> list[tuple[list, list[float] | None]]:
        """One batch through the graph (document context from the sub-word inputs' index), decoded in numpy."""
        chunk = [s for _, s in items]
        subwords = self.model.subwords
        left, right = subwords.neighbours(chunk) if subwords is not None else (None, None)
        return self.model.decode([s.tokens for s in chunk], left, right)
