"""``ner-zoo serve DIR``: an HTTP server for a model, on LitServe (Lightning's inference server: FastAPI and
uvicorn underneath, request batching, worker processes, health endpoint), answering the Python API's JSON.

``POST /predict`` with ``{"text": "..."}`` (or a list of texts, or ``{"tokens": [...]}``) answers
``{"entities": [...]}``, each entity as :meth:`ner_zoo.api.Entity.to_dict` (``text``, ``label``, ``start``,
``end``, ``score``, ...); a list in gives a list of lists out. Concurrent requests are gathered, up to
``max_batch_size`` requests (LitServe's request batching), and their sentences tagged together through the one
inference path (sorted by cost, ``batch_size`` sentences per forward pass). ``GET /health`` answers ``ok`` once the model is loaded.

Each request is validated on its own, in the HTTP process and before it can join a batch: ``decode_request`` is
annotated with :class:`PredictRequest` (a pydantic model), so LitServe's FastAPI endpoint parses and checks the
body and answers 422 with the error (malformed JSON, an empty body, a wrong type, an unknown key, both or none of
``text`` and ``tokens``). A request that passes always reaches the model with what the Python API accepts; should a
batch still fail, its requests are tagged one by one, and only the one that fails gets a 500.
"""

# no `from __future__ import annotations`: LitServe hands decode_request's annotation to FastAPI as an object
import signal
from typing import Annotated, Any, Optional, Union

import litserve as ls
from pydantic import BaseModel, ConfigDict, StrictStr, StringConstraints, model_validator

#: a pre-tokenized word: a non-empty string without whitespace (what ``Tagger(tokens=...)`` accepts)
Word = Annotated[StrictStr, StringConstraints(min_length=1, pattern=r"^\S+$")]
SHAPES = '{"text": "..."}, {"text": ["...", ...]}, {"tokens": ["w1", "w2", ...]} or {"tokens": [["w1", ...], ...]}'


class PredictRequest(BaseModel):
    """The body of ``POST /predict``: exactly one of ``text`` (a string or a list of strings) and ``tokens`` (a list
    of words, or a list of such lists). Strict: a number is not a string, no key besides these two."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: Optional[Union[StrictStr, list[StrictStr]]] = None
    tokens: Optional[Union[list[Word], list[list[Word]]]] = None

    @model_validator(mode="after")
    def _one_of(self) -> "PredictRequest":
        if (self.text is None) == (self.tokens is None):
            raise ValueError(f"send exactly one of 'text' and 'tokens': {SHAPES}")
        return self


class _Failed:
    """The outcome of a request whose own tagging raised (a 500 for it alone)."""

    def __init__(self, error: BaseException):
        self.message = f"{type(error).__name__}: {error}"[:300]


class NERAPI(ls.LitAPI):
    def __init__(self, model: str, batch_size: int = 32, max_batch_size: int = 16, batch_timeout: float = 0.01):
        super().__init__(max_batch_size=max_batch_size, batch_timeout=batch_timeout)
        self.model_path, self.batch_size = model, batch_size

    def setup(self, device: str) -> None:
        from ner_zoo.api import load

        # an inference worker: SIGTERM (LitServe's terminate at shutdown) ends it at once, Ctrl-C is the main
        # process's to handle (it stops the workers); otherwise each prints a KeyboardInterrupt traceback
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.tagger = load(self.model_path, device=device, batch_size=self.batch_size)

    def decode_request(self, request: PredictRequest) -> dict:  # the annotation: FastAPI validates each body
        return request.model_dump(exclude_none=True)

    def batch(self, inputs: list) -> list:
        return list(inputs)

    def predict(self, requests: Any) -> list:
        """The batch in one pass; should that raise, each request alone, so that each outcome is its own."""
        try:
            return self._predict(requests)
        except Exception:
            if isinstance(requests, dict):
                raise
        out = []
        for r in requests:
            try:
                out.append(self._predict(r))
            except Exception as e:
                out.append(_Failed(e))
        return out

    def _predict(self, requests: Any) -> list:
        """Every text and token list of every request in one call of the tagger: one pass of the inference path
        (:func:`ner_zoo.training.prediction.run`: sorted by cost, cut by the tagger's ``batch_size``)."""
        single = isinstance(requests, dict)
        requests = [requests] if single else requests
        inputs, where = [], []
        for r in requests:
            kind = "text" if "text" in r else "tokens"
            value = r[kind]
            one = isinstance(value, str) if kind == "text" else not value or isinstance(value[0], str)
            items = [value] if one else list(value)
            where.append((one, len(inputs), len(items)))
            inputs += [(kind, v) for v in items]
        tagged = self.tagger.tag(inputs) if inputs else []
        out = [tagged[start] if one else tagged[start: start + n] for one, start, n in where]
        return out[0] if single else out

    def unbatch(self, output: list) -> list:
        return list(output)

    def encode_response(self, output: Any) -> dict:  # a JSONResponse passes through FastAPI as it is
        if isinstance(output, _Failed):  # a response, not an exception: an exception here fails the whole batch
            from fastapi.responses import JSONResponse

            return JSONResponse({"detail": f"tagging failed: {output.message}"}, status_code=500)

        def enc(x):
            return [enc(y) for y in x] if isinstance(x, list) else x.to_dict()

        return {"entities": enc(output)}


def serve(model: str, host: str = "127.0.0.1", port: int = 8000, accelerator: str = "auto",
          max_batch_size: int = 16, batch_timeout: float = 0.01, workers: int = 1, batch_size: int = 32) -> None:
    api = NERAPI(model, batch_size=batch_size, max_batch_size=max_batch_size, batch_timeout=batch_timeout)
    server = ls.LitServer(api, accelerator=accelerator, workers_per_device=workers, timeout=60)
    server.run(host=host, port=port, generate_client_file=False, log_level="warning")
