"""The output writers (ner_zoo/io.py): never replace without ``--overwrite``, never alias an input or the checkpoint,
write in place into streams and FIFOs, and leave the old file and no temporary on an error or a signal."""

from __future__ import annotations

import json
import os
import signal

import pytest
from cli_cases import TRAIN, T, ner_zoo, no_tmp, one_error_line, write


def test_output_equal_to_input_is_refused(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = tmp_path / "eng.testb"
    inp.write_text(TRAIN)
    for out in (inp, tmp_path / "." / "eng.testb"):
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", out)
        assert rc == 2 and "--output is the input file" in one_error_line(err)
    assert inp.read_text() == TRAIN


def test_output_keeps_mode_and_symlink(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = tmp_path / "in.conll"
    inp.write_text(TRAIN)
    target = tmp_path / "real.conll"
    target.write_text("old\n")
    target.chmod(0o644)
    link = tmp_path / "link.conll"
    link.symlink_to(target)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", link,
                         "--accelerator", "cpu", "--overwrite")
    assert rc == 0, err
    assert link.is_symlink() and (target.stat().st_mode & 0o777) == 0o644 and target.read_text().startswith("EU ")


def test_atomic_write_writes_into_a_fifo_instead_of_replacing_it(tmp_path):
    import os
    import threading

    from ner_zoo.io import atomic_write

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with atomic_write(fifo) as f:
        f.write("line\n")
    reader.join()
    assert got == ["line\n"] and fifo.is_fifo()


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


def test_sigterm_while_writing_leaves_the_old_file_and_no_temporary(tmp_path, capsys, monkeypatch):
    good = tmp_path / "good"
    good.mkdir()
    (good / "results.json").write_text(json.dumps({"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}}))
    report = write(tmp_path / "report.md", "old\n")
    import ner_zoo.io as io

    monkeypatch.setattr(io.os, "fsync", lambda fd: os.kill(os.getpid(), signal.SIGTERM))
    rc, _, err = ner_zoo(capsys, "compare", good, "--output", report, "--overwrite")
    assert rc == 143 and report.read_text() == "old\n" and no_tmp(tmp_path), err


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
