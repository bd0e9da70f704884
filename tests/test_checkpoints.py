"""Checkpoints as the commands load them: damaged, foreign, renamed or mismatched files are one line naming the file;
old key names and appended bytes still load (ner_zoo/training/checkpoints.py and the commands' loaders)."""

from __future__ import annotations

import pytest
import torch
from cli_cases import (
    ALL_KINDS,
    LOADER_KINDS,
    TRAIN,
    T,
    _ckpt_command,
    _with_class,
    bad_checkpoint,
    config,
    flip_weight_bytes,
    ner_zoo,
    one_error_line,
    predict,
    write,
)


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
