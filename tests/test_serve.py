"""``ner-zoo serve``: a real server on 127.0.0.1 answers HTTP requests with the Python API's JSON, refuses each bad
request on its own (422, the good requests batched with it unharmed), then stops on SIGTERM with 143 and one line."""

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
from concurrent.futures import ThreadPoolExecutor

import pytest

from test_model_use import ROOT

pytest.importorskip("litserve")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: object, raw: bytes | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if raw is None else raw
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


#: bodies every one of which must be refused with a 4xx naming the problem, whatever is batched with it
BAD = {
    "malformed JSON": (None, b'{"text": "Angela'),
    "empty body": (None, b""),
    "text a number": ({"text": 5}, None),
    "text a list with a number": ({"text": ["fine", 5]}, None),
    "text null": ({"text": None}, None),
    "tokens a string": ({"tokens": "Paris"}, None),
    "a token with a space": ({"tokens": ["New York"]}, None),
    "an empty token": ({"tokens": ["a", ""]}, None),
    "tokens of mixed depth": ({"tokens": ["a", ["b"]]}, None),
    "both keys": ({"text": "x", "tokens": ["x"]}, None),
    "no key": ({}, None),
    "an unknown key": ({"words": "x"}, None),
    "a JSON list": ([{"text": "x"}], None),
    "a JSON string": ("Paris", None),
}


def start_server(exported, tmp_path, *options: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    server = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "serve", str(exported), "--host", "127.0.0.1",
                               "--port", str(port), "--accelerator", "cpu", *options], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:  # bounded wait for the model to load
        if server.poll() is not None:
            raise AssertionError(server.stdout.read().decode()[-3000:])
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                if r.status == 200:
                    return server, base
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if time.monotonic() > deadline:
            stop_server(server)
            raise AssertionError("server did not start")
        time.sleep(0.5)


def stop_server(server: subprocess.Popen) -> None:
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


def test_serve_answers_http_with_the_api_json(exported, tmp_path):
    import ner_zoo

    # a long batch window, so that the concurrent requests below meet in one batch
    server, base = start_server(exported, tmp_path, "--max_batch_size", "32", "--batch_timeout", "0.5")
    try:
        tagger = ner_zoo.load(exported, device="cpu")
        text = "Anna Berg visited Paris on Monday.  Shares of Globex rose in Florence!"
        code, body = post(f"{base}/predict", {"text": text})
        assert code == 200 and body == {"entities": [e.to_dict() for e in tagger(text)]}
        code, body = post(f"{base}/predict", {"text": [text, "no one"]})
        assert code == 200 and body["entities"] == [[e.to_dict() for e in row] for row in tagger([text, "no one"])]
        code, body = post(f"{base}/predict", {"tokens": ["Anna", "Berg", "visited", "Paris"]})
        assert code == 200 and body["entities"] == [e.to_dict() for e in tagger(tokens=["Anna", "Berg", "visited", "Paris"])]
        rows = [["Anna", "Berg"], ["Globex", "rose"]]
        code, body = post(f"{base}/predict", {"tokens": rows})
        assert code == 200 and body["entities"] == [[e.to_dict() for e in r] for r in tagger(tokens=rows)]

        # concurrent good and bad requests: every status is the request's own
        goods = [f"Anna Berg number {i} visited Paris." for i in range(20)]
        jobs = [("good", t, ({"text": t}, None)) for t in goods] + [("bad", name, b) for name, b in BAD.items()]
        jobs = [jobs[i] for i in sorted(range(len(jobs)), key=lambda i: (i * 7) % len(jobs))]  # interleaved
        with ThreadPoolExecutor(len(jobs)) as pool:
            answers = list(pool.map(lambda j: post(f"{base}/predict", j[2][0], j[2][1]), jobs))
        wrong = []
        for (kind, what, _), (code, body) in zip(jobs, answers):
            if kind == "good":
                if code != 200 or body != {"entities": [e.to_dict() for e in tagger(what)]}:
                    wrong.append((what, code, body))
            elif code != 422 or not body.get("detail"):  # FastAPI's validation error: where and what
                wrong.append((what, code, body))
        assert not wrong, [(what, code) for what, code, _ in wrong]
        with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
            assert r.status == 200

        server.send_signal(signal.SIGTERM)  # the main process alone (kill PID, docker stop): it ends its workers
        rc = server.wait(timeout=60)
        log = server.stdout.read().decode()
        assert rc == 143, log[-3000:]
        assert "Traceback" not in log and "ner-zoo serve: stopped by SIGTERM" in log, log[-3000:]
        deadline = time.monotonic() + 60
        while True:  # nothing left in its session once the workers have finished stopping
            try:
                os.killpg(server.pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "the server exited but left processes running"
            time.sleep(0.5)
    finally:
        stop_server(server)


def test_a_failing_request_fails_alone():
    """Should the batch's forward pass raise for one request, the others of its batch are still answered."""
    from ner_zoo.api.serve import NERAPI

    class Tagger:
        def tag(self, inputs):  # what the server calls: every text and token list of the batch at once
            if ("text", "boom") in inputs:
                raise RuntimeError("boom")
            return [[] for _ in inputs]

    api = NERAPI("unused")
    api.tagger = Tagger()
    out = api.predict([{"text": "fine"}, {"text": "boom"}, {"tokens": ["a"]}])
    assert out[0] == [] and out[2] == []
    assert api.encode_response(out[0]) == {"entities": []}
    failed = api.encode_response(out[1])
    assert failed.status_code == 500 and b"boom" in failed.body


@pytest.mark.parametrize("name", sorted(BAD))
def test_request_model_refuses(name):
    """The request model alone (what FastAPI applies to each body): every bad shape is refused."""
    from pydantic import ValidationError

    from ner_zoo.api.serve import PredictRequest

    body, raw = BAD[name]
    with pytest.raises(ValidationError):
        if raw is not None:
            PredictRequest.model_validate_json(raw)
        else:
            PredictRequest.model_validate(body)


def test_serve_usage_errors_are_one_line(capsys):
    from ner_zoo.cli.main import main

    for argv in (["serve", "m", "--prot", "1"], ["serve", "m", "--port", "x"], ["serve", "m", "--port", "70000"],
                 ["serve", "m", "--max_batch_size", "0"], ["serve", "m", "--batch_timeout", "nan"], ["serve"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("ner-zoo: error: ner-zoo serve: "), (argv, err)
