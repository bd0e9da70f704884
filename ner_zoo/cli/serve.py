"""``ner-zoo serve MODEL``: an HTTP server for an exported folder (or a checkpoint), on LitServe.

    curl -s localhost:8000/predict -H 'Content-Type: application/json' -d '{"text": "Angela Merkel visited Paris."}'

``POST /predict`` takes ``{"text": "..."}``, ``{"text": ["...", ...]}`` or ``{"tokens": [...]}`` and answers
``{"entities": [...]}`` (``text``, ``label``, ``start``, ``end``, ``score``, ...), as ``ner_zoo.load(MODEL)(...)``
gives them; ``GET /health`` answers ``ok`` once the model is loaded. Requests that arrive together are tagged in
one batch (``--max_batch_size``, ``--batch_timeout``). Needs ner-zoo's extra ``serve`` (``pip install -e '.[serve]'`` in the checkout).
"""

from __future__ import annotations

import argparse
from typing import Sequence

from ner_zoo.errors import ResourceError


def serve_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="ner-zoo serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="an exported folder (ner-zoo export), a checkpoint, or a Hub id namespace/name "
                                 "(downloaded to the Hugging Face cache)")
    p.add_argument("--revision", help="with a Hub id: the branch, tag or commit (default: main)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--max_batch_size", type=int, default=16, help="requests tagged together at most")
    p.add_argument("--batch_timeout", type=float, default=0.01, help="seconds to wait for a batch to fill")
    p.add_argument("--workers", type=int, default=1, help="worker processes per device")
    a = p.parse_args(argv)
    from pathlib import Path

    from ner_zoo.api.hub import resolve

    a.model = str(resolve(a.model, revision=a.revision))  # a Hub id: its snapshot folder, before the workers start
    if not Path(a.model).exists():
        raise ResourceError(f"{a.model}: no such model folder or checkpoint")
    try:
        from ner_zoo.api.serve import serve
    except ImportError as e:
        raise ResourceError(f"ner-zoo serve needs LitServe ({e}): ner-zoo's extra serve: pip install -e '.[serve]' in the checkout") from None
    import signal

    def stop(signum, frame):  # SIGTERM (kill, docker stop) as Ctrl-C: LitServe's shutdown for that path ends the
        raise KeyboardInterrupt  # workers; on any other exception it waits on its queues and never exits

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        serve(a.model, host=a.host, port=a.port, accelerator=a.accelerator, max_batch_size=a.max_batch_size,
              batch_timeout=a.batch_timeout, workers=a.workers)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0
