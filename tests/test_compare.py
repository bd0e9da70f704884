"""``ner-zoo compare`` over records: bad records are skipped with a warning naming them; its output never replaces a
record or an existing file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_cases import ner_zoo, one_error_line, write


# --- 8: JSON fields of the wrong type --------------------------------------------------------------------------------
@pytest.mark.parametrize("record, message", [
    ({"tokens": ["a"], "entity_mentions": None}, r"#1: 'entity_mentions' must be a list, got NoneType"),
    ({"sentences": 5, "ner": []}, r"#1: 'sentences' must be a list, got int"),
    ({"sentences": [["a"], ["b"]], "ner": "PER"}, r"#1: 'ner' must be a list, got str"),
    ({"tokens": ["a"], "entities": [], "ltokens": 5}, r"#1: 'ltokens' must be a list, got int"),
])
def test_json_fields_of_the_wrong_type_name_the_record(tmp_path, capsys, record, message):
    import re

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n")
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={path}", "--format", "json")
    assert rc == 2 and re.search(re.escape(str(path)) + message, one_error_line(err))


# --- 9: compare ------------------------------------------------------------------------------------------------------
def test_compare_skips_a_corrupt_record_and_rejects_a_missing_path(tmp_path, capsys):
    good = {"model": "BiLSTMCRF", "data": "SampleCorpus", "config": {"a": 1}, "seed": 1, "test": {"f1": 0.5}}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(good))
    for name, text in (("b", json.dumps(good)[:40]), ("c", "[1, 2]"), ("d", json.dumps({"test": {"f1": 1}}))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(text)
    with pytest.warns(UserWarning) as caught:
        rc, out, _ = ner_zoo(capsys, "compare", tmp_path, "--only-runs")
    assert rc == 0 and "BiLSTMCRF" in out and "50.00" in out
    skipped = sorted(str(w.message).split(":")[0] for w in caught if "skipped" in str(w.message))
    assert skipped == [str(tmp_path / n / "results.json") for n in "bcd"]
    rc, _, err = ner_zoo(capsys, "compare", tmp_path / "no-such-run")
    assert rc == 2 and "no-such-run: no such file or folder" in one_error_line(err)


@pytest.mark.slow  # a fresh process (torch import): the in-process test above covers the rule
def test_compare_output_to_a_pipe_through_dev_stdout(tmp_path):  # P-stdoutpipe, through a real process
    good = tmp_path / "good"
    good.mkdir()
    (good / "results.json").write_text(json.dumps({"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}}))
    r = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "compare", str(good), "--only-runs", "--output",
                        "/dev/stdout"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert r.returncode == 0 and "| M " in r.stdout and ".tmp" not in r.stderr, r.stderr


def test_compare_output_never_replaces_a_record_or_an_existing_file(tmp_path, capsys):
    good = tmp_path / "good"
    good.mkdir()
    record = good / "results.json"
    record.write_text(json.dumps({"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}}))
    before = record.read_text()
    rc, _, err = ner_zoo(capsys, "compare", tmp_path, "--output", record, "--overwrite")
    assert rc == 2 and "is the input file" in one_error_line(err) and record.read_text() == before
    report = write(tmp_path / "report.md", "mine\n")
    rc, _, err = ner_zoo(capsys, "compare", good, "--output", report)
    assert rc == 2 and "exists; pass --overwrite" in one_error_line(err) and report.read_text() == "mine\n"
    rc, _, err = ner_zoo(capsys, "compare", good, "--output", report, "--overwrite")
    assert rc == 0 and "| M " in report.read_text(), err


@pytest.mark.parametrize("field", ['"test": {"f1": "0.9"}', '"test": {"f1": null}', '"hardware": "gpu"',
                                   '"epoch_seconds": 5', '"protocol": {"steps": 0}'])  # M-*, C-maxep0 in compare
def test_compare_skips_a_bad_record_with_a_warning_naming_it(tmp_path, capsys, field):
    for name, extra in (("good", ""), ("bad", field)):
        (tmp_path / name).mkdir()
        rec = '{"model": "%s", "data": "D", "config": {}, "test": {"f1": 0.5}%s}' % (name, ", " + extra if extra else "")
        (tmp_path / name / "results.json").write_text(rec.replace('"test": {"f1": 0.5}, "test"', '"test"'))
    with pytest.warns(UserWarning, match=r"bad/results\.json: skipped"):
        rc, out, err = ner_zoo(capsys, "compare", tmp_path / "good", tmp_path / "bad", "--only-runs")
    assert rc == 0 and "good" in out and "| bad" not in out, err
