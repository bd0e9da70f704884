"""Reliability (issue 10): bad input fails loudly, long inputs, reproducibility, numerics, safe checkpoints,
atomic output. Reader-level error cases live in test_readers.py; here: the data module and CLI level.

Already covered elsewhere (not repeated): predict from the checkpoint alone in a fresh process
(test_cli.py), long sentences through the transformer encoder (test_transformer_encoder.py:
``test_long_sentence_uses_most_central_window``, ``test_long_context_is_trimmed_symmetrically_target_never_cut``),
CRF on length-1 rows and under bf16 (test_crf.py), PSA on a 1-token sentence under bf16 (test_model_psa.py),
uneven DDP evaluation (test_distributed.py). Resumption: test_resume.py. Fuzzing: test_fuzz_readers.py.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from battery import SAMPLE_DATA, build
from test_cli import MODEL

from ner_zoo.checkpoints.entries import FORMAT_VERSION
from ner_zoo.data.batching import Batch
from ner_zoo.data.corpora import ColumnDataModule, JsonDataModule
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.writers import write_jsonl
from ner_zoo.errors import CheckpointError, DataFormatError, LabelError
from ner_zoo.io import atomic_write
from ner_zoo.testing.tiny import plain_taggers, tiny_model
from ner_zoo.training import checkpoint_checks
from ner_zoo.training.inference import load_model, predict

TRAIN = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\n\n"


def write(folder: Path, name: str, text: str | bytes) -> str:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return name


def column_module(tmp_path: Path, train: str | bytes = TRAIN, dev: str | bytes = TRAIN, **kw) -> ColumnDataModule:
    return ColumnDataModule(data_dir=str(tmp_path), train_file=write(tmp_path, "train.conll", train),
                            dev_file=write(tmp_path, "dev.conll", dev), **kw)


# --- bad input at the data-module level ------------------------------------------------------------------------
@pytest.mark.parametrize("dev, message", [
    ("a O\nb B-\n", r"dev\.conll:2: invalid tag 'B-'"),
    ("a O O\nb O\n", r"dev\.conll:2: line has 2 columns, expected 3"),
    ("a O\n\nb Q-PER\n", r"dev\.conll:3: invalid tag 'Q-PER'"),
    ("\n\n \n", r"dev\.conll: no sentences in file"),
    ("", r"dev\.conll: no sentences in file"),
])
def test_malformed_dev_file_fails_setup_naming_file_and_line(tmp_path, dev, message):
    dm = column_module(tmp_path, dev=dev)
    with pytest.raises(DataFormatError, match=message):
        dm.setup("fit")


def test_label_seen_only_in_dev_is_a_label_error(tmp_path):
    dm = column_module(tmp_path, dev="a O\nb O\n\nParis B-LOC\n")
    assert dm.labels == ["MISC", "ORG", "PER"]
    with pytest.raises(LabelError, match=r"dev\.conll:4: label 'LOC' of the dev split never occurs in train"):
        dm.setup("fit")


def test_non_utf8_bytes(tmp_path):
    bad = TRAIN.encode() + "M\xfcller B-PER\n".encode("latin-1")
    with pytest.raises(DataFormatError, match=r"train\.conll:9: cannot decode byte 0xfc as utf-8"):
        column_module(tmp_path, train=bad, encoding="utf-8").setup("fit")
    # default: the whole file is decoded as Latin-1 and the fact recorded (never a silent replacement char)
    dm = column_module(tmp_path, train=bad)
    with pytest.warns(UnicodeWarning, match=r"train\.conll:9: byte 0xfc is not UTF-8.*Latin-1"):
        assert dm.sentences("train")[-1].tokens == ["Müller"]


def test_empty_sentence_option_and_empty_json_sentence(tmp_path):
    from ner_zoo.data.readers import read_conll

    p = tmp_path / write(tmp_path, "e.conll", "a O\n\n\n\nb O\n")
    assert len(read_conll(p)) == 2  # a run of blank lines is one break (CoNLL files often have them)
    with pytest.raises(DataFormatError, match=r"e\.conll:3: empty sentence"):
        read_conll(p, raise_on_empty_sentence=True)
    json_dm = JsonDataModule(data_dir=str(tmp_path), train_file=write(
        tmp_path, "t.jsonl", '{"tokens": ["a"], "entity_mentions": []}\n{"tokens": [], "entity_mentions": []}\n'))
    with pytest.raises(DataFormatError, match=r"t\.jsonl#2: empty sentence"):
        json_dm.setup("fit")


class FlatJson(JsonDataModule):
    """A span-annotated corpus declared flat: overlapping spans must be rejected."""

    task = "ner"


def test_overlapping_spans_in_a_flat_corpus(tmp_path):
    rec = '{"tokens": ["New", "York", "City"], "entity_mentions": [' \
          '{"start": 0, "end": 2, "entity_type": "LOC"}, {"start": 1, "end": 3, "entity_type": "LOC"}]}\n'
    name = write(tmp_path, "flat.jsonl", rec)
    with pytest.raises(DataFormatError, match=r"flat\.jsonl#1: overlapping spans .* declared flat"):
        FlatJson(data_dir=str(tmp_path), train_file=name).setup("fit")
    nested = JsonDataModule(data_dir=str(tmp_path), train_file=name, dev_fraction=0.5)
    both = nested.sentences("train") + nested.sentences("dev")
    assert [len(s.spans) for s in both] == [2]  # the same file is fine for a nested corpus


@pytest.mark.parametrize("mention, message", [
    ('{"start": 2, "end": 1, "entity_type": "X"}', r"s\.jsonl#1: span \(2, 1, 'X'\) ends before it starts"),
    ('{"start": -1, "end": 1, "entity_type": "X"}', r"s\.jsonl#1: span \(-1, 1, 'X'\) is out of range"),
    ('{"start": 0, "end": 9, "entity_type": "X"}', r"s\.jsonl#1: span \(0, 9, 'X'\) is out of range for 3"),
    ('{"start": 0.5, "end": 1, "entity_type": "X"}', r"s\.jsonl#1: span offsets must be integers"),
    ('{"start": 0, "end": 1, "entity_type": ""}', r"s\.jsonl#1: span \(0, 1\) has no label"),
])
def test_bad_json_spans_fail_setup_naming_the_record(tmp_path, mention, message):
    name = write(tmp_path, "s.jsonl", f'{{"tokens": ["a", "b", "c"], "entity_mentions": [{mention}]}}\n')
    with pytest.raises(DataFormatError, match=message):
        JsonDataModule(data_dir=str(tmp_path), train_file=name).setup("fit")


def test_duplicate_spans_are_reported_not_silently_merged(tmp_path):
    m = '{"start": 0, "end": 1, "entity_type": "X"}'
    name = write(tmp_path, "d.jsonl", f'{{"tokens": ["a", "b"], "entity_mentions": [{m}, {m}]}}\n' * 2)
    dm = JsonDataModule(data_dir=str(tmp_path), train_file=name, dev_fraction=0.5)
    with pytest.warns(UserWarning, match="dropped 2 duplicate spans"):
        dm.setup("fit")
    s = Sentence(["a", "b"], [Span(0, 1, "X"), Span(0, 1, "X")], source="d.jsonl#1")
    with pytest.raises(DataFormatError, match=r"d\.jsonl#1: duplicate span \(0, 1, 'X'\)"):
        s.validate()


# --- bad configs -----------------------------------------------------------------------------------------------
def _cli_error(tmp_path, capsys, config: dict) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    from ner_zoo.cli.main import main

    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        code = main(["fit", "--config", str(path)])  # an unknown key: one line, status 2
    except SystemExit as e:  # any other config error: jsonargparse's usage and message
        code = e.code
    finally:
        sys.argv = argv
    assert code != 0
    return capsys.readouterr().err


@pytest.mark.parametrize("where, key", [("model", "hiden"), ("data", "batch_sise"), ("trainer", "max_epoch")])
def test_config_key_typo_is_named(tmp_path, capsys, where, key):
    config = {"model": copy.deepcopy(MODEL), "data": copy.deepcopy(SAMPLE_DATA), "trainer": {"logger": False}}
    section = config[where]["init_args"] if where != "trainer" else config[where]
    section[key] = 3
    err = _cli_error(tmp_path, capsys, config)
    assert key in err, err[-2000:]


def test_config_wrong_type_is_named(tmp_path, capsys):
    config = {"model": copy.deepcopy(MODEL), "data": copy.deepcopy(SAMPLE_DATA)}
    config["data"]["init_args"]["batch_size"] = "ten"
    err = _cli_error(tmp_path, capsys, config)
    assert "batch_size" in err and "ten" in err, err[-2000:]


# --- checkpoints, long inputs, numerics --------------------------------------------------------------------
TAGGERS = plain_taggers()  # from the tiny registry; the other models: tests/test_long_documents.py


SMALL = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 16}}


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """One tiny BiLSTM-CRF fitted for 2 steps, and its checkpoint."""
    tmp = tmp_path_factory.mktemp("ckpt")
    cli = build(MODEL, SMALL, tmp, trainer={"max_steps": 2, "max_epochs": 1}, subcommand="fit")
    return cli, Path(cli.trainer.checkpoint_callback.best_model_path)


def test_checkpoint_loads_with_weights_only(fitted):
    _, ckpt = fitted
    state = torch.load(ckpt, map_location="cpu", weights_only=True)  # no arbitrary pickled objects inside
    assert state["ner_zoo_format"] == FORMAT_VERSION == 2 and "vocabs" in state["hyper_parameters"]


def test_checkpoint_with_pickled_objects_is_refused_by_default(fitted, tmp_path):
    _, ckpt = fitted
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    state["extra"] = subprocess.Popen  # any global that is not a plain value
    bad = tmp_path / "pickled.ckpt"
    torch.save(state, bad)
    with pytest.raises(CheckpointError, match="weights_only=False"):
        load_model(bad)
    assert load_model(bad, weights_only=False) is not None  # explicit opt-in for a trusted file


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, None])  # a newer ner-zoo's, or none
def test_checkpoint_from_incompatible_version(fitted, tmp_path, version):
    _, ckpt = fitted
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    if version is None:
        del state["ner_zoo_format"]
    else:
        state["ner_zoo_format"] = version
    bad = tmp_path / "future.ckpt"
    torch.save(state, bad)
    with pytest.raises(CheckpointError, match=rf"checkpoint format {version!r} is not supported.*format {FORMAT_VERSION}\)"):
        load_model(bad)


@pytest.mark.parametrize("key", ["epoch", "global_step", "optimizer_states", "lr_schedulers", "callbacks", "loops",
                                 "ner_zoo_sha256"])
@pytest.mark.parametrize("value", [5, "x", [3], {}, 2.5, True, -1])
def test_damaged_trainer_state_names_the_entry(fitted, tmp_path, key, value):
    _, ckpt = fitted
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    fits = {"epoch": [5], "global_step": [5], "callbacks": [{}], "lr_schedulers": [], "optimizer_states": [],
            "ner_zoo_sha256": ["x"]}  # a wrong digest string is the digest check's to report
    state[key] = value
    bad = tmp_path / "damaged.ckpt"
    torch.save(state, bad)
    if value in fits.get(key, []) and type(value) is not bool:
        checkpoint_checks.read(bad)
        return
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(bad))}: its '{key}' entry is damaged"):
        checkpoint_checks.read(bad)


@pytest.mark.parametrize("name", TAGGERS)
def test_1000_token_sentence_every_model(tmp_path, name):
    """Fit 2 steps, reload from the checkpoint alone (weights_only), tag a 1,000-token sentence."""
    cli = build(tiny_model(name), SMALL, tmp_path, trainer={"max_steps": 2, "max_epochs": 1,
                                                                 "limit_val_batches": 1}, subcommand="fit")
    model = load_model(cli.trainer.checkpoint_callback.best_model_path).eval()
    words = [t for s in cli.datamodule.sentences("train") for t in s.tokens]
    gold = [s for s in cli.datamodule.sentences("train")]
    tokens = (words * (1000 // len(words) + 1))[:1000]
    long = Sentence(tokens, source="long:1")
    batch = model.collate([(0, long), (1, gold[0])])
    ids = model.decode_ids(batch)
    assert [len(r) for r in ids] == [1000, len(gold[0])]  # a tag for every token
    assert predict(model, [long], accelerator="cpu") == [model.decode(batch)[0]]


def _finite_under_bf16(model, batch: Batch) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model.compute_loss(batch)
        scores = model.emissions(batch)
    assert torch.isfinite(loss) and torch.isfinite(scores.float()).all()
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.slow
@pytest.mark.parametrize("name", TAGGERS)
def test_bf16_one_token_sentences_every_model(tmp_path, name):
    cli = build(tiny_model(name), SMALL, tmp_path, trainer={"max_steps": 1, "max_epochs": 1,
                                                                 "limit_val_batches": 1}, subcommand="fit")
    model = cli.model.eval()  # eval: HCR's memory is then queried, not written with non-train sentences
    model.trainer = None  # outside a loop (MIN logs its sub-losses)
    sents = [Sentence(["Peter"], [Span(0, 1, "PER")]), Sentence(["x"]), cli.datamodule.sentences("train")[0]]
    collate = model.collate
    _finite_under_bf16(model, collate(list(enumerate(sents))))
    _finite_under_bf16(model, collate(list(enumerate(sents[:1]))))  # a batch of one 1-token sentence


def test_psa_attention_all_padding_row_bf16():
    from ner_zoo.models.psa import ContextFusion

    layer = ContextFusion(8, window=3)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    x = torch.randn(2, 3, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, probs, gate = layer.fuse(x, mask)
    assert torch.isfinite(out.float()).all() and torch.isfinite(probs.float()).all()


def test_nan_loss_stops_training_with_a_clear_message(tmp_path, monkeypatch):
    cli = build(MODEL, SMALL, tmp_path, trainer={"max_epochs": 2})
    real = type(cli.model).compute_loss
    calls = []

    def poisoned(self, batch):
        calls.append(1)
        loss = real(self, batch)
        return loss * float("nan") if len(calls) == 2 else loss

    monkeypatch.setattr(type(cli.model), "compute_loss", poisoned)
    with pytest.raises(FloatingPointError, match=r"loss became nan at step 1 \(epoch 0\); lower "
                       r"--model.init_args.optimizer.init_args.lr"):
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    assert len(calls) == 2  # stopped at once


# --- reproducibility -----------------------------------------------------------------------------------------
def test_same_seed_same_metrics_and_weights_on_cpu(tmp_path):
    runs = []
    for i in range(2):
        cli = build(MODEL, SMALL, tmp_path / str(i), trainer={"max_epochs": 2, "deterministic": True},
                    subcommand="fit")
        runs.append(({k: float(v) for k, v in cli.trainer.callback_metrics.items()}, cli.model.state_dict()))
    (m1, w1), (m2, w2) = runs
    assert m1 == m2 and "val/f1" in m1
    assert w1.keys() == w2.keys() and all(torch.equal(w1[k], w2[k]) for k in w1)


# --- atomic output ---------------------------------------------------------------------------------------------
def test_exception_inside_atomic_write_keeps_old_file(tmp_path):
    target = tmp_path / "pred.jsonl"
    write_jsonl(target, [Sentence(["a"])], [[]])
    old = target.read_bytes()
    for exc in (KeyboardInterrupt, ValueError):  # BaseException too: Ctrl-C mid-write
        with pytest.raises(exc), atomic_write(target, overwrite=True) as f:
            f.write('{"tokens": ["half')
            raise exc()
        assert target.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == ["pred.jsonl"]
    with pytest.raises(ValueError, match="1 scores for 0 predicted spans"):  # fails after writing a line
        write_jsonl(target, [Sentence(["b"]), Sentence(["c"])], [[], []], scores=[[], [0.5]], overwrite=True)
    assert target.read_bytes() == old


def test_killed_process_never_leaves_a_half_written_target(tmp_path):
    target = tmp_path / "out.conll"
    target.write_text("old complete file\n")
    code = ("import os, sys; from ner_zoo.io import atomic_write\n"
            "with atomic_write(sys.argv[1], overwrite=True) as f:\n"
            "    f.write('half of a new file'); f.flush(); os._exit(9)\n")
    out = subprocess.run([sys.executable, "-c", code, str(target)], timeout=120)
    assert out.returncode == 9
    assert target.read_text() == "old complete file\n"
    leftovers = [p.name for p in tmp_path.iterdir() if p != target]
    assert all(n.startswith(".out.conll.") and n.endswith(".tmp") for n in leftovers)  # hidden, named .tmp
