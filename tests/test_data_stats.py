"""``ner-zoo data stats`` and the CoNLL reader under it: whitespace, encodings, column errors quoted as they were,
directories."""

from __future__ import annotations

import pytest
from cli_cases import BASELINE, LATIN, T, ner_zoo, one_error_line, write


# --- text input ----------------------------------------------------------------------------------------------------
def test_trailing_tab_and_unicode_spaces_are_ignored(tmp_path, capsys):  # D-trailing_tab
    lines = T.split("\n")
    lines[0] += "\t"
    lines[1] += "\u00a0 "
    f = write(tmp_path / "trailing_tab.conll", "\n".join(lines))
    rc, out, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}")
    assert rc == 0 and "Traceback" not in err, err
    assert " 7 " in out or "| 7" in out


def test_column_error_quotes_the_line_as_it_was(tmp_path, capsys):  # D-tabspace
    f = write(tmp_path / "tabspace.conll", "EU B-ORG\nrejects O\nGerman\tB-MISC\tx\n")
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}")
    assert rc == 2 and "'German\\tB-MISC\\tx'" in one_error_line(err)


def test_mixed_encodings_are_an_error_with_a_real_option(tmp_path, capsys):  # D-mixed_enc, P-mixed
    f = write(tmp_path / "mixed.conll", "Müller B-PER\n\n".encode() + LATIN)
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}")
    line = one_error_line(err)
    assert rc == 2 and "mixed encodings" in line and "--encoding latin-1" in line and f"{f}:3" in line
    rc, out, _ = ner_zoo(capsys, "data", "stats", "--files", f"train={f}", "--encoding", "latin-1")
    assert rc == 0


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
