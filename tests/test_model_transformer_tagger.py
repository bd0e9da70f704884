"""TransformerTagger: the generic model battery on a tiny random BERT, plus parameter groups, casing, context."""

from __future__ import annotations

import copy

import pytest
import torch

from battery import SAMPLE_DATA, ModelBattery, build
from ner_zoo.testing.tiny import tiny_model as registry_model
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)


def tiny_model(model_dir, **extra) -> dict:
    return registry_model("transformer_tagger", model_dir, **extra)


class TestTransformerTagger(ModelBattery):
    @pytest.fixture(autouse=True)
    def _model(self, tiny_bert_dir):  # noqa: F811
        self.model = tiny_model(tiny_bert_dir)


def test_parameter_groups_and_casing(tmp_path, tiny_bert_dir):  # noqa: F811
    cli = build(tiny_model(tiny_bert_dir), copy.deepcopy(SAMPLE_DATA), tmp_path)
    model = cli.model
    head, pretrained = model.parameter_groups()
    encoder_ids = {id(p) for p in model.encoder.model.parameters()}
    assert {id(p) for p in pretrained["params"]} == encoder_ids and pretrained["lr"] == 1e-3
    assert not encoder_ids & {id(p) for p in head["params"]}
    assert any(p is model.encoder.casing.embedding.weight for p in head["params"])  # new layer: head lr
    assert model.projection.in_features == model.encoder.model.config.hidden_size + 4
    batch = cli.datamodule.vocabularies.collator()(list(enumerate(cli.datamodule.sentences("train")[:8])))
    model.eval()
    with torch.no_grad():
        scores = model.emissions(batch)
    assert scores.shape == (*batch.mask.shape, model.num_tags)


def test_checkpoint_with_the_casing_embedding_outside_the_encoder_loads(tmp_path, tiny_bert_dir):  # noqa: F811
    """Checkpoints written before the casing embedding moved into the encoder keep their trained casing."""
    model = build(tiny_model(tiny_bert_dir), copy.deepcopy(SAMPLE_DATA), tmp_path).model
    state = {"state_dict": {"casing.embedding.weight": torch.ones(8, 4)}, "ner_zoo_format": 1}
    model.on_load_checkpoint(state)
    assert list(state["state_dict"]) == ["net.encoder.casing.embedding.weight"]  # the host holds the network as net


def test_context_from_data_module(tmp_path, tiny_bert_dir):  # noqa: F811
    config = tiny_model(tiny_bert_dir, encoder={"context": 1}, use_crf=False)
    cli = build(config, copy.deepcopy(SAMPLE_DATA), tmp_path,
                trainer={"max_epochs": 1, "limit_train_batches": 1, "limit_val_batches": 1}, subcommand="fit")
    model = cli.model.eval()
    train = cli.datamodule.sentences("train")
    assert len(model.encoder.documents) >= len(train)
    sents = [s for s in train if s.index > 0][:4]
    left, right = model.encoder.documents.get(sents, 1)
    assert all(left) and all(len(a) > 0 for a in left)
    batch = cli.datamodule.vocabularies.collator()(list(enumerate(sents)))
    with torch.no_grad():
        with_ctx = model.emissions(batch)
        model.encoder.context = 0
        alone = model.emissions(batch)
    assert with_ctx.shape == alone.shape and not torch.allclose(with_ctx, alone)


def test_checkpoint_with_the_flat_transformer_keys_loads_and_predicts_the_same(tmp_path, tiny_bert_dir, capsys,
                                                                                recwarn):  # noqa: F811
    """A checkpoint saved before the transformer settings moved into ``encoder`` (flat ``model``, ``pooling``,
    ``casing_dim``, ...) loads in ``predict`` and with ``--ckpt_path``, and predicts what the new one does."""
    from ner_zoo.cli.main import main
    from ner_zoo.models.transformer_tagger import TransformerTagger
    from ner_zoo.training.migrations import renamed_keys
    from ner_zoo.training.inference import load_model, predict

    build(tiny_model(tiny_bert_dir), copy.deepcopy(SAMPLE_DATA), tmp_path,
          trainer={"max_epochs": 1, "limit_train_batches": 2, "limit_val_batches": 1}, subcommand="fit")
    new = tmp_path / "ckpt" / "best.ckpt"
    state = torch.load(new, weights_only=True)
    hp = state["hyper_parameters"]
    encoder = hp.pop("encoder")["init_args"]
    hp.update({k: v for k, v in encoder.items() if k in renamed_keys(TransformerTagger)})  # the old flat keys
    assert hp["model"] == str(tiny_bert_dir) and hp["casing_dim"] == 4
    old = tmp_path / "old.ckpt"
    torch.save(state, old)

    a, b = load_model(new).eval(), load_model(old).eval()
    assert b.encoder.casing_dim == 4 and "model" not in b.hparams
    sentences = copy.deepcopy(build(tiny_model(tiny_bert_dir), copy.deepcopy(SAMPLE_DATA), tmp_path / "d")
                              .datamodule.sentences("dev"))[:16]
    assert predict(b, sentences, accelerator="cpu") == predict(a, sentences, accelerator="cpu")
    for x, y in zip(a.state_dict().values(), b.state_dict().values()):
        torch.testing.assert_close(x, y)
    config = tmp_path / "input-config.yaml"
    assert main(["test", "--config", str(config), "--ckpt_path", str(old)]) == 0, capsys.readouterr().err
    assert not [w for w in recwarn if "model settings replace" in str(w.message)]
