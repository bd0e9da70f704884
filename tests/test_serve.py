"""``ner-zoo serve``: a real server on 127.0.0.1 answers HTTP requests with the Python API's JSON, then stops."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from test_model_use import ROOT

pytest.importorskip("litserve")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: object) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_serve_answers_http_with_the_api_json(exported, tmp_path):
    import ner_zoo

    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    server = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "serve", str(exported), "--host", "127.0.0.1",
                               "--port", str(port), "--accelerator", "cpu"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:  # bounded wait for the model to load
            assert server.poll() is None, server.stdout.read().decode()[-3000:]
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.5)
        tagger = ner_zoo.load(exported, device="cpu")
        text = "Anna Berg visited Paris on Monday.  Shares of Globex rose in Florence!"
        code, body = post(f"{base}/predict", {"text": text})
        assert code == 200 and body == {"entities": [e.to_dict() for e in tagger(text)]}
        code, body = post(f"{base}/predict", {"text": [text, "no one"]})
        assert code == 200 and body["entities"] == [[e.to_dict() for e in row] for row in tagger([text, "no one"])]
        code, body = post(f"{base}/predict", {"tokens": ["Anna", "Berg", "visited", "Paris"]})
        assert code == 200 and body["entities"] == [e.to_dict() for e in tagger(tokens=["Anna", "Berg", "visited", "Paris"])]
        code, body = post(f"{base}/predict", {"words": "x"})
        assert code == 400 and "text" in body["detail"]
        server.send_signal(signal.SIGTERM)  # the main process alone (kill PID, docker stop): it ends its workers
        server.wait(timeout=60)
        deadline = time.monotonic() + 60
        while True:  # nothing left in its session once the workers have finished stopping
            try:
                os.killpg(server.pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "the server exited but left processes running"
            time.sleep(0.5)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # its own session: the server and its workers
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
        try:
            os.killpg(server.pid, signal.SIGKILL)  # workers left behind by a failed check
        except ProcessLookupError:
            pass
