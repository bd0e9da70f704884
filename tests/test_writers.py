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
        with pytest.raises(OSError) as e, atomic_write(target, overwrite=True) as f:
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


# --- the rule at the moment of writing (issue 43): link-then-check, private temporaries, checkpoints, export --------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.one_of(st.none(), st.text("abc\n", max_size=20)),
       meanwhile=st.one_of(st.none(), st.text("xyz\n", max_size=20)),
       overwrite=st.booleans(), fails=st.booleans())
def test_atomic_write_decides_at_the_moment_of_writing(tmp_path_factory, before, meanwhile, overwrite, fails):
    """Any file there before or made while the writer works is replaced only with ``overwrite``; a failing
    writer changes nothing; never a temporary left (old code: a file made meanwhile was replaced, W1)."""
    from ner_zoo.errors import OutputError
    from ner_zoo.io import atomic_write

    folder = tmp_path_factory.mktemp("w")
    target = folder / "out.txt"
    if before is not None:
        target.write_text(before)
    early = before is not None and not overwrite  # refused on entry: the body never runs
    there = before if meanwhile is None or early else meanwhile
    refused = there is not None and not overwrite
    try:
        with atomic_write(target, overwrite=overwrite) as f:
            if meanwhile is not None:
                target.write_text(meanwhile)  # another process, between the early check and the end
            f.write("new")
            if fails:
                raise ValueError("the writer failed")
    except OutputError as e:
        assert refused and f"{target}: exists; pass --overwrite" in str(e)
    except ValueError:
        assert fails and not early
    else:
        assert not refused and not fails
    expected = there if (refused or fails) else "new"
    assert (target.read_text() if target.exists() else None) == expected
    assert [p.name for p in folder.iterdir()] == ([] if expected is None else ["out.txt"])


def test_two_writers_at_once_one_file_one_refusal(tmp_path):
    """Two writers of one new file finishing together: one complete file, the other refused (never mixed)."""
    import threading

    from ner_zoo.errors import OutputError
    from ner_zoo.io import atomic_write

    for round_ in range(20):
        target = tmp_path / f"out{round_}.txt"
        barrier, outcome = threading.Barrier(2), []

        def writer(text: str) -> None:
            try:
                with atomic_write(target) as f:
                    f.write(text * 1000)
                    barrier.wait(timeout=30)
                outcome.append(text)
            except OutputError:
                outcome.append("refused")

        threads = [threading.Thread(target=writer, args=(t,)) for t in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcome) in (["a", "refused"], ["b", "refused"]), outcome
        won = next(o for o in outcome if o != "refused")
        assert target.read_text() == won * 1000
    assert no_tmp(tmp_path)


def test_predict_keeps_an_output_made_while_it_waits_for_its_input(fitted, tmp_path, capsys):  # W1
    """predict checks its output early, then waits on a FIFO; the file made meanwhile is refused at write time."""
    import threading

    _, ckpt, _ = fitted
    fifo, out = tmp_path / "in.fifo", tmp_path / "race.out"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as f:  # blocks until predict opens its input, after the early check
            out.write_text("the user's file\n")
            f.write(TRAIN)

    t = threading.Thread(target=feed)
    t.start()
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", fifo, "--output", out,
                         "--input_format", "conll", "--accelerator", "cpu")
    t.join()
    assert rc == 2 and f"{out}: exists; pass --overwrite" in one_error_line(err)
    assert out.read_text() == "the user's file\n" and no_tmp(tmp_path)


# checkpoints ------------------------------------------------------------------------------------------------------
def _full_disk_after(monkeypatch, calls: int):
    """Writes of checkpoint bytes fail with ENOSPC after ``calls`` good ones, having written half the bytes."""
    import errno

    from ner_zoo.run import checkpoint_io

    done = []

    def write(f, data):
        if len(done) >= calls:
            f.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        done.append(1)
        f.write(data)

    monkeypatch.setattr(checkpoint_io, "_write", write)


def test_checkpoint_io_full_disk_keeps_the_previous_file(tmp_path, monkeypatch):
    import torch

    from ner_zoo.run.checkpoint_io import AtomicCheckpointIO

    io, path = AtomicCheckpointIO(), tmp_path / "ckpt" / "last.ckpt"
    io.save_checkpoint({"w": torch.arange(1000)}, path)
    old = path.read_bytes()
    _full_disk_after(monkeypatch, 0)
    with pytest.raises(OSError) as e:
        io.save_checkpoint({"w": torch.arange(5000)}, path)
    assert e.value.filename == str(path) and "No space left" in str(e.value)
    assert path.read_bytes() == old and [p.name for p in path.parent.iterdir()] == ["last.ckpt"]
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()  # not mkstemp's private 0600


def _mounted_tmpfs(folder, size: str):
    import subprocess

    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root): the injected-ENOSPC tests cover the same paths")


def test_checkpoint_io_on_a_really_full_tmpfs(tmp_path):
    """A 2 MB tmpfs holds one 1.2 MB checkpoint: the second save fails, the first stays whole (old code:
    Lightning's writer left a truncated file under the checkpoint's own name, F1)."""
    import subprocess

    import torch

    from ner_zoo.run.checkpoint_io import AtomicCheckpointIO

    disk = tmp_path / "disk"
    _mounted_tmpfs(disk, "2m")
    try:
        io, path = AtomicCheckpointIO(), disk / "last.ckpt"
        io.save_checkpoint({"w": torch.zeros(300_000)}, path)
        old = path.read_bytes()
        with pytest.raises(OSError) as e:
            io.save_checkpoint({"w": torch.ones(300_000)}, path)
        assert e.value.filename == str(path) and "No space left" in str(e.value)
        assert path.read_bytes() == old and [p.name for p in disk.iterdir()] == ["last.ckpt"]
        assert torch.equal(torch.load(path, weights_only=True)["w"], torch.zeros(300_000))
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_fit_on_a_full_disk_keeps_last_ckpt_and_records_the_failure(tmp_path, capsys, monkeypatch):  # F1
    import torch
    from cli_cases import config, results

    cfg = config(tmp_path, epochs=3)
    _full_disk_after(monkeypatch, 2)  # epoch 0: best and last written; epoch 1: no space
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg)
    line = one_error_line(err)
    assert rc == 2 and f"{tmp_path / 'ckpt'}" in line and "ckpt: No space left on device" in line, line
    assert ".tmp" not in line
    last = tmp_path / "ckpt" / "last.ckpt"
    assert torch.load(last, weights_only=True)["epoch"] == 0  # the previous one, whole
    assert no_tmp(tmp_path)
    assert results(tmp_path)["status"] == "failed"


# export -------------------------------------------------------------------------------------------------------------
def test_export_writes_a_private_temporary_and_keeps_a_users_partial_folder(trained, tmp_path):  # X3
    from ner_zoo.api.export import export

    _, ckpt, _ = trained
    mine = tmp_path / ".out.partial"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    export(ckpt, tmp_path / "out")
    assert (mine / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.partial", "out"]
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o777 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_export_never_replaces_a_folder_made_meanwhile(trained, tmp_path, monkeypatch):  # X5c
    from ner_zoo.api import card as card_module
    from ner_zoo.api.export import export
    from ner_zoo.errors import CheckpointError

    _, ckpt, _ = trained
    out = tmp_path / "out"
    card = card_module.model_card

    def other_writer(*a, **kw):  # another export (or the user) finishing first
        out.mkdir()
        (out / "theirs.txt").write_text("theirs")
        return card(*a, **kw)

    monkeypatch.setattr(card_module, "model_card", other_writer)
    with pytest.raises(CheckpointError, match="exists and is not an empty folder"):
        export(ckpt, out)
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and [p.name for p in out.iterdir()] == ["theirs.txt"]


def test_export_full_disk_and_bad_record_are_one_line(trained, tmp_path, capsys, monkeypatch):  # X9, X7
    import errno
    from pathlib import Path

    _, ckpt, _ = trained
    real = Path.write_bytes

    def full(self, data):
        real(self, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", full)
    rc, _, err = ner_zoo(capsys, "export", ckpt, "--output", tmp_path / "exp")
    assert rc == 2 and one_error_line(err) == f"ner-zoo: error: {tmp_path / 'exp'}: No space left on device"
    assert list(tmp_path.iterdir()) == []  # no partial folder
    monkeypatch.undo()
    bad = write(tmp_path / "badrec.json", "{not json")
    rc, _, err = ner_zoo(capsys, "export", ckpt, "--output", tmp_path / "x7", "--record", bad)
    assert rc == 2 and f"{bad}: not a run record: invalid JSON" in one_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["badrec.json"]


def test_export_on_a_really_full_tmpfs(trained, tmp_path, capsys):
    import subprocess

    _, ckpt, _ = trained
    disk = tmp_path / "disk"
    _mounted_tmpfs(disk, "64k")
    try:
        rc, _, err = ner_zoo(capsys, "export", ckpt, "--output", disk / "exp")
        assert rc == 2 and one_error_line(err) == f"ner-zoo: error: {disk / 'exp'}: No space left on device"
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)
