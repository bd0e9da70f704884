"""The review's round-2 probes (``shared/reviews/robustness_3.md``, Part 2) that it found OK, through the CLI, so
that they stay OK: one row per probe ID (the failing ones are in ``test_robustness_3.py``). The table in
docs/reliability.md maps every probe to its test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_robustness import TRAIN, fitted, ner_zoo, one_error_line  # noqa: F401  (fixture)

T = TRAIN
BASELINE = "| train | 2 | 7 | 2 | 3 |"


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize("pid, data, expected", [
    ("D-lf", T, BASELINE),
    ("D-crlf", T.replace("\n", "\r\n"), BASELINE),
    ("D-bom", "\ufeff" + T, BASELINE),
    ("D-bom_crlf", "\ufeff" + T.replace("\n", "\r\n"), BASELINE),
    ("D-trailing_space", T.replace("EU B-ORG", "EU B-ORG  ").replace("rejects O", "rejects O "), BASELINE),
    ("D-docstart_mid", T.replace("rejects O\n", "rejects O\n-DOCSTART- O\n"), "| train | 3 | 7 | 2 | 3 |"),  # split, by design
    ("D-iob1", T.replace("B-", "I-"), BASELINE),
    ("D-nul", T.replace("rejects", "rej\x00ects"), BASELINE),
    ("D-latin1", "José B-PER\nMüller I-PER\n\n".encode("latin-1"), "| train | 1 | 2 | 1 | 1 |"),
    ("D-cp1252", b"\x93Hello\x94 O\nx O\n\n", "| train | 1 | 2 | 1 | 0 |"),
])
def test_data_stats_reads(tmp_path, capsys, pid, data, expected):
    f = write(tmp_path / "f.conll", data)
    rc, out, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}")
    assert rc == 0 and expected in out and "Traceback" not in err, (out, err[-1000:])


@pytest.mark.parametrize("pid, data, args, needle", [
    ("D-tabspace", T.replace("German B-MISC", "German\tB-MISC"), [], "f.conll:3: line has 2 columns"),
    ("D-bmes", T.replace("German B-MISC", "German M-PER"), [], "f.conll:3: invalid tag 'M-PER'"),
    ("D-lower", T.replace("B-ORG", "b-org"), [], "f.conll:1: invalid tag 'b-org'"),
    ("D-zero", T.replace("rejects O", "rejects 0"), [], "f.conll:2: invalid tag '0'"),
    ("D-empty", "", [], "f.conll: no sentences in file"),
    ("D-fmtjson", T, ["--format", "json"], "f.conll:1: invalid JSON"),
])
def test_data_stats_refuses(tmp_path, capsys, pid, data, args, needle):
    f = write(tmp_path / "f.conll", data)
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}", *args)
    assert rc == 2 and needle in one_error_line(err)


def test_data_stats_directory(tmp_path, capsys):  # D-dir
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={tmp_path}")
    assert rc == 2 and f"{tmp_path}: is a directory" in one_error_line(err)


# --- score --------------------------------------------------------------------------------------------------------
def sj(gold, pred=(), tokens=("a", "b")) -> str:
    return json.dumps({"tokens": list(tokens) if not isinstance(tokens, str) else tokens, "gold_spans": gold,
                       "pred_spans": list(pred)}) + "\n"


@pytest.mark.parametrize("pid, name, data, needle", [
    ("S-mixsep", "f.conll", "a B-PER O\nb\tI-PER\tO\n\n", "f.conll:2: line has 3 columns, expected 1"),
    ("S-2col", "f.conll", T, "f.conll:1: 2 columns: expected token, gold tag and predicted tag"),
    ("S-sj_oor", "f.jsonl", sj([[0, 3, "PER"]]), "is out of range for 2 tokens"),
    ("S-sj_neg", "f.jsonl", sj([[-1, 1, "PER"]]), "is out of range for 2 tokens"),
    ("S-sj_float", "f.jsonl", sj([0.0]), "is not [start, end, label]"),
    ("S-sj_tokstr", "f.jsonl", sj([], tokens="a b"), "'tokens' must be a list, got str"),
])
def test_score_refuses(tmp_path, capsys, pid, name, data, needle):
    f = write(tmp_path / name, data)
    rc, _, err = ner_zoo(capsys, "score", f)
    line = one_error_line(err)
    assert rc == 2 and str(f) in line and needle in line, line


def test_score_directory_empty_file_and_duplicate_pred(tmp_path, capsys):  # S-dir, S-empty, S-sj_overlap
    rc, _, err = ner_zoo(capsys, "score", tmp_path)
    assert rc == 2 and "is a directory" in one_error_line(err)
    rc, out, _ = ner_zoo(capsys, "score", write(tmp_path / "empty.conll", ""))
    assert rc == 0 and "processed 0 tokens" in out  # known and documented: nothing to score
    f = write(tmp_path / "o.jsonl", sj([[0, 2, "PER"], [1, 2, "ORG"]], [[0, 1, "PER"], [0, 1, "PER"]]))
    rc, out, err = ner_zoo(capsys, "score", f)
    assert rc == 0 and "Traceback" not in err, err[-1000:]


# --- predict ------------------------------------------------------------------------------------------------------
GENIA = '{"tokens": ["EU", "rejects"], "entity_mentions": [{"start": 0, "end": 1, "entity_type": "ORG"}]}\n'
OVERLAP = ('{"tokens": ["a", "b", "c"], "entity_mentions": [{"start": 0, "end": 2, "entity_type": "ORG"}, '
           '{"start": 1, "end": 3, "entity_type": "PER"}]}\n')
NESTED = ('{"tokens": ["a", "b", "c"], "entity_mentions": [{"start": 0, "end": 3, "entity_type": "ORG"}, '
          '{"start": 1, "end": 2, "entity_type": "PER"}]}\n')


def predict(capsys, ckpt: Path, inp: Path, *args) -> tuple[int, str, str, Path]:
    out = inp.parent / "out.pred"
    rc, so, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", out,
                          "--accelerator", "cpu", *args)
    return rc, so, err, out


def test_predict_reads_crlf_bom_iob1_and_genia(fitted, tmp_path, capsys):  # P-crlf, P-bom, P-iob1, P-geniaok
    ckpt = fitted[1]
    for data, first in ((T.replace("\n", "\r\n"), "EU B-ORG "), ("\ufeff" + T, "EU B-ORG "),
                        (T.replace("B-", "I-"), "EU I-ORG ")):
        rc, _, err, out = predict(capsys, ckpt, write(tmp_path / "in.conll", data), "--overwrite")
        text = out.read_bytes()
        assert rc == 0 and b"\r" not in text and text.decode().startswith(first), (text[:40], err[-500:])
    rc, _, err, out = predict(capsys, ckpt, write(tmp_path / "g.jsonl", GENIA), "--output_format", "jsonl",
                              "--overwrite")
    rec = json.loads(out.read_text().splitlines()[0])
    assert rc == 0 and rec["gold_spans"] == [[0, 1, "ORG"]] and "pred_spans" in rec


@pytest.mark.parametrize("pid, data, needle", [
    ("P-overlap", OVERLAP, "overlaps another; tags can only encode flat spans"),
    ("P-nested", NESTED, "overlaps another; tags can only encode flat spans"),
    ("P-oor", '{"tokens": ["a", "b"], "entity_mentions": [{"start": 0, "end": 5, "entity_type": "PER"}]}\n',
     "is out of range for 2 tokens"),
    ("P-emptytok", '{"tokens": [], "entity_mentions": []}\n', "empty sentence"),
])
def test_predict_refuses_json_that_tags_cannot_hold(fitted, tmp_path, capsys, pid, data, needle):
    rc, _, err, out = predict(capsys, fitted[1], write(tmp_path / "in.jsonl", data), "--output_format", "conll")
    assert rc == 2 and needle in one_error_line(err) and not out.exists()


def test_predict_keeps_overlapping_gold_in_jsonl(fitted, tmp_path, capsys):  # P-overlap-jl, P-nested-jl
    for data in (OVERLAP, NESTED):
        rc, _, err, out = predict(capsys, fitted[1], write(tmp_path / "in.jsonl", data), "--output_format",
                                  "jsonl", "--overwrite")
        assert rc == 0 and len(json.loads(out.read_text())["gold_spans"]) == 2, err[-500:]


def test_predict_input_problems_are_one_line(fitted, tmp_path, capsys):  # P-pipe-noout, P-dash, P-inputdir
    ckpt = fitted[1]
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", tmp_path)
    assert rc == 2 and "is a directory" in one_error_line(err)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", tmp_path / "nope.conll")
    assert rc == 2 and "nope.conll: file not found" in one_error_line(err)


def test_predict_output_aliases_of_the_input_are_refused(fitted, tmp_path, capsys):  # P-outsame-rel, -hardlink
    import os

    inp = write(tmp_path / "in.conll", T)
    (tmp_path / "adir").mkdir()
    hard = tmp_path / "hard.conll"
    os.link(inp, hard)
    for out in (tmp_path / "adir" / ".." / "in.conll", hard):
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", fitted[1], "--input", inp, "--output", out,
                             "--overwrite")
        assert rc == 2 and "--output is the input file" in one_error_line(err)
    assert inp.read_text() == T


def test_checkpoint_with_bytes_appended_predicts_as_the_original(fitted, tmp_path, capsys):  # K-garbage_app
    ckpt = fitted[1]
    extra = write(tmp_path / "extra.ckpt", ckpt.read_bytes() + bytes(range(256)) * 20)
    inp = write(tmp_path / "in.conll", T)
    rc1, _, _, out = predict(capsys, ckpt, inp)
    first = out.read_text()
    rc2, _, err, out = predict(capsys, extra, inp, "--overwrite")
    assert rc1 == 0 and (rc2, out.read_text()) == (0, first) or (rc2 == 2 and str(extra) in one_error_line(err))


def test_checkpoint_that_is_a_directory(fitted, tmp_path, capsys):  # K-dir
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", tmp_path, "--input", write(tmp_path / "i.conll", T))
    assert rc == 2 and f"{tmp_path}: not an exported ner-zoo model" in one_error_line(err)  # a folder: an export
    rc, _, err = ner_zoo(capsys, "test", "--config", fitted[0], "--ckpt_path", tmp_path)
    assert rc == 2 and f"{tmp_path}: not a checkpoint file" in one_error_line(err)


@pytest.mark.parametrize("command", ["fit", "test", "validate"])
def test_missing_relative_checkpoint_is_named_in_full_before_any_run_folder(fitted, tmp_path, capsys, monkeypatch,
                                                                           command):
    monkeypatch.chdir(tmp_path)
    rc, _, err = ner_zoo(capsys, command, "--config", fitted[0], "--ckpt_path", "-1")
    assert rc == 2 and f"-1: checkpoint not found (looked for {tmp_path.resolve() / '-1'})" in one_error_line(err)
    assert not (tmp_path / "runs").exists()  # no run folder was made for a fit that cannot start
    if command != "fit":
        return
    (tmp_path / "empty").mkdir()  # a run folder to resume names itself as given
    rc, _, err = ner_zoo(capsys, "fit", "--config", fitted[0], "--ckpt_path", "empty", "--checkpoint.dirpath", "null",
                         "--record.path", "null")
    assert rc == 2 and f"--ckpt_path empty: {tmp_path.resolve() / 'empty'} holds no" in one_error_line(err)
