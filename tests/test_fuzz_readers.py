"""Fuzzing every reader: random bytes, mutated fixture files random JSON structures and fixture records with a field of the wrong type either parse or raise
the project's own error (:class:`~ner_zoo.errors.NerZooError`), never another exception, never hang.

The default run tries ``FAST`` inputs per reader and input kind; ``-m slow`` runs ``SLOW`` of each. Run
with ``-s`` to print how many inputs each reader received (the numbers quoted in docs/reliability.md).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ner_zoo.data.readers import read_conll, read_nested_json, read_prediction_conll, read_ptb_mrg, read_ptb_pos
from ner_zoo.data.writers import read_prediction_jsonl
from ner_zoo.errors import NerZooError

FIX = Path(__file__).parent / "fixtures"
FAST, SLOW = 40, 300

READERS = {
    "conll": (read_conll, ".conll"),
    "nested_json": (read_nested_json, ".jsonl"),
    "nested_json_genia": (lambda p: read_nested_json(p, shape="genia"), ".jsonl"),
    "nested_json_dygie": (lambda p: read_nested_json(p, shape="dygie"), ".json"),
    "nested_json_lal": (lambda p: read_nested_json(p, shape="lal"), ".json"),
    "ptb_mrg": (read_ptb_mrg, ".mrg"),
    "ptb_pos": (read_ptb_pos, ".pos"),
    "prediction_conll": (read_prediction_conll, ".conll"),
    "prediction_jsonl": (read_prediction_jsonl, ".jsonl"),
}

PREDICTION_CONLL = b"-DOCSTART- O O\n\nEU B-ORG B-ORG\nrejects O O\nGerman B-MISC O\n\nPeter B-PER B-PER\n"
PREDICTION_JSONL = (b'{"tokens": ["a", "b"], "gold_spans": [[0, 1, "X"]], "pred_spans": [[0, 2, "X"]]}\n'
                    b'{"tokens": ["c"], "gold_spans": [], "pred_spans": [], "pred_scores": []}\n')
SEEDS = [p.read_bytes() for p in sorted(FIX.iterdir()) if p.is_file()] + [PREDICTION_CONLL, PREDICTION_JSONL]

# pieces that make mutations meaningful for these formats
PIECES = [b"\n", b"\n\n", b" ", b"\t", b"(", b")", b"[", b"]", b"{", b"}", b",", b":", b'"', b"/", b"-DOCSTART-",
          b"B-", b"I-PER", b"E-", b"S-LOC", b"O", b"-NONE-", b"=====", b"0", b"-1", b"99", b"null", b"\xff\xfe",
          b"\r\n", b"\x00", "é".encode(), b'"tokens"', b'"entity_mentions"', b'"ner"', b'"sentences"',
          b'"entities"', b'"start"', b'"end"', b'"gold_spans"', b'"pred_spans"']


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "truncate"]))
        i = draw(st.integers(0, len(data)))
        j = min(len(data), i + draw(st.integers(0, 40)))
        if op == "insert":
            data[i:i] = draw(st.sampled_from(PIECES) | st.binary(max_size=8))
        elif op == "delete":
            del data[i:j]
        elif op == "replace":
            data[i:j] = draw(st.sampled_from(PIECES))
        elif op == "duplicate":
            data[i:i] = data[i:j]
        else:
            del data[i:]
    return bytes(data)


KEYS = ["tokens", "entity_mentions", "start", "end", "entity_type", "type", "sentences", "ner", "doc_key", "doc_id",
        "entities", "ltokens", "rtokens", "pos", "gold_spans", "pred_spans", "pred_scores"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 6) | st.floats(allow_nan=False, width=16) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=20)


@st.composite
def json_files(draw) -> bytes:
    records = draw(st.lists(JSON_VALUES, min_size=0, max_size=4))
    if draw(st.booleans()):
        return json.dumps(records).encode()
    return "\n".join(json.dumps(r) for r in records).encode()


def _json_records(data: bytes) -> list:
    text = data.decode("utf-8").strip()
    return json.loads(text) if text.startswith("[") else [json.loads(line) for line in text.splitlines() if line.strip()]


JSON_SEEDS = [_json_records(p.read_bytes()) for p in sorted(FIX.iterdir()) if p.suffix in (".json", ".jsonl")] + \
    [_json_records(PREDICTION_JSONL)]


def _slots(value, path=()):
    """Every place in a JSON value: (path) for each dict value and list item."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _slots(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _slots(v, path + (i,))


@st.composite
def wrong_type_fields(draw) -> bytes:
    """A valid fixture record with one field (at any depth) replaced by a value of another JSON type
    (``"entity_mentions": null``, ``"sentences": 5``, ``"ner": "PER"`` ...)."""
    records = json.loads(json.dumps(draw(st.sampled_from(JSON_SEEDS))))
    for _ in range(draw(st.integers(1, 2))):
        slots = [p for p in _slots(records) if p]
        if draw(st.booleans()):  # half the time a record's own field, the likeliest to be mistyped
            slots = [p for p in slots if len(p) == 2] or slots
        path = draw(st.sampled_from(slots))
        parent = records
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = draw(JSON_VALUES)
    if draw(st.booleans()):
        return json.dumps(records).encode()
    return "\n".join(json.dumps(r) for r in records).encode()


TEXT = st.lists(st.sampled_from(list(" \t\n()[]/=-BIESO.XPERLOCa\\{}\"") + ["-DOCSTART-", "-NONE-", "I-PER", "\n\n"]),
                max_size=120).map(lambda parts: "".join(parts).encode())
KINDS = {"random_bytes": st.binary(max_size=300), "format_alphabet": TEXT, "mutated_fixture": mutated(),
         "random_json": json_files(), "wrong_type_fields": wrong_type_fields()}

_DIR = Path(tempfile.mkdtemp(prefix="ner_zoo_fuzz_"))


def check(reader: str, data: bytes) -> None:
    fn, suffix = READERS[reader]
    path = _DIR / f"input{suffix}"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(path)
        except NerZooError:
            pass  # a clear, intended error (its message is checked in test_readers.py)


def _run(reader: str, kind: str, n: int) -> None:
    @settings(max_examples=n, deadline=10_000, database=None, derandomize=True,  # catches hangs, not load
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(KINDS[kind])
    def fuzz(data: bytes) -> None:
        check(reader, data)

    fuzz()


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("reader", list(READERS))
def test_fuzz_reader(reader, kind):
    _run(reader, kind, FAST)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("reader", list(READERS))
def test_fuzz_reader_long(reader, kind):
    _run(reader, kind, SLOW)
