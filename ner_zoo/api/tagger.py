"""A :class:`Tagger` (what ``ner_zoo.load(path)`` gives, :mod:`ner_zoo.api.loading`): a trained model applied to raw text or tokens, giving entities with
character offsets and a confidence each. No Trainer, nothing printed. torch is imported on first use: a folder
exported with ``--format onnx`` runs on onnxruntime alone (:mod:`ner_zoo.api.onnx`)."""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ner_zoo.api.text import Token, sentences as split_text
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.errors import CheckpointError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Entity:
    """One predicted entity.

    Attributes:
        text: ``input[start:end]``.
        label: the entity type.
        start, end: character offsets into the input string (end exclusive); for pre-tokenized input, into the
            tokens joined by single spaces.
        score: confidence in [0, 1] (``None`` for a model that has none).
        sentence: index of the sentence within the input (raw text is split into sentences).
        token_start, token_end: the token range within that sentence (end exclusive).
    """

    text: str
    label: str
    start: int
    end: int
    score: float | None
    sentence: int = 0
    token_start: int = 0
    token_end: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def pick_device(device: str | torch.device | None) -> torch.device:
    import torch

    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device("cpu" if device == "cpu" else device)


def load_any(path: str | Path, device: str | torch.device | None = None):
    """The model stored in ``path``: an exported folder (``config.json`` + ``model.safetensors``) or a checkpoint
    (an ONNX folder: :func:`ner_zoo.api.onnx.load_onnx`)."""
    path = Path(path)
    if path.is_dir():
        from ner_zoo.api.folder import load_folder

        model = load_folder(path)
    else:
        from ner_zoo.training.inference import load_network

        model = load_network(path)
    return model.to(pick_device(device)).eval()


class Tagger:
    """A trained model ready to tag text. Make one with :func:`ner_zoo.load`.

    ``tagger("Angela Merkel visited Paris.")`` -> list of :class:`Entity`; a list of strings gives one list per
    string; ``tagger(tokens=[...])`` (or a list of token lists) tags pre-tokenized sentences.

    Args:
        model: a loaded ner-zoo model (span-producing task: NER, nested NER, chunking).
        batch_size: sentences per forward pass.
        batch_tokens: at most this many padded positions per forward pass too (words, or a transformer's
            sub-words); ``None``: no token budget.
        precision: ``32`` (default), ``bf16`` or ``16`` (autocast on the model's device).
        split_sentences: split raw text into sentences (paragraphs are always split at blank lines).
    """

    def __init__(self, model, batch_size: int = 32, precision: str = "32", split_sentences: bool = True,
                 _allow_pos: bool = False, batch_tokens: int | None = None):
        if getattr(model, "is_pos", False) and not _allow_pos:  # predict_sentences gives tags (ner-zoo predict)
            raise CheckpointError("this is a POS tagger: use ner_zoo.training.inference.predict for tags; "
                                  "Tagger returns entities")
        self.model = model.eval()
        self.batch_size, self.batch_tokens = batch_size, batch_tokens
        self.precision = str(precision)
        self.split_sentences = split_sentences

    @property
    def device(self) -> torch.device:
        return next(iter(self.model.parameters())).device

    @property
    def labels(self) -> list[str]:
        return list(self.model.vocabs.labels)

    def to(self, device: str | torch.device) -> "Tagger":
        self.model.to(pick_device(device))
        return self

    # prediction ---------------------------------------------------------------------------------------------
    @property
    def context_sentences(self) -> int:
        """Neighbouring sentences per side that the model reads as document context (0: none)."""
        from ner_zoo.training.prediction import context_sentences

        return context_sentences(self.model)

    def predict_sentences(self, sentences: Sequence[Sentence], keep_context: bool = False,
                          context: Sequence[Sentence] = ()) -> list[tuple[list[Span], list[float] | None]]:
        """``(spans, scores)`` per sentence, in input order (empty sentences give no spans). An encoder that reads
        neighbouring sentences of a document finds them among ``sentences`` and ``context`` (sentences read, not
        tagged: the rest of a file), or, with ``keep_context``, also among those of earlier calls (``ner-zoo
        predict`` tags a file group by group). Batches and context: the one inference path,
        :func:`ner_zoo.training.prediction.run`."""
        from ner_zoo.training.prediction import run

        return run(self.model, sentences, self._decode, self.batch_size, self.batch_tokens, keep_context, context)

    def _decode(self, items: list[tuple[int, Sentence]]) -> list[tuple[list[Span], list[float] | None]]:
        """One batch on the model's device: spans with their scores."""
        import torch

        from ner_zoo.training.prediction import with_scores

        device = self.device
        batch = self.model.collate(items).to(device)
        with torch.no_grad(), self._autocast(device):
            return [with_scores(p) for p in self.model.predict(batch)]

    def _autocast(self, device: torch.device):
        import torch

        if self.precision.startswith("bf16"):
            return torch.autocast(device.type, dtype=torch.bfloat16)
        if self.precision.startswith("16"):
            return torch.autocast(device.type, dtype=torch.float16)
        return contextlib.nullcontext()  # 32 (and anything else): full precision

    def __call__(self, text: str | list[str] | None = None, tokens: list[str] | list[list[str]] | None = None):
        """Entities of ``text`` (a string -> a list; a list of strings -> a list per string) or of pre-tokenized
        ``tokens`` (a list of strings -> a list; a list of such lists -> a list per sentence). Any other type (a
        tuple, a generator, bytes, a string as ``tokens``, a dict) is a ``TypeError`` saying what it got; a token
        that is empty or holds whitespace is a ``ValueError``."""
        kind, single, rows = check_call(text, tokens)
        if kind == "tokens":
            res = self.tag_tokens(rows)
        else:
            res = self.tag_texts(rows)
        return res[0] if single else res

    def render(self, text: str | Sequence[str], title: str = "ner-zoo entities") -> str:
        """A self-contained HTML page of ``text`` (or of each text of a list) with its entities marked, labelled
        and scored, displaCy-like (:mod:`ner_zoo.api.render`): write it to a file and open it in a browser."""
        from ner_zoo.api.render import page

        texts = [text] if isinstance(text, str) else list(text)
        return page(texts, self.tag_texts(texts), title)

    def tag_texts(self, texts: Sequence[str]) -> list[list[Entity]]:
        """One entity list per text (tokenized and split into sentences here)."""
        return self.tag([("text", t) for t in texts])

    def tag_tokens(self, rows: Sequence[Sequence[str]]) -> list[list[Entity]]:
        """One entity list per pre-tokenized sentence; offsets index ``" ".join(tokens)``."""
        return self.tag([("tokens", r) for r in rows])

    def tag(self, inputs: Sequence[tuple[str, object]]) -> list[list[Entity]]:
        """One entity list per input, ``("text", a string)`` (tokenized and split into sentences here) or
        ``("tokens", a list of words)`` (offsets index the words joined by single spaces), all in one call of
        :meth:`predict_sentences` (the server tags a batch of requests so). A text is its own document."""
        sents, where = [], []
        for n, (kind, value) in enumerate(inputs):
            if kind == "text":
                for si, toks in enumerate(split_text(value, split=self.split_sentences)):
                    sents.append(Sentence([t.text for t in toks], doc_id=f"text{n}", index=si, source=f"text {n}"))
                    where.append((n, value, si, toks))
            else:
                toks, pos = [], 0
                for t in value:
                    toks.append(Token(t, pos, pos + len(t)))
                    pos += len(t) + 1
                sents.append(Sentence(list(value), doc_id=None, index=n, source=f"sentence {n}"))
                where.append((n, " ".join(value), 0, toks))
        results: list[list[Entity]] = [[] for _ in inputs]
        for (n, text, si, toks), (spans, scores) in zip(where, self.predict_sentences(sents)):
            results[n].extend(entities(text, toks, spans, scores, si))
        return results


def _got(x: object) -> str:
    shown = repr(x)
    return f"{type(x).__name__} {shown[:40] + '...' if len(shown) > 40 else shown}"


def check_call(text: object = None, tokens: object = None) -> tuple[str, bool, list]:
    """What :meth:`Tagger.__call__` accepts, exactly as docs/api.md says: ``text`` a string or a list of strings,
    or ``tokens`` a list of strings or a list of lists of strings; one of the two. ``(kind, single, rows)``:
    ``kind`` is ``text`` or ``tokens``, ``single`` whether one input was given (one list of entities back), and
    ``rows`` the texts or token lists. Anything else is a ``TypeError`` naming what was given."""
    if (text is None) == (tokens is None):
        raise TypeError("pass text= (a string or a list of strings) or tokens= (a list of strings or a list of such "
                        "lists), one of them" + ("" if text is None else f"; got both (text={_got(text)})"))
    if text is not None:
        if isinstance(text, str):
            return "text", True, [text]
        if not isinstance(text, list):
            raise TypeError(f"text must be a string or a list of strings; got {_got(text)}"
                            + (" (pre-tokenized input: tokens=[...])" if isinstance(text, tuple) else ""))
        for i, t in enumerate(text):
            if not isinstance(t, str):
                raise TypeError(f"text must be a string or a list of strings; got a list whose item {i} is {_got(t)}"
                                + (" (pre-tokenized input: tokens=[...])" if isinstance(t, list) else ""))
        return "text", False, list(text)
    if not isinstance(tokens, list):
        raise TypeError(f"tokens must be a list of strings or a list of lists of strings; got {_got(tokens)}"
                        + (" (raw text: pass it as text)" if isinstance(tokens, str) else ""))
    single = not tokens or isinstance(tokens[0], str)
    rows = [tokens] if single else tokens
    for i, row in enumerate(rows):
        if not isinstance(row, list):
            raise TypeError(f"tokens must be a list of strings or a list of lists of strings; got a list whose item "
                            f"{i} is {_got(row)}")
        for k, t in enumerate(row):
            if not isinstance(t, str):
                where = f"item {k}" if single else f"item {i}, token {k}"
                raise TypeError(f"tokens must be a list of strings or a list of lists of strings; got a list whose "
                                f"{where} is {_got(t)}")
            if not t or any(c.isspace() for c in t):
                raise ValueError(f"tokens must be non-empty strings without whitespace; got {t!r}"
                                 + ("" if single else f" in sentence {i}"))
    return "tokens", single, [list(r) for r in rows]


def entities(text: str, toks: Sequence[Token], spans: Iterable[Span], scores: Sequence[float] | None,
             sentence: int) -> list[Entity]:
    """Token spans -> :class:`Entity` objects with character offsets, sorted by position (longer first)."""
    out = []
    for k, sp in enumerate(spans):
        start, end = toks[sp.start].start, toks[sp.end - 1].end
        score = None if scores is None else round(float(scores[k]), 6)
        out.append(Entity(text[start:end], sp.label, start, end, score, sentence, sp.start, sp.end))
    return sorted(out, key=lambda e: (e.start, -e.end, e.label))
