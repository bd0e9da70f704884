"""MIN (Li et al. 2021): model battery (full model and NER-module-only ablation), pointer targets and mask,
sentinel placement under padding, segment information against a naive loop, gates' gradients, variants."""

from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch
import yaml

from battery import SAMPLE_DATA, ModelBattery, build
from ner_zoo.testing.tiny import tiny_model
from ner_zoo.cli.lightning_cli import NERZooCLI
from ner_zoo.data.schema import Span
from ner_zoo.errors import DataFormatError
from ner_zoo.models.min import boundary_tags, min_targets, pointer_targets, type_tag_names, type_tags
from ner_zoo.modules.pointer import IGNORE, PointerBoundaryDecoder, pointer_mask, segment_information
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

ROOT = Path(__file__).resolve().parents[1]


def tiny(**extra) -> dict:
    return tiny_model("min", **extra)


class TestMIN(ModelBattery):
    model = tiny()


class TestNERModuleOnly(ModelBattery):
    model = tiny(use_boundary=False, use_type=False)


# pointer gold construction ---------------------------------------------------------------------------------
def test_pointer_targets_adjacent_single_end_and_padding():
    spans = [
        [Span(0, 2, "PER"), Span(2, 3, "LOC"), Span(3, 5, "ORG")],  # adjacent, one single-token, one at the end
        [Span(1, 2, "PER")],
        [],
    ]
    target = pointer_targets(spans, [5, 3, 2], max_length=6)
    assert target.tolist() == [
        [1, 5, 2, 4, 5, IGNORE],  # start -> inclusive end; non-starts (inside, end) -> sentinel n = 5
        [3, 1, 3, IGNORE, IGNORE, IGNORE],  # single-token entity points to itself; sentinel is 3, not 6
        [2, 2, IGNORE, IGNORE, IGNORE, IGNORE],
    ]


def test_pointer_targets_window_and_errors():
    target = pointer_targets([[Span(0, 4, "X"), Span(5, 6, "Y")]], [6], window=3)
    assert target.tolist() == [[IGNORE, 6, 6, 6, 6, 5]]  # a 4-word entity is unreachable with a 3-word window
    with pytest.raises(DataFormatError, match="f.txt:3: two spans start at the same word"):
        pointer_targets([[], [Span(0, 2, "X"), Span(0, 1, "Y")]], [3, 3], sources=["f.txt:1", "f.txt:3"])
    with pytest.raises(DataFormatError, match="sentence 0 of the batch: span .* outside"):
        pointer_targets([[Span(2, 4, "X")]], [3])


def test_pointer_mask():
    valid = pointer_mask(torch.tensor([3, 1]), max_length=3)
    assert valid.shape == (2, 3, 4)
    assert valid[0].int().tolist() == [[1, 1, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1]]  # j <= i <= n (= 3, sentinel)
    assert valid[1].int().tolist() == [[1, 1, 0, 0], [0] * 4, [0] * 4]  # sentinel at 1; padded rows empty
    capped = pointer_mask(torch.tensor([5]), max_length=5, window=2)
    assert capped[0, 0].int().tolist() == [1, 1, 0, 0, 0, 1]  # two words, then only the sentinel


# decoder: sentinel, padding, segment information -------------------------------------------------------
def test_sentinel_sits_after_each_sentence_not_at_padded_length():
    torch.manual_seed(0)
    dec = PointerBoundaryDecoder(4)
    states = torch.randn(3, 5, 4)
    mask = torch.arange(5) < torch.tensor([5, 2, 4]).unsqueeze(1)
    ext = dec.extended(states, mask)
    assert ext.shape == (3, 6, 4)
    for b, n in enumerate([5, 2, 4]):
        torch.testing.assert_close(ext[b, n], dec.sentinel.detach())
        torch.testing.assert_close(ext[b, :n], states[b, :n])
        assert (ext[b, n + 1:] == 0).all()
    log_p, _ = dec(states, mask)
    p = log_p.exp()
    assert torch.allclose(p[1, :2].sum(-1), torch.ones(2)) and (p[1, :2, 3:] < 1e-12).all()
    assert (p[1, 1, :1] < 1e-12).all()  # no end before the start


def test_padding_does_not_change_pointer_or_segments():
    torch.manual_seed(1)
    dec = PointerBoundaryDecoder(6, decoder_hidden=5, max_segment=3).eval()
    states = torch.randn(2, 7, 6)
    mask = torch.arange(7) < torch.tensor([7, 4]).unsqueeze(1)
    log_p, seg = dec(states, mask)
    alone_p, alone_seg = dec(states[1:, :4], mask[1:, :4])
    torch.testing.assert_close(log_p[1, :4, :5], alone_p[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(seg[1, :4], alone_seg[0], atol=1e-5, rtol=1e-5)
    assert (seg[1, 4:] == 0).all()


def test_decoder_input_is_neighbour_sum_with_zero_edges():
    dec = PointerBoundaryDecoder(2)
    seen = {}
    dec.decoder.register_forward_hook(lambda mod, args, out: seen.setdefault("s", args[0]))
    states = torch.tensor([[[1.0, 0], [2, 0], [4, 0], [8, 0]]])
    mask = torch.tensor([[True, True, True, False]])
    dec.decode_states(states, mask)
    assert seen["s"][0, :, 0].tolist() == [3, 7, 6, 4]  # h0+h1, h0+h1+h2, h1+h2 (no padding/sentinel), pad: h2


def test_segment_sum_against_naive_loop():
    torch.manual_seed(2)
    B, L, D, K = 3, 9, 4, 6
    lengths = torch.tensor([9, 5, 1])
    h = torch.randn(B, L, D, dtype=torch.float64) * (torch.arange(L) < lengths.unsqueeze(1)).unsqueeze(-1)
    valid = pointer_mask(lengths, L)
    probs = torch.softmax(torch.randn(B, L, L + 1, dtype=torch.float64).masked_fill(~valid, -1e9), -1) * valid
    fast = segment_information(h, probs, lengths, K)
    naive = torch.zeros(B, L, 4 * D, dtype=torch.float64)
    for b in range(B):
        n = int(lengths[b])
        for j in range(n):
            for i in range(j, min(n, j + K)):  # the sentinel (i = n) is left out, no renormalisation
                hj, hi = h[b, j], h[b, i]
                naive[b, j] += probs[b, j, i] * torch.cat([hj, hi, hi - hj, hi * hj])
    torch.testing.assert_close(fast, naive)


def test_pointer_loss_is_mean_over_words():
    log_p = torch.log(torch.full((1, 2, 3), 0.5))
    target = torch.tensor([[0, IGNORE]])
    assert PointerBoundaryDecoder.loss(log_p, target).item() == pytest.approx(torch.log(torch.tensor(2.0)).item())


# sub-task labels -------------------------------------------------------------------------------------------
def test_type_and_boundary_tags():
    spans = [Span(0, 2, "PER"), Span(2, 3, "PER"), Span(4, 5, "LOC")]
    assert type_tags(spans, 5, "io") == ["PER", "PER", "PER", "O", "LOC"]
    assert type_tags(spans, 5, "iob2") == ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    assert boundary_tags(spans, 5) == ["B", "E", "S", "O", "S"]
    assert type_tag_names(["LOC", "PER"], "io") == ["O", "LOC", "PER"]


# the model ------------------------------------------------------------------------------------------------
def _model_and_batch(tmp_path, **extra):
    cli = build(tiny(**extra), copy.deepcopy(SAMPLE_DATA), tmp_path)
    model = cli.model
    items = list(enumerate(cli.datamodule.sentences("train")[:8]))
    return model, items


def test_gates_receive_gradients(tmp_path):
    model, items = _model_and_batch(tmp_path)
    batch = model.collate(items)
    model.train()
    model.compute_loss(batch).backward()
    for name in ("bdy_gate", "type_gate", "seg_gate"):
        for p in getattr(model, name).parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name
    for module in (model.pointer, model.bdy_cross, model.type_cross, model.bdy_labels, model.type_labels,
                   model.type_crf, model.bdy_project):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.parameters()), module


def test_collator_adds_the_subtask_targets(tmp_path):
    model, items = _model_and_batch(tmp_path, pointer_window=3, type_scheme="bioes")
    batch = model.collate(items)
    type_index = {t: i for i, t in enumerate(model.type_names)}
    want = min_targets([s for _, s in items], batch.mask.shape[1], type_index, "bioes", window=3)
    assert set(want) == {"min_type", "min_pointer", "min_boundary"}
    for k, v in want.items():
        assert torch.equal(v, batch.targets[k])
    assert not set(want) & set(batch.features)  # targets are not inputs
    assert not model.vocabs.collator()(items).targets  # only MIN's collator adds them


@pytest.mark.parametrize("extra", [
    {"use_boundary": False}, {"use_type": False}, {"use_interaction": False}, {"interacted_subtasks": False},
    {"type_scheme": "bioes", "label_dim": 7, "fusion_hidden": 10, "label_loss_weight": 0.5},
    {"pointer_window": 3, "decoder_hidden": 5, "use_crf": False},
])
def test_variants_forward_backward_decode(tmp_path, extra):
    model, items = _model_and_batch(tmp_path, **extra)
    batch = model.collate(items)
    loss = model.train().compute_loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    preds = model.eval().decode(batch)
    assert len(preds) == len(items)
    assert hasattr(model, "pointer") == extra.get("use_boundary", True)
    assert hasattr(model, "type_crf") == extra.get("use_type", True)


def test_bf16_autocast(tmp_path):
    model, items = _model_and_batch(tmp_path, label_loss_weight=1.0)
    batch = model.collate(items)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model.train().compute_loss(batch)
        preds = model.eval().decode(batch)
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and len(preds) == len(items)


def test_transformer_features(tmp_path, tiny_bert_dir):  # noqa: F811
    transformer = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                   "init_args": {"model": str(tiny_bert_dir)}}
    model, items = _model_and_batch(tmp_path, encoder=transformer, pretrained_lr=1e-4)
    t = model.tokens
    assert model.lstm.lstm.input_size == t.output_dim == t.word_dim + t.chars.output_dim + t.encoder.output_dim
    groups = model.parameter_groups()
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in model.tokens.encoder.model.parameters()}
    model.train().compute_loss(model.collate(items)).backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.tokens.encoder.parameters())
    # the checkpoint rebuilds the transformer from the saved config
    cli = build(tiny(encoder=transformer), copy.deepcopy(SAMPLE_DATA), tmp_path / "fit",
                trainer={"max_epochs": 1, "limit_train_batches": 2, "limit_val_batches": 1}, subcommand="fit")
    trained = cli.model.eval()
    loaded = type(trained).load_from_checkpoint(cli.trainer.checkpoint_callback.best_model_path,
                                                weights_only=False).eval()
    batch = trained.collate(items)
    with torch.no_grad():
        torch.testing.assert_close(loaded.emissions(batch), trained.emissions(batch))


# configs ---------------------------------------------------------------------------------------------------
CONFIGS = sorted((ROOT / "configs" / "min").glob("*.yaml"))
ABLATIONS = sorted((ROOT / "configs" / "min" / "ablations").glob("*.yaml"))


def _print_config(*paths: Path) -> dict:
    args = ["fit"] + [a for p in paths for a in ("--config", str(p))] + ["--print_config"]
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        NERZooCLI(args=args)
    return yaml.safe_load(out.getvalue())


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_configs_parse(path):
    init = _print_config(path)["model"]["init_args"]
    assert init["lstm_hidden"] == 100 and init["dropout"] == 0.5 and init["max_width"] == 6


@pytest.mark.parametrize("path", ABLATIONS, ids=lambda p: p.stem)
def test_ablations_override(path):
    init = _print_config(ROOT / "configs" / "min" / "conll2003.yaml", path)["model"]["init_args"]
    flags = (init["use_boundary"], init["use_type"], init["use_interaction"])
    expected = {"ner_only": (False, False, True), "no_boundary": (False, True, True),
                "no_type": (True, False, True), "no_interaction": (True, True, False),
                "no_interacted_subtasks": (True, True, True)}[path.stem]
    assert flags == expected
    assert init["interacted_subtasks"] == (path.stem != "no_interacted_subtasks")


def test_interacted_subtasks_ablation_feeds_the_bilstm_states_to_the_subtasks():
    ablation = ROOT / "configs" / "min" / "ablations" / "no_interacted_subtasks.yaml"
    data = {"data": {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"max_sentences": 8, "embeddings": None}},
            "model": {"init_args": {"words": {"vectors": None}}}, "trainer": {"logger": False}}
    models = {}
    for name, extra in (("main", []), ("ablation", ["--config", str(ablation)])):
        args = ["--config", str(ROOT / "configs" / "min" / "conll2003.yaml"), *extra, "--config", json.dumps(data)]
        models[name] = NERZooCLI(args=args, run=False).model
    main, ablation = models["main"], models["ablation"]
    assert main.interacted_subtasks and main.bdy_project is not None
    assert not ablation.interacted_subtasks and ablation.bdy_project is None  # pointer reads h^Bdy (Eqs. 8-10)
    assert ablation.type_projection.in_features == 200 < main.type_projection.in_features  # type CRF on H^Type
