"""``ner-zoo score``: every refusal is one line naming file and line; directories, empty files and duplicate
predictions."""

from __future__ import annotations

import pytest
from cli_cases import T, ner_zoo, one_error_line, sj, write

from ner_zoo.cli.main import main


# --- 6: one-line errors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("a O O\nb Q-ORG O\n", r"bad\.conll:2: invalid tag 'Q-ORG'"),
    ("a O O\nb O\n", r"bad\.conll:2: line has 2 columns, expected 3 as on line 1"),
    ("a O O\nb B- O\n", r"bad\.conll:2: invalid tag 'B-'"),
])
def test_score_errors_are_one_line_naming_file_and_line(tmp_path, capsys, text, message):
    bad = tmp_path / "bad.conll"
    bad.write_text(text)
    rc, _, err = ner_zoo(capsys, "score", bad)
    assert rc == 2
    import re

    assert re.search(message, one_error_line(err))
    with pytest.raises(Exception, match=message):  # --debug: the traceback, for a bug report
        main(["score", str(bad), "--debug"])


@pytest.mark.parametrize("span, message", [
    ("[false, true, \"PER\"]", "is not [start, end, label]"),  # S-sj_bool
    ("[0, 1, \"\"]", "has an empty label"),  # S-sj_emptylabel
])
def test_score_jsonl_spans_are_validated(tmp_path, capsys, span, message):
    f = write(tmp_path / "p.jsonl", f'{{"tokens": ["a", "b"], "gold_spans": [{span}], "pred_spans": []}}\n')
    rc, _, err = ner_zoo(capsys, "score", f)
    assert rc == 2 and f"{f}:1:" in one_error_line(err) and message in one_error_line(err)


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
    for name, text in (("empty.conll", ""), ("blank.conll", "\n\n"), ("doc.conll", "-DOCSTART- O O\n\n"),
                       ("empty.jsonl", "\n")):  # S-empty: nothing to score is an error (was: processed 0 tokens)
        rc, out, err = ner_zoo(capsys, "score", write(tmp_path / name, text))
        assert rc == 2 and out == "" and "holds no predictions to score" in one_error_line(err), (name, err)
    f = write(tmp_path / "o.jsonl", sj([[0, 2, "PER"], [1, 2, "ORG"]], [[0, 1, "PER"], [0, 1, "PER"]]))
    rc, out, err = ner_zoo(capsys, "score", f)
    assert rc == 0 and "Traceback" not in err, err[-1000:]
