"""The command line itself: help, command and corpus names, option prefixes, hints that name only what the CLI can
pass."""

from __future__ import annotations

import pytest
from cli_cases import T, config, ner_zoo, one_error_line, write


# --- 13: help, corpus names, hints, no prefix matching ---------------------------------------------------------------
def test_top_level_help_lists_every_command(capsys):
    rc, out, _ = ner_zoo(capsys, "--help")
    assert rc == 0 and all(f"ner-zoo {c}" in out for c in ("fit", "predict", "score", "data", "compare"))


def test_corpus_prefix_and_ambiguous_name(capsys):
    rc, _, err = ner_zoo(capsys, "data", "stats", "conll2002")
    assert rc == 2 and "ambiguous corpus 'conll2002'; known: conll2002dutch, conll2002spanish" in err
    rc, out, err = ner_zoo(capsys, "data", "stats", "samplecorp")
    assert rc == 0 and "| train |" in out


def test_mistyped_option_prefix_is_an_error(tmp_path, capsys):
    rc, _, err = ner_zoo(capsys, "fit", "--config", config(tmp_path), "--trainer.max_epoch", "1", "--print_config")
    assert rc == 2 and "--trainer.max_epoch" in err
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt", "x.ckpt", "--input", "y")
    assert rc == 2 and "--ckpt" in err


def test_hints_name_nothing_the_cli_cannot_pass(tmp_path, capsys):
    empty = tmp_path / "empty.conll"
    empty.write_text("\n\n")
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={empty}")
    line = one_error_line(err)
    assert rc == 2 and "no sentences in file" in line and "allow_empty" not in line and "=True" not in line


def test_missing_config_unknown_command_and_bare_data_stats(tmp_path, capsys):  # C-missing, X-*, D-noeq
    rc, _, err = ner_zoo(capsys, "fit", "--config", tmp_path / "nope.yaml")
    assert rc == 2 and "nope.yaml: config file not found" in one_error_line(err) and "usage:" not in err
    rc, _, err = ner_zoo(capsys, "frobnicate")
    assert rc == 2 and "fit, validate, test, predict, score, data, compare" in one_error_line(err)
    rc, _, err = ner_zoo(capsys, "data", "stats")
    assert rc == 2 and "give a corpus name" in one_error_line(err)
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", write(tmp_path / "lf.conll", T))
    assert rc == 2 and "--files takes SPLIT=PATH items" in one_error_line(err)


# every command's usage error is one line (issue 43 item 7; probe X5 of robustness_4: export and serve printed
# argparse's usage and their own 'ner-zoo export: error:' line)
@pytest.mark.parametrize("argv", [
    ["export", "C.ckpt", "--outptu", "x"], ["export", "C.ckpt", "--output", "x", "--outptu", "y"], ["export"],
    ["export", "C.ckpt", "--output", "x", "--format", "bogus"],
    ["serve", "m", "--prot", "1"], ["serve"], ["serve", "m", "--port", "-1"], ["serve", "m", "--workers", "0"],
    ["predict", "--bogus"], ["score", "--bogus"], ["data", "--bogus"], ["compare", "--bogus"], ["configs", "--bogus"],
    ["fit", "--bogus"], ["validate", "--bogus"], ["test", "--bogus"],
])
def test_every_command_has_one_line_usage_errors(argv, capsys):
    from cli_cases import ner_zoo

    rc, _, err = ner_zoo(capsys, *argv)
    assert rc == 2 and err.count("\n") == 1 and err.startswith("ner-zoo: error: "), (argv, err)
    assert "usage:" not in err and "Traceback" not in err


@pytest.mark.parametrize("argv, misspelt", [
    (["export", "C.ckpt", "--outptu", "x"], "--outptu x"), (["predict", "--model", "m", "--inptu", "x"], "--inptu x"),
    (["predict", "--inptu=x"], "--inptu=x"), (["serve", "m", "--prot", "1"], "--prot 1"),
    (["score", "f", "--bogus"], "--bogus"),
])
def test_a_misspelt_option_is_named_even_when_a_required_one_is_missing(argv, misspelt, capsys):
    """argparse reported the missing required option (``--output``) and not the misspelt one the user typed."""
    from cli_cases import ner_zoo

    rc, _, err = ner_zoo(capsys, *argv)
    assert rc == 2 and f"unrecognized arguments: {misspelt} " in one_error_line(err), err
