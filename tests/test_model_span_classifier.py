"""ExhaustiveSpanClassifier through the generic battery (nested fixture and flat sample corpus), plus
the span-model plumbing: SpanBatch tensors, flat vs nested decoding, length-bucket metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from battery import SAMPLE_DATA, ModelBattery, build, setup_for_fit
from ner_zoo.testing.tiny import tiny_model
from ner_zoo.data.readers import read_nested_json
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.errors import LabelError
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

NESTED_DIR = Path(__file__).resolve().parent / "fixtures" / "nested"
DEV = read_nested_json(NESTED_DIR / "dev.jsonlines")
NESTED_DATA = {"class_path": "ner_zoo.data.JsonDataModule",
               "init_args": {"data_dir": str(NESTED_DIR), "train_file": "train.jsonlines",
                             "dev_file": "dev.jsonlines", "test_file": "test.jsonlines", "batch_size": 8}}
TINY = tiny_model("span_classifier")


class TestExhaustiveSpanClassifier(ModelBattery):
    model = {**TINY, "init_args": {**TINY["init_args"], "loss": {
        "class_path": "ner_zoo.modules.span_losses.BoundarySmoothingLoss", "init_args": {"reduction": "sum"}}}}
    data = NESTED_DATA


class TestExhaustiveSpanClassifierFlat(ModelBattery):
    """On the flat sample corpus (task ``ner``: flat decoding), without chars, with focal loss."""

    model = {**TINY, "init_args": {**TINY["init_args"], "char_encoder": None,
                                   "loss": {"class_path": "ner_zoo.modules.span_losses.FocalSpanLoss"}}}



def _cli(tmp_path, data=NESTED_DATA, **init):
    model = {**TINY, "init_args": {**TINY["init_args"], **init}}
    tmp_path.mkdir(parents=True, exist_ok=True)
    return build(model, data, tmp_path)


def test_span_batch_gold_tensors(tmp_path):
    cli = _cli(tmp_path)
    model = cli.model
    sents = [Sentence(["IL-2", "gene", "in", "T", "cells"], [Span(0, 2, "DNA"), Span(0, 1, "protein"),
                                                            Span(3, 5, "cell_type")]),
             Sentence(["Nothing", "."]), Sentence(["x"], [Span(0, 1, "virus")])]
    batch = model.collate(list(enumerate(sents)))
    labels = model.vocabs.labels
    assert batch.gold_spans.shape == (3, 3, 3) and batch.gold_mask.sum(1).tolist() == [3, 0, 0]
    assert batch.gold_spans[0, 0].tolist() == [0, 2, labels.index("DNA") + 1]
    assert batch.unknown_labels == 1 and batch.tags is None
    moved = batch.to("cpu")
    assert type(moved).__name__ == "SpanBatch" and moved.gold_spans is not None
    with pytest.raises(LabelError, match="virus"):
        model.compute_loss(batch)
    assert len(model.eval().decode(batch)) == 3  # prediction ignores gold


def test_flat_and_nested_decoding_follow_task(tmp_path):
    nested = _cli(tmp_path / "n").model
    assert nested.nested
    flat = _cli(tmp_path / "f", {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"max_sentences": 8}})
    flat = flat.model
    assert not flat.nested
    forced = _cli(tmp_path / "o", overlap="flat").model
    assert not forced.nested
    spans = torch.tensor([[[0, 1], [0, 2], [1, 2], [1, 3]]])
    probs = torch.zeros(1, 4, forced.num_classes)
    probs[0, :, 1] = torch.tensor([0.9, 0.8, 0.1, 0.7])
    probs[0, :, 0] = 1 - probs[0, :, 1]
    mask = torch.ones(1, 4, dtype=torch.bool)
    name = forced.vocabs.labels[0]
    # (1,2) is NONE; flat: (0,2) overlaps (0,1); nested: (0,2) contains (0,1), (1,3) crosses (0,2)
    assert forced.select_spans(spans, mask, probs) == [[Span(0, 1, name), Span(1, 3, name)]]
    assert nested.select_spans(spans, mask, probs) == [[Span(0, 1, name), Span(0, 2, name)]]
    assert nested.select_spans(spans, mask, probs, threshold=0.85) == [[Span(0, 1, name)]]


def test_length_metrics_logged(tmp_path):
    cli = build(TINY, NESTED_DATA, tmp_path, trainer={"max_epochs": 1}, subcommand="validate")
    metrics = cli.trainer.callback_metrics
    assert "val/f1" in metrics and "val/f1/len=1" in metrics and "val/support/len=2" in metrics
    assert metrics["val/support/len=2"] > 0
    assert metrics["val/support/nested"] > 0 and metrics["val/support/flat"] > 0 and "val/f1/nested" in metrics


def test_warns_about_gold_spans_beyond_max_width(tmp_path):
    cli = _cli(tmp_path, max_width=1)
    with pytest.warns(UserWarning, match=r"longer than max_width=1"):
        cli.model.prepare(cli.datamodule.sentences("train"), {})


def test_transformer_features_hook(tmp_path, tiny_bert_dir):  # noqa: F811
    transformer = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                   "init_args": {"model": str(tiny_bert_dir)}}
    cli = build({**TINY, "init_args": {**TINY["init_args"], "encoder": transformer, "pretrained_lr": 1e-4}},
                dict(SAMPLE_DATA), tmp_path, subcommand="fit",
                trainer={"max_epochs": 1, "limit_train_batches": 2, "limit_val_batches": 1})
    trained = cli.model.eval()
    t = trained.tokens
    assert trained.lstm.lstm.input_size == t.output_dim == t.word_dim + t.chars.output_dim + t.encoder.output_dim
    groups = trained.parameter_groups()
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in trained.tokens.encoder.model.parameters()}
    loaded = type(trained).load_from_checkpoint(cli.trainer.checkpoint_callback.best_model_path,
                                                weights_only=False).eval()
    batch = trained.collate(list(enumerate(cli.datamodule.sentences("dev")[:4])))
    with torch.no_grad():
        torch.testing.assert_close(loaded.span_logits(batch)[1], trained.span_logits(batch)[1])


def test_labelled_as_sohrab_and_miwa_not_dspert_shallow():
    """Review L2: the model and its configs must not present it as DSpERT's shallow (L~ = 0) baseline,
    which is configs/dspert/ablations/shallow.yaml."""
    import ner_zoo.models.span_classifier as module

    root = Path(__file__).resolve().parents[1] / "configs"
    texts = [module.__doc__] + [p.read_text() for p in sorted((root / "span_classifier").glob("*.yaml"))]
    for text in texts:
        assert "Sohrab" in text and "dspert/ablations/shallow.yaml" in text
        assert "baseline of DSpERT" not in text and 'DSpERT "shallow" ablation adds' not in text
    assert "variant: shallow" in (root / "dspert" / "ablations" / "shallow.yaml").read_text()


def test_locate_and_label_dropout_placement(tmp_path, tiny_bert_dir):  # noqa: F811
    """With ablations/lnl_encoder.yaml's placement, h is not dropped and the head input is, once (as LnL)."""
    frozen = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
              "init_args": {"model": str(tiny_bert_dir), "freeze": True}}
    init = {**TINY["init_args"], "encoder": frozen, "embed_dropout": 0.0, "encoder_dropout": 0.0,
            "dropout": 0.0, "head_dropout": 0.9}
    model = build({**TINY, "init_args": init}, NESTED_DATA, tmp_path).model
    batch = model.collate(list(enumerate(DEV[:4])))
    with torch.no_grad():
        torch.testing.assert_close(model.train().token_states(batch), model.eval().token_states(batch))
        assert not torch.equal(model.train().span_logits(batch)[1], model.eval().span_logits(batch)[1])


def test_transformer_features_read_document_context(tmp_path, tiny_bert_dir):  # noqa: F811
    transformer = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                   "init_args": {"model": str(tiny_bert_dir), "context": 1}}
    cli = build({**TINY, "init_args": {**TINY["init_args"], "encoder": transformer}}, NESTED_DATA, tmp_path)
    setup_for_fit(cli)
    model, dm = cli.model, cli.datamodule
    assert model.context_encoders() == [model.tokens.encoder] and len(model.tokens.encoder.documents) > 0
    batch = next(iter(dm.train_dataloader()))
    left, right = model.tokens.encoder.neighbours(batch.sentences)
    assert left is not None and any(left) and len(left) == len(batch.sentences)
    loss = model.train().compute_loss(batch)
    loss.backward()
    assert torch.isfinite(loss)
