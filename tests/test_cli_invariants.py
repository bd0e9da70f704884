"""Invariants of the CLI, checked by a generator rather than a list (issue 30): hypothesis mutates valid inputs
and options (bytes, whitespace, encodings, tag spellings, config values, output paths that alias an input) and
runs ``ner-zoo`` in-process on each. Whatever the input:

* the exit status is 0 or 2, and no traceback is printed (without ``--debug``);
* on status 2 the last line of stderr is the one ``ner-zoo: error:`` line, naming a file or an option;
* no input file is changed (nor the checkpoint);
* ``predict`` that succeeds writes as many sentences as it read.

The default (fast) run is part of ``make test``; ``-m slow`` runs the same properties on many more examples
(hypothesis profiles ``cli-fast`` and ``cli-slow``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest
from cli_cases import TRAIN, config_keys, model_fit_config, ner_zoo
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

settings.register_profile("cli-fast", max_examples=12, deadline=None, database=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("cli-slow", max_examples=int(os.environ.get("NER_ZOO_INVARIANT_EXAMPLES", 150)),
                          deadline=None, database=None, derandomize="NER_ZOO_INVARIANT_EXAMPLES" not in os.environ,
                          suppress_health_check=list(HealthCheck),
                          phases=[Phase.explicit, Phase.generate, Phase.target])  # no shrinking: each run is slow
FAST, SLOW = settings.get_profile("cli-fast"), settings.get_profile("cli-slow")

SPACES = [" ", "\t", "\u00a0", "\u3000", "\u2009", "  ", "\t\t"]
TAG_SPELLINGS = ["b-ORG", "B-org", "0", "M-PER", "I-ORG", "E-MISC", "S-PER", "B-", "O-", "U-PER", "L-PER", "b-org"]


@st.composite
def conll_bytes(draw, columns: int = 2) -> bytes:
    """The review's base file ``T`` (``columns`` = 2: token tag; 3: token gold predicted), mutated."""
    lines = [ln if not ln or columns == 2 else f"{ln} {ln.split()[-1]}" for ln in TRAIN.split("\n")]
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["trailing", "leading", "tabs", "tag", "blank", "delete", "duplicate",
                                     "docstart", "token"]))
        if kind == "trailing":
            lines[i] += draw(st.sampled_from(SPACES))
        elif kind == "leading":
            lines[i] = draw(st.sampled_from(SPACES)) + lines[i]
        elif kind == "tabs":
            lines = [ln.replace(" ", "\t") for ln in lines]
        elif kind == "tag" and lines[i].split():
            lines[i] = " ".join(lines[i].split()[:-1] + [draw(st.sampled_from(TAG_SPELLINGS))])
        elif kind == "blank":
            lines.insert(i, draw(st.sampled_from(["", " ", "\t"])))
        elif kind == "delete" and len(lines) > 1:
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "docstart":
            lines.insert(i, "-DOCSTART- O" + (" O" if columns == 3 else ""))
        elif kind == "token" and lines[i].split():
            lines[i] = draw(st.sampled_from(["José", "Müller", "“Hello”", "a\u00a0b", "x\x00y", "🙂"])) + \
                lines[i][lines[i].index(" "):] if " " in lines[i] else lines[i]
    text = draw(st.sampled_from(["\n", "\r\n"])).join(lines)
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "latin-1", "utf-16", "cp1252"]))
    data = text.encode(encoding, errors="replace")
    if draw(st.booleans()) and draw(st.booleans()):  # random bytes somewhere
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    return data


def digest(paths) -> dict:
    return {str(p): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths if Path(p).is_file()}


def check(rc: int, err: str, folder: Path, *also: Path) -> None:
    """Status 0 or 2, no traceback; on 2 one last line naming a file (under ``folder`` or ``also``) or an option."""
    assert rc in (0, 2), err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    if rc == 2:
        last = err.strip().splitlines()[-1]
        assert last.startswith("ner-zoo: error: "), err[-3000:]
        assert any(str(f) in last for f in (folder, *also)) or "--" in last or \
            "ner-zoo" in last[len("ner-zoo: error: "):], last


def _stats(capsys, data: bytes, encoding: str | None) -> None:
    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    try:
        f = folder / "train.conll"
        f.write_bytes(data)
        before = digest([f])
        rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={f}",
                             *(["--encoding", encoding] if encoding else []))
        check(rc, err, folder)
        assert digest([f]) == before
    finally:
        shutil.rmtree(folder)


@FAST
@given(data=conll_bytes(), encoding=st.sampled_from([None, None, "utf-8", "latin-1", "bogus"]))
def test_data_stats_invariants(capsys, data, encoding):
    _stats(capsys, data, encoding)


@pytest.mark.slow
@SLOW
@given(data=conll_bytes(), encoding=st.sampled_from([None, None, "utf-8", "latin-1", "bogus"]))
def test_data_stats_invariants_long(capsys, data, encoding):
    _stats(capsys, data, encoding)


def _score(capsys, data: bytes, by: str | None, output: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    try:
        f = folder / "pred.conll"
        f.write_bytes(data)
        args = ["score", str(f)] + (["--by", by] if by else [])
        if output == "existing" and by:
            (folder / f"breakdown_{by}.md").write_text("mine\n")
        if output != "none":
            args += ["--output", str(folder)]
        inputs = [f] + list(folder.glob("breakdown_*"))
        before = digest(inputs)
        rc, _, err = ner_zoo(capsys, *args)
        check(rc, err, folder)
        assert digest(inputs) == before
    finally:
        shutil.rmtree(folder)


@FAST
@given(data=conll_bytes(columns=3), by=st.sampled_from([None, "length", "nesting"]),
       output=st.sampled_from(["none", "new", "existing"]))
def test_score_invariants(capsys, data, by, output):
    _score(capsys, data, by, output)


@pytest.mark.slow
@SLOW
@given(data=conll_bytes(columns=3), by=st.sampled_from([None, "length", "nesting"]),
       output=st.sampled_from(["none", "new", "existing"]))
def test_score_invariants_long(capsys, data, by, output):
    _score(capsys, data, by, output)


OUTPUTS = ["new", "existing", "existing+overwrite", "input", "hardlink", "symlink", "loop", "folder", "ckpt",
           "devnull"]


def _output_path(kind: str, folder: Path, inp: Path, ckpt: Path) -> tuple[Path, list[str]]:
    out = folder / "out.conll"
    if kind.startswith("existing"):
        out.write_text("mine\n")
        return out, ["--overwrite"] if kind.endswith("overwrite") else []
    if kind == "input":
        return inp, []
    if kind == "hardlink":
        os.link(inp, out)
    elif kind == "symlink":
        out.symlink_to(inp)
    elif kind == "loop":
        (folder / "loopB").symlink_to(out)
        out.symlink_to(folder / "loopB")
    elif kind == "folder":
        return folder, []
    elif kind == "ckpt":
        return ckpt, ["--overwrite"]
    elif kind == "devnull":
        return Path("/dev/null"), []
    return out, []


def _predict(capsys, ckpt: Path, data: bytes, suffix: str, output: str, option: list[str]) -> None:
    from ner_zoo.cli.predict import read_input

    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    try:
        inp = folder / f"in{suffix}"
        inp.write_bytes(data)
        out, extra = _output_path(output, folder, inp, ckpt)
        before = digest([inp, ckpt])
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", out,
                             "--accelerator", "cpu", *extra, *option)
        check(rc, err, folder)
        assert digest([inp, ckpt]) == before
        if rc == 0 and output in ("new", "existing+overwrite"):
            fmt = option[1] if option[:1] == ["--input_format"] else "auto"
            encoding = option[1] if option[:1] == ["--encoding"] else None
            n_in = len(read_input(inp, fmt, encoding)[0])
            text = out.read_text(encoding="utf-8")
            jsonl = "jsonl" in option or text.startswith("{")
            n_out = len(text.splitlines()) if jsonl else sum(1 for b in text.split("\n\n") if b.strip())
            assert n_in == n_out, (n_in, n_out)
        assert not list(folder.rglob("*.tmp"))
    finally:
        shutil.rmtree(folder)


PREDICT_OPTIONS = st.sampled_from([[], [], ["--batch_size", "1"], ["--batch_size", "0"], ["--batch_size", "x"],
                                   ["--precision", "bogus"], ["--input_format", "text"], ["--encoding", "latin-1"],
                                   ["--output_format", "jsonl"]])


@FAST
@given(data=conll_bytes(), suffix=st.sampled_from([".conll", ".txt", ""]), output=st.sampled_from(OUTPUTS),
       option=PREDICT_OPTIONS)
def test_predict_invariants(fitted, capsys, data, suffix, output, option):
    _predict(capsys, fitted[1], data, suffix, output, option)


@pytest.mark.slow
@SLOW
@given(data=conll_bytes(), suffix=st.sampled_from([".conll", ".txt", ""]), output=st.sampled_from(OUTPUTS),
       option=PREDICT_OPTIONS)
def test_predict_invariants_long(fitted, capsys, data, suffix, output, option):
    _predict(capsys, fitted[1], data, suffix, output, option)


BAD_VALUES = {
    "--data.init_args.batch_size": ["0", "-1", "1.5", "x"],
    "--data.init_args.eval_batch_size": ["0", "-4"],
    "--data.init_args.tag_scheme": ["bilou2", "bmes", ""],
    "--data.init_args.dev_fraction": ["1.5", "-0.1", ".nan"],
    "--model.init_args.optimizer.init_args.lr": [".nan", "-1", ".inf", "nan"],
    "--trainer.max_epochs": ["-5", "0", "x"],
    "--trainer.max_steps": ["-3", "0"],
    "--trainer.gradient_clip_val": ["-1", ".nan"],
}


def _fit(capsys, cfg: Path, key: str, value: str) -> None:
    folder = cfg.parent
    before = digest([cfg])
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, key, value)
    check(rc, err, folder)
    assert rc == 2 and digest([cfg]) == before
    assert not list(folder.rglob("results.json"))  # refused before any work


@settings(FAST, max_examples=3)
@given(key=st.sampled_from(sorted(BAD_VALUES)), data=st.data())
def test_bad_config_values_invariants(fit_config, capsys, key, data):
    _fit(capsys, fit_config, key, data.draw(st.sampled_from(BAD_VALUES[key])))


@pytest.mark.slow
@settings(SLOW, max_examples=30)
@given(key=st.sampled_from(sorted(BAD_VALUES)), data=st.data())
def test_bad_config_values_invariants_long(fit_config, capsys, key, data):
    _fit(capsys, fit_config, key, data.draw(st.sampled_from(BAD_VALUES[key])))


# --- fit: any value of the config (not a listed few) is trained with or refused in one line -----------------------
EDGE_VALUES = ["0", "-1", "1", "0.5", "1.5", "-0.5", ".nan", ".inf", "x", "null", "''", "true", "[]", "{}"]
NOT_DRAWN = ("trainer.devices", "trainer.num_nodes")  # 2 on CPU is a valid multi-process run: slow, not wrong


@pytest.fixture(scope="module")
def config_leaves(fit_config):
    """Every scalar of the parsed fit config (``--print_config``): model, data, trainer, checkpoint, ..."""
    return [k for k in config_keys(fit_config, "") if k not in NOT_DRAWN]


def _any_value(capsys, cfg: Path, key: str, value: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    cwd = os.getcwd()
    os.chdir(folder)  # a relative path given as the value lands here
    try:
        before = digest([cfg])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.default_root_dir", folder,
                                 "--checkpoint.dirpath", folder / "ckpt", "--record.path", folder / "results.json",
                                 "--trainer.max_time", "00:00:00:20",  # max_epochs -1 or null trains on
                                 f"--{key}", value)
        check(rc, err, folder, cfg.parent)  # the config's own files (the data) may be named
        assert digest([cfg]) == before
    finally:
        os.chdir(cwd)
        shutil.rmtree(folder)


@settings(FAST, max_examples=4)
@given(data=st.data(), value=st.sampled_from(EDGE_VALUES))
def test_any_config_value_invariants(fit_config, config_leaves, capsys, data, value):
    _any_value(capsys, fit_config, data.draw(st.sampled_from(config_leaves)), value)


@pytest.mark.slow
@settings(SLOW, max_examples=80)
@given(data=st.data(), value=st.sampled_from(EDGE_VALUES))
def test_any_config_value_invariants_long(fit_config, config_leaves, capsys, data, value):
    _any_value(capsys, fit_config, data.draw(st.sampled_from(config_leaves)), value)


def _plain_models() -> list[str]:
    from ner_zoo.testing.tiny import TINY, TRANSFORMER_MODELS

    return [n for n in TINY if n not in TRANSFORMER_MODELS]


@pytest.mark.slow
@settings(SLOW, max_examples=80)
@given(data=st.data(), value=st.sampled_from(EDGE_VALUES))
def test_any_model_argument_of_any_model_invariants_long(capsys, data, value):
    """Every registry model without a transformer, any scalar of its ``model`` config."""
    cfg, keys = model_fit_config(data.draw(st.sampled_from(_plain_models())))
    _any_value(capsys, cfg, data.draw(st.sampled_from(keys)), value)


# --- checkpoints: any damage is one line naming the file, under every command that reads one -------------------
TOP_KEYS = ["state_dict", "hyper_parameters", "ner_zoo_class", "ner_zoo_format", "ner_zoo_sha256", "epoch",
            "global_step", "optimizer_states", "loops", "callbacks"]
WRONG = [None, 5, "x", [], {}, 2.5, True]
CLASSES = ["ner_zoo.models.PSA", "ner_zoo.models.HCR", "ner_zoo.models.MIN", "ner_zoo.models.dspert.DSpERT",
           "ner_zoo.errors.NerZooError", "ner_zoo.models.Nope", "os.path.join", "ner_zoo", ""]


@st.composite
def damaged_checkpoint(draw, src: bytes) -> tuple[str, object]:
    """(how, what): bytes damage of the file, or an edit of its dict."""
    kind = draw(st.sampled_from(["truncate", "flip", "zero", "append", "prepend", "del", "wrong", "class"]))
    if kind in ("truncate", "flip", "zero", "append", "prepend"):
        data = bytearray(src)
        at = draw(st.integers(0, len(data) - 1))
        n = draw(st.integers(1, 64))
        if kind == "truncate":
            data = data[:at]
        elif kind == "flip":
            for i in range(at, min(at + n, len(data))):
                data[i] ^= draw(st.integers(1, 255))
        elif kind == "zero":
            data[at:at + n] = bytes(len(data[at:at + n]))
        elif kind == "append":
            data += draw(st.binary(min_size=1, max_size=64))
        else:
            data = bytearray(draw(st.binary(min_size=1, max_size=16))) + data
        return "bytes", bytes(data)
    if kind == "del":
        return "del", draw(st.sampled_from(TOP_KEYS))
    if kind == "wrong":
        return "wrong", (draw(st.sampled_from(TOP_KEYS)), draw(st.sampled_from(WRONG)))
    return "class", draw(st.sampled_from(CLASSES))


def _damaged(ckpt: Path, dst: Path, how: str, what: object) -> None:
    import torch

    if how == "bytes":
        dst.write_bytes(what)
        return
    c = torch.load(ckpt, weights_only=True, map_location="cpu")
    if how == "del":
        c.pop(what, None)
    elif how == "wrong":
        c[what[0]] = what[1]
    else:
        c["ner_zoo_class"] = what
        c["hyper_parameters"]["_class_path"] = what
    torch.save(c, dst)


def _checkpoint(capsys, fitted, how: str, what: object, command: str) -> None:
    cfg, ckpt, _ = fitted
    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    try:
        bad = folder / "bad.ckpt"
        _damaged(ckpt, bad, how, what)
        before = digest([bad, ckpt])
        if command == "predict":
            inp = folder / "in.conll"
            inp.write_text(TRAIN)
            args = ["predict", "--ckpt_path", bad, "--input", inp, "--accelerator", "cpu"]
        else:
            args = [command, "--config", cfg, "--ckpt_path", bad, "--trainer.default_root_dir", folder]
            args += ["--checkpoint.dirpath", folder / "ckpt", "--trainer.max_epochs", "3"] if command == "fit" else []
        rc, _, err = ner_zoo(capsys, *args)
        check(rc, err, folder)
        if rc == 2:
            assert str(bad) in err.strip().splitlines()[-1], err[-2000:]
        assert digest([bad, ckpt]) == before
        assert not list(folder.rglob("*.tmp"))
    finally:
        shutil.rmtree(folder)


@pytest.fixture(scope="module")
def fitted_bytes(fitted):
    return fitted[1].read_bytes()


@settings(FAST, max_examples=6)
@given(data=st.data(), command=st.sampled_from(["predict", "test"]))
def test_damaged_checkpoint_invariants(fitted, fitted_bytes, capsys, data, command):
    how, what = data.draw(damaged_checkpoint(fitted_bytes))
    _checkpoint(capsys, fitted, how, what, command)


# --- fit: valid trainer settings, in any combination, train or are refused in one line ------------------------
TRAINER_TOGGLES = [("--trainer.enable_checkpointing", "false"), ("--trainer.barebones", "true"),
                   ("--trainer.fast_dev_run", "true"), ("--trainer.enable_progress_bar", "false"),
                   ("--trainer.logger", "false"), ("--trainer.enable_model_summary", "false"),
                   ("--trainer.limit_val_batches", "0"), ("--trainer.num_sanity_val_steps", "0"),
                   ("--trainer.detect_anomaly", "true"), ("--trainer.check_val_every_n_epoch", "2"),
                   ("--test_after_fit", "true"), ("--trainer.log_every_n_steps", "1"),
                   ("--trainer.accumulate_grad_batches", "2"), ("--checkpoint.save_last", "true")]


def _toggles(capsys, cfg: Path, toggles: list) -> None:
    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    try:
        args = [a for pair in toggles for a in pair]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.default_root_dir", folder,
                                 "--checkpoint.dirpath", folder / "ckpt", "--record.path", folder / "results.json",
                                 *args)
        check(rc, err, folder)
        assert rc == 2 or (folder / "results.json").is_file(), err[-2000:]
    finally:
        shutil.rmtree(folder)


@settings(FAST, max_examples=3)
@given(toggles=st.lists(st.sampled_from(TRAINER_TOGGLES), unique=True, max_size=3))
def test_trainer_settings_invariants(fit_config, capsys, toggles):
    _toggles(capsys, fit_config, toggles)


@pytest.mark.slow
@settings(SLOW, max_examples=40)
@given(toggles=st.lists(st.sampled_from(TRAINER_TOGGLES), unique=True, max_size=4))
def test_trainer_settings_invariants_long(fit_config, capsys, toggles):
    _toggles(capsys, fit_config, toggles)


# Found by the long run below: an entry Lightning indexes (``loops`` a string) was a TypeError from inside it.
@pytest.mark.parametrize("key, value, command", [("loops", "x", "test"), ("loops", {}, "validate"),
                                                 ("optimizer_states", "x", "fit"), ("callbacks", 5, "fit"),
                                                 ("global_step", 2.5, "fit")])
def test_damaged_trainer_state_is_one_line(fitted, capsys, key, value, command):
    _checkpoint(capsys, fitted, "wrong", (key, value), command)


@pytest.mark.slow
@settings(SLOW, max_examples=60)
@given(data=st.data(), command=st.sampled_from(["predict", "test", "validate", "fit"]))
def test_damaged_checkpoint_invariants_long(fitted, fitted_bytes, capsys, data, command):
    how, what = data.draw(damaged_checkpoint(fitted_bytes))
    _checkpoint(capsys, fitted, how, what, command)


# --- compare: a record with any field of any type is shown or skipped with a warning naming it ------------------
RECORD_FIELDS = ["model", "data", "config", "test", "test.f1", "test.precision", "val", "best_val", "hardware",
                 "hardware.gpu", "epoch_seconds", "epochs", "protocol", "protocol.steps", "status", "seed",
                 "variant", "precision", "encoder", "overlays", "fit_seconds", "data_split", "versions", "devices",
                 "nodes", "segments", "config_hash", "best_epoch"]
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 10**12) | st.floats(allow_nan=False)
                           | st.sampled_from(["", "x", "0.9", "nan", "gpu"]),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                               ["f1", "steps", "gpu", "a"]), inner, max_size=3), max_leaves=6)


def _compare(capsys, edits: list) -> None:

    folder = Path(tempfile.mkdtemp(prefix="inv-"))
    try:
        good, bad = folder / "good", folder / "bad"
        for d in (good, bad):
            d.mkdir()
        base = {"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}, "status": "completed", "epochs": 1}
        (good / "results.json").write_text(json.dumps(base))
        rec = json.loads(json.dumps({**base, "model": "Other"}))
        for key, value in edits:
            head, _, tail = key.partition(".")
            if tail:
                rec[head] = rec.get(head) if isinstance(rec.get(head), dict) else {}
                rec[head][tail] = value
            else:
                rec[head] = value
        (bad / "results.json").write_text(json.dumps(rec))
        before = digest([good / "results.json", bad / "results.json"])
        rc, out, err = ner_zoo(capsys, "compare", good, bad, "--only-runs")
        check(rc, err, folder)
        assert rc == 0 and "| M | D |" in out, (out, err[-2000:])  # the good run is always shown
        assert digest([good / "results.json", bad / "results.json"]) == before
    finally:
        shutil.rmtree(folder)


@settings(FAST, max_examples=5)
@given(edits=st.lists(st.tuples(st.sampled_from(RECORD_FIELDS), JSON_VALUES), min_size=1, max_size=3))
def test_compare_record_invariants(capsys, edits):
    _compare(capsys, edits)


@pytest.mark.slow
@settings(SLOW, max_examples=400)
@given(edits=st.lists(st.tuples(st.sampled_from(RECORD_FIELDS), JSON_VALUES), min_size=1, max_size=3))
def test_compare_record_invariants_long(capsys, edits):
    _compare(capsys, edits)
