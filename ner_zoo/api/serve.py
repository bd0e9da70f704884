"""``ner-zoo serve DIR``: an HTTP server for a model, on LitServe (Lightning's inference server: FastAPI and
uvicorn underneath, request batching, worker processes, health endpoint), answering the Python API's JSON.

``POST /predict`` with ``{"text": "..."}`` (or a list of texts, or ``{"tokens": [...]}``) answers
``{"entities": [...]}``, each entity as :meth:`ner_zoo.api.Entity.to_dict` (``text``, ``label``, ``start``,
``end``, ``score``, ...); a list in gives a list of lists out. Concurrent requests are tagged together, up to
``max_batch_size`` requests per forward pass. ``GET /health`` answers ``ok`` once the model is loaded.
"""

from __future__ import annotations

from typing import Any

import litserve as ls


class NERAPI(ls.LitAPI):
    def __init__(self, model: str, batch_size: int = 32, max_batch_size: int = 16, batch_timeout: float = 0.01):
        super().__init__(max_batch_size=max_batch_size, batch_timeout=batch_timeout)
        self.model_path, self.batch_size = model, batch_size

    def setup(self, device: str) -> None:
        from ner_zoo.api import load

        self.tagger = load(self.model_path, device=device, batch_size=self.batch_size)

    def decode_request(self, request):  # unannotated: LitServe reads the JSON body
        if not isinstance(request, dict) or ("text" in request) == ("tokens" in request):
            from fastapi import HTTPException

            raise HTTPException(400, 'send a JSON body {"text": "..."}, {"text": ["...", ...]} or {"tokens": [...]}')
        return request

    def batch(self, inputs: list) -> list:
        return list(inputs)

    def predict(self, requests: Any) -> list:
        single = isinstance(requests, dict)
        requests = [requests] if single else requests
        texts, where = [], []  # every text of every request in one call: one batched forward pass
        for r in requests:
            if "text" in r:
                items = [r["text"]] if isinstance(r["text"], str) else list(r["text"])
                where.append(("text", isinstance(r["text"], str), len(texts), len(items)))
                texts += items
            else:
                where.append(("tokens", None, r["tokens"], None))
        tagged = self.tagger(texts) if texts else []
        out = []
        for kind, one, start, n in where:
            if kind == "tokens":
                ents = self.tagger(tokens=start)
                out.append(ents)
            else:
                got = tagged[start: start + n]
                out.append(got[0] if one else got)
        return out[0] if single else out

    def unbatch(self, output: list) -> list:
        return list(output)

    def encode_response(self, output: Any) -> dict:
        def enc(x):
            return [enc(y) for y in x] if isinstance(x, list) else x.to_dict()

        return {"entities": enc(output)}


def serve(model: str, host: str = "127.0.0.1", port: int = 8000, accelerator: str = "auto",
          max_batch_size: int = 16, batch_timeout: float = 0.01, workers: int = 1, batch_size: int = 32) -> None:
    api = NERAPI(model, batch_size=batch_size, max_batch_size=max_batch_size, batch_timeout=batch_timeout)
    server = ls.LitServer(api, accelerator=accelerator, workers_per_device=workers, timeout=60)
    server.run(host=host, port=port, generate_client_file=False, log_level="warning")
