"""``ner-zoo serve MODEL``: an HTTP server for an exported folder (or a checkpoint), on LitServe.

    curl -s localhost:8000/predict -H 'Content-Type: application/json' -d '{"text": "Angela Merkel visited Paris."}'

``POST /predict`` takes ``{"text": "..."}``, ``{"text": ["...", ...]}`` or ``{"tokens": [...]}`` and answers
``{"entities": [...]}`` (``text``, ``label``, ``start``, ``end``, ``score``, ...), as ``ner_zoo.load(MODEL)(...)``
gives them; any other body is a 422 naming what is wrong, for that request alone. ``GET /health`` answers ``ok``
once the model is loaded. Requests that arrive together are tagged in one batch (``--max_batch_size``,
``--batch_timeout``). SIGTERM (``kill``, ``docker stop``) stops the server and its workers and exits 143, Ctrl-C
130. Needs ner-zoo's extra ``serve``
(``pip install -e '.[serve]'`` in the checkout).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ner_zoo.cli.args import ArgumentParser, port, positive_int, seconds
from ner_zoo.errors import ResourceError

SIGTERM_EXIT, SIGINT_EXIT = 128 + 15, 128 + 2


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="ner-zoo serve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="an exported folder (ner-zoo export), a checkpoint, or a Hub id namespace/name "
                                 "(downloaded to the Hugging Face cache)")
    p.add_argument("--revision", help="with a Hub id: the branch, tag or commit (default: main)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    p.add_argument("--port", type=port, default=8000)
    p.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--max_batch_size", type=positive_int, default=16, help="requests tagged together at most")
    p.add_argument("--batch_timeout", type=seconds, default=0.01, help="seconds to wait for a batch to fill")
    p.add_argument("--workers", type=positive_int, default=1, help="worker processes per device")
    return p


def serve_main(argv: Sequence[str]) -> int:
    a = parser().parse_args(argv)
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

    main_pid, stopped = os.getpid(), []

    def stop(signum, frame):  # SIGTERM (kill, docker stop) as Ctrl-C: LitServe's shutdown for that path ends the
        if os.getpid() != main_pid:  # workers; on any other exception it waits on its queues and never exits.
            raise SystemExit(128 + signum)  # a process LitServe forked (its HTTP server) exits quietly
        stopped.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop), signal.signal(signal.SIGINT, stop)
    try:
        serve(a.model, host=a.host, port=a.port, accelerator=a.accelerator, max_batch_size=a.max_batch_size,
              batch_timeout=a.batch_timeout, workers=a.workers)
    except KeyboardInterrupt:  # LitServe handles the one raised while it waits; one raised elsewhere lands here
        pass
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    if not stopped:  # LitServe's own shutdown (its /shutdown endpoint)
        return 0
    term = stopped[0] == signal.SIGTERM
    print(f"ner-zoo serve: stopped by {'SIGTERM' if term else 'Ctrl-C'}", file=sys.stderr)
    return SIGTERM_EXIT if term else SIGINT_EXIT
