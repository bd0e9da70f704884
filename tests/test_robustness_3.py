"""Robustness round 2 (issue 30, ``shared/reviews/robustness_3.md``): each probe the review found failing, through
the CLI, by class: writers, validation at the edge, text input, signals and limits. The invariant generator that
covers inputs nobody listed is ``tests/test_cli_invariants.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from test_robustness import TRAIN, config, fitted, ner_zoo, one_error_line  # noqa: F401  (fixture)

T = TRAIN
LATIN = "José B-PER\nMüller I-PER\n\n".encode("latin-1")


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def no_tmp(folder: Path) -> bool:
    return not [p for p in folder.rglob("*.tmp")]


# --- writers: nothing replaced unasked, no aliasing, streams in place, atomic, errors named ----------------------
def test_predict_refuses_an_existing_output_unless_overwrite(fitted, tmp_path, capsys):  # P-outexist
    _, ckpt, _ = fitted
    inp, gold = write(tmp_path / "in.conll", T), write(tmp_path / "gold_keep.conll", "keep me\n")
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", gold)
    assert rc == 2 and f"{gold}: exists; pass --overwrite" in one_error_line(err)
    assert gold.read_text() == "keep me\n"
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", gold, "--overwrite")
    assert rc == 0 and gold.read_text().startswith("EU "), err
    default = tmp_path / "in.conll.pred.conll"  # the default output: the same rule
    write(default, "older predictions\n")
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp)
    assert rc == 2 and "exists; pass --overwrite" in one_error_line(err) and default.read_text() == "older predictions\n"


def test_predict_output_may_not_alias_the_checkpoint_and_a_loop_is_one_line(fitted, tmp_path, capsys):  # P-symloop
    _, ckpt, _ = fitted
    inp = write(tmp_path / "in.conll", T)
    hard = tmp_path / "hard.ckpt"
    os.link(ckpt, hard)
    before = ckpt.read_bytes()
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", hard, "--overwrite")
    assert rc == 2 and "is the input file" in one_error_line(err) and ckpt.read_bytes() == before
    (tmp_path / "loopA").symlink_to(tmp_path / "loopB")
    (tmp_path / "loopB").symlink_to(tmp_path / "loopA")
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", tmp_path / "loopA")
    assert rc == 2 and "loopA: Too many levels of symbolic links" in one_error_line(err)


def test_stream_outputs_are_written_in_place(tmp_path):  # P-stdoutpipe, `>>`
    from ner_zoo.io import atomic_write, check_output

    r, w = os.pipe()
    with atomic_write(f"/dev/fd/{w}") as f:
        f.write("to the pipe\n")
    os.close(w)
    assert os.read(r, 100) == b"to the pipe\n"
    os.close(r)
    log = write(tmp_path / "log.txt", "first\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        check_output(f"/dev/fd/{fd}")  # an open descriptor is no replacement: no --overwrite needed
        with atomic_write(f"/proc/self/fd/{fd}") as f:
            f.write("second\n")
    finally:
        os.close(fd)
    assert log.read_text() == "first\nsecond\n" and no_tmp(tmp_path)


@pytest.mark.slow  # a fresh process (torch import): the in-process test above covers the rule
def test_compare_output_to_a_pipe_through_dev_stdout(tmp_path):  # P-stdoutpipe, through a real process
    good = tmp_path / "good"
    good.mkdir()
    (good / "results.json").write_text(json.dumps({"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}}))
    r = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", "compare", str(good), "--only-runs", "--output",
                        "/dev/stdout"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert r.returncode == 0 and "| M " in r.stdout and ".tmp" not in r.stderr, r.stderr


def test_os_errors_name_the_output_not_a_temporary_file(tmp_path):  # P-efbig, F-efbig, P-rodir
    import resource

    from ner_zoo.cli.main import error_line
    from ner_zoo.io import atomic_write

    target = write(tmp_path / "out.txt", "old\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))  # Python ignores SIGXFSZ: writes fail with EFBIG
    try:
        with pytest.raises(OSError) as e, atomic_write(target) as f:
            f.write("x" * 100_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert error_line(e.value) == f"{target}: File too large"
    assert target.read_text() == "old\n" and no_tmp(tmp_path)
    with pytest.raises(OSError) as e, atomic_write("/dev/full") as f:
        f.write("x")
    assert error_line(e.value) == "/dev/full: No space left on device"


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


# --- validation at the edge ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--data.init_args.batch_size=0"], "data.init_args.batch_size must be a positive integer, got 0"),  # C-bs0
    (["--data.init_args.batch_size=-1"], "data.init_args.batch_size must be a positive integer, got -1"),
    (["--model.init_args.optimizer.init_args.lr", ".nan"], "lr must be a finite number >= 0, got nan"),  # C-lrnan2
    (["--model.init_args.optimizer.init_args.lr", "nan"], "lr: expected float, got nan"),  # C-lrnan
    (["--trainer.max_epochs", "-5"], "trainer.max_epochs must be a non-negative integer, or -1"),  # C-maxepneg
    (["--trainer.max_epochs", "0"], "trainer.max_epochs 0 trains nothing"),  # C-maxep0
    (["--data.init_args.tag_scheme", "bilou2"], "data.init_args.tag_scheme is not a known tag scheme"),  # C-scheme
])
def test_bad_config_values_are_one_line_before_any_work(tmp_path, capsys, args, message):
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, *args)
    line = one_error_line(err)
    assert rc == 2 and message in line and "usage:" not in err
    assert not list(tmp_path.rglob("results.json")) and not (tmp_path / "ckpt").exists()


def test_config_value_in_a_file_is_named_by_file_and_line(tmp_path, capsys):
    cfg = config(tmp_path)
    bad = write(tmp_path / "bad.yaml", "data:\n  init_args:\n    batch_size: 0\n")
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--config", bad)
    assert rc == 2 and f"{bad}:3: data.init_args.batch_size must be a positive integer" in one_error_line(err)


def test_diverging_loss_is_one_line(tmp_path, capsys):  # C-lrhuge
    cfg = config(tmp_path, train=TRAIN * 4, epochs=2)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model.init_args.optimizer.init_args.lr", "1e30",
                         "--trainer.gradient_clip_val", "0")
    assert rc == 2 and "loss became nan" in one_error_line(err)


@pytest.mark.parametrize("text, message", [
    ("trainer:\n  max_epochs: 1\n  limit_train_batches: 2\n  max_epochs: 3\n",
     "dup.yaml:4: key 'max_epochs' is repeated (first on line 2)"),  # C-dupkeys
    ("config: dup.yaml\n", "dup.yaml: config: the config file includes itself"),  # C-selfinc
    ("model: dup.yaml\n", "dup.yaml: model: the config file includes itself"),  # C-selfmodel
    ("model: missing_model.yaml\n", "model: config file 'missing_model.yaml' not found"),  # C-missmodel
])
def test_config_file_problems_are_one_line_without_usage(tmp_path, capsys, text, message):
    cfg = config(tmp_path)
    dup = write(tmp_path / "dup.yaml", text)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--config", dup, "--print_config")
    assert rc == 2 and message in one_error_line(err) and "usage:" not in err


def test_missing_config_unknown_command_and_bare_data_stats(tmp_path, capsys):  # C-missing, X-*, D-noeq
    rc, _, err = ner_zoo(capsys, "fit", "--config", tmp_path / "nope.yaml")
    assert rc == 2 and "nope.yaml: config file not found" in one_error_line(err) and "usage:" not in err
    rc, _, err = ner_zoo(capsys, "frobnicate")
    assert rc == 2 and "fit, validate, test, predict, score, data, compare" in one_error_line(err)
    rc, _, err = ner_zoo(capsys, "data", "stats")
    assert rc == 2 and "give a corpus name" in one_error_line(err)
    rc, _, err = ner_zoo(capsys, "data", "stats", "--files", write(tmp_path / "lf.conll", T))
    assert rc == 2 and "--files takes SPLIT=PATH items" in one_error_line(err)


@pytest.mark.parametrize("option, message", [
    (["--batch_size", "0"], "expected a positive integer, got 0"),
    (["--batch_size", "-3"], "expected a positive integer, got -3"),
    (["--precision", "bogus"], "invalid choice: 'bogus'"),
    (["--accelerator", "gpu"], "no CUDA GPU is available"),
])
def test_predict_options_are_checked_before_loading(tmp_path, capsys, option, message):  # P-opt
    if option[0] == "--accelerator" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    inp = write(tmp_path / "in.conll", T)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", tmp_path / "no.ckpt", "--input", inp, *option)
    assert rc == 2 and message in one_error_line(err)  # refused before the (missing) checkpoint is opened


def _with_class(src: Path, dst: Path, class_path: str) -> Path:
    ckpt = torch.load(src, weights_only=True, map_location="cpu")
    ckpt["ner_zoo_class"] = class_path
    ckpt.setdefault("hyper_parameters", {})["_class_path"] = class_path
    torch.save(ckpt, dst)
    return dst


@pytest.mark.parametrize("class_path", ["ner_zoo.models.PSA", "ner_zoo.models.ExhaustiveSpanClassifier",
                                        "ner_zoo.errors.NerZooError"])  # K-as_psa, K-as_span, K-as_err
def test_checkpoint_class_that_does_not_fit_its_weights_is_one_line(fitted, tmp_path, capsys, class_path):
    _, ckpt, _ = fitted
    bad = _with_class(ckpt, tmp_path / "other.ckpt", class_path)
    inp = write(tmp_path / "in.conll", T)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", bad, "--input", inp, "--accelerator", "cpu")
    assert rc == 2 and str(bad) in one_error_line(err)


def test_checkpoint_with_corrupted_zip_blocks_is_one_line(fitted, tmp_path, capsys):
    import zipfile

    _, ckpt, _ = fitted
    data = bytearray(ckpt.read_bytes())
    with zipfile.ZipFile(ckpt) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    data[info.header_offset:info.header_offset + 30] = bytes(30)  # the record's local header: unreadable
    bad = write(tmp_path / "blocks.ckpt", bytes(data))
    inp = write(tmp_path / "in.conll", T)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", bad, "--input", inp, "--accelerator", "cpu")
    assert rc == 2 and str(bad) in one_error_line(err)


@pytest.mark.parametrize("span, message", [
    ("[false, true, \"PER\"]", "is not [start, end, label]"),  # S-sj_bool
    ("[0, 1, \"\"]", "has an empty label"),  # S-sj_emptylabel
])
def test_score_jsonl_spans_are_validated(tmp_path, capsys, span, message):
    f = write(tmp_path / "p.jsonl", f'{{"tokens": ["a", "b"], "gold_spans": [{span}], "pred_spans": []}}\n')
    rc, _, err = ner_zoo(capsys, "score", f)
    assert rc == 2 and f"{f}:1:" in one_error_line(err) and message in one_error_line(err)


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


def test_latin1_hint_names_the_commands_own_option(fitted, tmp_path, capsys):  # P-mixed hint
    _, ckpt, _ = fitted
    f = write(tmp_path / "latin.conll", LATIN)
    with pytest.warns(UnicodeWarning, match=r"pass --encoding utf-8"):
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", f, "--accelerator", "cpu")
    assert rc == 0, err
    out = (tmp_path / "latin.conll.pred.conll").read_text()
    assert out.startswith("José ") and "Müller" in out
    rc, _, err = ner_zoo(capsys, "score", f, "--encoding", "utf-8")
    assert rc == 2 and "cannot decode byte 0xe9 as utf-8" in one_error_line(err)


# --- signals -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_outside_training_is_one_line(tmp_path, capsys, monkeypatch, signum, code):  # X-onto-sigint
    from ner_zoo.data import stats

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)
        raise AssertionError("the signal did not interrupt")

    monkeypatch.setattr(stats, "corpus_stats", interrupted)
    f = write(tmp_path / "lf.conll", T)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job inherits it ignored
    try:
        rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert rc == code and err.strip().startswith("ner-zoo: interrupted") and "Traceback" not in err


def test_sigterm_while_writing_leaves_the_old_file_and_no_temporary(tmp_path, capsys, monkeypatch):
    good = tmp_path / "good"
    good.mkdir()
    (good / "results.json").write_text(json.dumps({"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}}))
    report = write(tmp_path / "report.md", "old\n")
    import ner_zoo.io as io

    monkeypatch.setattr(io.os, "fsync", lambda fd: os.kill(os.getpid(), signal.SIGTERM))
    rc, _, err = ner_zoo(capsys, "compare", good, "--output", report, "--overwrite")
    assert rc == 143 and report.read_text() == "old\n" and no_tmp(tmp_path), err


def test_fit_os_error_names_the_checkpoint(tmp_path, capsys):  # F-efbig
    import resource

    cfg = config(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))  # the checkpoint is larger; logs and records are not
    try:
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    line = one_error_line(err)
    assert rc == 2 and f"{tmp_path / 'ckpt'}" in line and "File too large" in line
    assert not list((tmp_path / "ckpt").glob("*.ckpt")) and no_tmp(tmp_path)


# --- checkpoints under every command that reads one (Lightning's loader path included) ----------------------------
def bad_checkpoint(kind: str, src: Path, dst: Path) -> Path:
    """``src`` damaged as ``kind`` (the review's K- rows and their neighbours)."""
    import zipfile

    data = src.read_bytes()
    if kind == "empty":
        return write(dst, b"")
    if kind == "text":
        return write(dst, "not a checkpoint\n")
    if kind == "truncated":
        return write(dst, data[:len(data) // 2])
    if kind == "not_zip":
        return write(dst, b"PK\x03\x04" + bytes(5000))
    if kind == "zip_blocks":  # a record's local header zeroed: torch fails while reading it
        b = bytearray(data)
        with zipfile.ZipFile(src) as z:
            info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
        b[info.header_offset:info.header_offset + 30] = bytes(30)
        return write(dst, bytes(b))
    if kind == "flipped":
        from test_robustness import flip_weight_bytes

        flip_weight_bytes(src, dst, n=8)
        return dst
    ckpt = torch.load(src, weights_only=True, map_location="cpu")
    if kind == "list":
        ckpt = [1, 2]
    elif kind == "future_format":
        ckpt["ner_zoo_format"] = 99
    elif kind == "no_weights":
        del ckpt["state_dict"]
    elif kind.startswith("as:"):
        return _with_class(src, dst, kind[3:])
    torch.save(ckpt, dst)
    return dst


LOADER_KINDS = ["zip_blocks", "as:ner_zoo.models.PSA", "as:ner_zoo.models.ExhaustiveSpanClassifier",
                "as:ner_zoo.errors.NerZooError", "not_zip"]  # each was a traceback or an unnamed line under test
ALL_KINDS = LOADER_KINDS + ["as:ner_zoo.models.Nope", "as:os.path", "list", "future_format", "empty", "text",
                            "truncated", "flipped", "no_weights"]


def _ckpt_command(command: str, cfg: Path, ckpt: Path, tmp: Path) -> list:
    if command == "predict":
        return ["predict", "--ckpt_path", ckpt, "--input", write(tmp / "in.conll", T), "--accelerator", "cpu"]
    extra = ["--trainer.max_epochs", "3", "--checkpoint.dirpath", tmp / "ckpt",
             "--trainer.default_root_dir", tmp / "runs"] if command == "fit" else []
    return [command, "--config", cfg, "--ckpt_path", ckpt, *extra]


@pytest.mark.parametrize("kind", LOADER_KINDS)
def test_bad_checkpoint_under_test_is_one_line_naming_it(fitted, tmp_path, capsys, kind):  # K-* through Lightning
    cfg, ckpt, _ = fitted
    bad = bad_checkpoint(kind, ckpt, tmp_path / "bad.ckpt")
    rc, _, err = ner_zoo(capsys, *_ckpt_command("test", cfg, bad, tmp_path))
    assert rc == 2 and one_error_line(err).startswith(f"ner-zoo: error: {bad}"), err[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["predict", "validate", "fit"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_bad_checkpoint_is_one_line_naming_it_in_every_command(fitted, tmp_path, capsys, command, kind):
    cfg, ckpt, _ = fitted
    bad = bad_checkpoint(kind, ckpt, tmp_path / "bad.ckpt")
    before = bad.read_bytes()
    rc, _, err = ner_zoo(capsys, *_ckpt_command(command, cfg, bad, tmp_path))
    assert rc == 2 and one_error_line(err).startswith(f"ner-zoo: error: {bad}"), err[-2000:]
    assert bad.read_bytes() == before and not (tmp_path / "in.conll.pred.conll").exists()


def test_checkpoint_without_digest_warning_names_the_file(fitted, tmp_path, capsys):  # K-nodigest
    _, ckpt, _ = fitted
    c = torch.load(ckpt, weights_only=True, map_location="cpu")
    del c["ner_zoo_sha256"]
    old = tmp_path / "old.ckpt"
    torch.save(c, old)
    with pytest.warns(UserWarning) as record:
        rc, _, err = ner_zoo(capsys, *_ckpt_command("predict", None, old, tmp_path))
    digests = [str(w.message) for w in record if "no integrity digest" in str(w.message)]
    assert rc == 0 and digests == [f"{old} has no integrity digest (written by an older ner-zoo): corruption cannot "
                                   "be detected"], digests
