"""The training fast paths give the same numbers as the plain ones: unpacked BiLSTM, char BiLSTM over
distinct words, collation from ids computed once per sentence."""

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ner_zoo.data.batching import Collator
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.vocab import Vocab
from ner_zoo.modules import CharBiLSTM
from ner_zoo.modules.rnn import BiLSTMEncoder, bilstm, reverse_padded


def packed_lstm(lstm, x, lengths):
    out = lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))[0]
    return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]


def test_reverse_padded_reverses_each_row_within_its_length():
    x = torch.arange(8).view(2, 4)
    assert reverse_padded(x, torch.tensor([3, 4])).tolist() == [[2, 1, 0, 3], [7, 6, 5, 4]]
    y = torch.randn(3, 5, 2)
    lengths = torch.tensor([5, 1, 3])
    assert torch.equal(reverse_padded(reverse_padded(y, lengths), lengths), y)


@pytest.mark.parametrize("layers", [1, 2])
def test_unpacked_bilstm_equals_packed_lstm_values_and_gradients(layers):
    torch.manual_seed(0)
    lstm = nn.LSTM(6, 5, num_layers=layers, batch_first=True, bidirectional=True)
    lengths = torch.tensor([7, 2, 5, 1])
    mask = torch.arange(7).unsqueeze(0) < lengths.unsqueeze(1)
    x = torch.randn(4, 7, 6, requires_grad=True)
    want = packed_lstm(lstm, x, lengths)
    gx, *gw = torch.autograd.grad((want * mask.unsqueeze(2)).square().sum(), [x, *lstm.parameters()])
    got = bilstm(lstm, x, lengths) * mask.unsqueeze(2)
    hx, *hw = torch.autograd.grad(got.square().sum(), [x, *lstm.parameters()])
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(hx, gx)
    for a, b in zip(hw, gw):
        torch.testing.assert_close(a, b)


def test_encoder_zeroes_padding_and_rejects_empty_rows():
    enc = BiLSTMEncoder(3, 4)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    out = enc(torch.randn(2, 3, 3), mask)
    assert out.shape == (2, 3, 8) and not out[~mask].any() and out[mask].abs().sum() > 0
    with pytest.raises(ValueError, match="at least one token"):
        enc(torch.randn(2, 3, 3), torch.tensor([[True, False, False], [False, False, False]]))


def per_word_char_lstm(enc: CharBiLSTM, chars: torch.Tensor) -> torch.Tensor:
    """Each word encoded alone by the packed LSTM: the plain definition."""
    out = torch.zeros(*chars.shape[:2], enc.output_dim)
    for b in range(chars.shape[0]):
        for w in range(chars.shape[1]):
            ids = chars[b, w][chars[b, w] != 0]
            if len(ids):
                h = enc.lstm(enc.embedding(ids).unsqueeze(0))[1][0]
                out[b, w] = torch.cat([h[0, 0], h[1, 0]])
    return out


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_char_bilstm_equals_each_word_encoded_alone(dropout):
    torch.manual_seed(0)
    enc = CharBiLSTM(12, char_dim=4, hidden=3, dropout=dropout).eval()  # eval: no dropout masks to match
    chars = torch.tensor([[[3, 4, 5, 0], [6, 0, 0, 0], [3, 4, 5, 0]],
                          [[6, 0, 0, 0], [7, 8, 9, 10], [0, 0, 0, 0]]])
    torch.testing.assert_close(enc(chars), per_word_char_lstm(enc, chars))


def test_char_bilstm_gradients_over_distinct_words_equal_per_word_ones():
    torch.manual_seed(0)
    enc = CharBiLSTM(12, char_dim=4, hidden=3).train()
    chars = torch.tensor([[[3, 4, 0], [3, 4, 0], [5, 0, 0]]])
    weights = torch.randn(1, 3, 6)
    got = torch.autograd.grad((enc(chars) * weights).sum(), list(enc.parameters()))
    want = torch.autograd.grad((per_word_char_lstm(enc, chars) * weights).sum(), list(enc.parameters()))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def sentence(tokens, spans=()):
    return Sentence(tokens=list(tokens), spans=[Span(*s) for s in spans])


def test_collator_pads_ids_and_computes_them_once_per_sentence(monkeypatch):
    s1 = sentence(["Ann", "met", "Bo"], [(0, 1, "PER"), (2, 3, "PER")])
    s2 = sentence(["Paris"], [(0, 1, "LOC")])
    words = Vocab.build_words([s1, s2])
    chars = Vocab.build_chars([s1, s2])
    tags = Vocab.labels(["O", "S-PER", "S-LOC"], name="tag")
    col = Collator(words, chars, tags, "bioes")
    batch = col([(0, s1), (1, s2)])
    assert batch.words.tolist() == [words.lookup_indices(s1.tokens), words.lookup_indices(["Paris"]) + [0, 0]]
    assert batch.mask.tolist() == [[True] * 3, [True, False, False]]
    assert batch.tags.tolist() == [tags.lookup_indices(["S-PER", "O", "S-PER"]), [tags.stoi["S-LOC"], 0, 0]]
    assert batch.chars.shape == (2, 3, 5)
    assert batch.chars[0, 1].tolist() == [chars.stoi[c] for c in "met"] + [0, 0]
    assert batch.chars[1, 0].tolist() == [chars.stoi[c] for c in "Paris"]
    assert not batch.chars[1, 1:].any() and batch.indices.tolist() == [0, 1]
    calls = []
    monkeypatch.setattr(words, "lookup_indices", lambda toks: calls.append(toks) or [1] * len(toks))
    again = col([(1, s2), (0, s1)])  # other order, other padding: same ids, no new lookups
    assert calls == []
    assert again.words[1].tolist() == batch.words[0].tolist() and again.chars[0, 0].tolist() == batch.chars[1, 0].tolist()
    assert again.tags is not None and again.tags[0, 0] == tags.stoi["S-LOC"]


def test_fused_if_unset_fuses_torch_optimisers_and_keeps_explicit_choices():
    from ner_zoo.training.base import fused_if_unset

    params = [nn.Parameter(torch.randn(3))]
    sgd = fused_if_unset(torch.optim.SGD(params, lr=0.1, momentum=0.9))
    assert sgd.defaults["fused"] is True and sgd.param_groups[0]["fused"] is True
    assert sgd.param_groups[0]["momentum"] == 0.9 and sgd.param_groups[0]["params"] == params
    assert fused_if_unset(torch.optim.AdamW(params, lr=0.1)).defaults["fused"] is True
    for kept in (torch.optim.SGD(params, lr=0.1, fused=False), torch.optim.SGD(params, lr=0.1, foreach=True),
                 torch.optim.LBFGS(params)):  # chosen in the config; no fused implementation
        assert fused_if_unset(kept) is kept


def test_fused_sgd_takes_the_same_steps():
    from ner_zoo.training.base import fused_if_unset

    torch.manual_seed(0)
    a = [nn.Parameter(torch.randn(50, 4)), nn.Parameter(torch.randn(4))]
    b = [nn.Parameter(p.detach().clone()) for p in a]
    plain = torch.optim.SGD(a, lr=0.015, momentum=0.9)
    fused = fused_if_unset(torch.optim.SGD(b, lr=0.015, momentum=0.9))
    for _ in range(5):
        grads = [torch.randn_like(p) for p in a]
        for opt, ps in ((plain, a), (fused, b)):
            for p, g in zip(ps, grads):
                p.grad = g.clone()
            opt.step()
    for p, q in zip(a, b):
        torch.testing.assert_close(p, q)


def test_train_loss_is_logged_only_at_the_steps_loggers_write(tmp_path, monkeypatch):
    from battery import SAMPLE_DATA, build
    from ner_zoo.training.base import NERModule

    logged = []
    real_log = NERModule.log
    monkeypatch.setattr(NERModule, "log", lambda self, name, *a, **k: (logged.append((name, self.global_step)),
                                                                     real_log(self, name, *a, **k))[1])
    model = {"class_path": "ner_zoo.models.BiLSTMCRF", "init_args": {"words": {"dim": 8}, "lstm_hidden": 8}}
    data = {**SAMPLE_DATA, "init_args": {"batch_size": 8, "max_sentences": 48}}  # 6 steps per epoch
    cli = build(model, data, tmp_path, trainer={"max_epochs": 1, "log_every_n_steps": 4, "limit_val_batches": 0},
                subcommand="fit")
    assert [s for n, s in logged if n == "train/loss"] == [3, 5]  # step 4 (every 4) and the last batch
    assert torch.isfinite(cli.trainer.callback_metrics["train/loss"])


def test_batch_pin_memory_pins_every_tensor_of_subclasses_too(monkeypatch):
    from ner_zoo.training.span_model import SpanBatch

    pinned = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda t: pinned.append(t.shape) or t.clone())
    b = SpanBatch([], torch.zeros(2), torch.zeros(2, 3), torch.zeros(2, 3, 4), torch.ones(2, 3, dtype=torch.bool),
                  None, {"pos": torch.zeros(2, 3)}, gold_spans=torch.zeros(2, 1, 3), gold_mask=torch.ones(2, 1))
    out = b.pin_memory()
    assert isinstance(out, SpanBatch) and out.tags is None and len(pinned) == 7
    assert out.gold_spans.shape == (2, 1, 3) and set(out.features) == {"pos"}


def test_half_precision_lstm_sets_the_flag_and_cpu_stays_fp32():
    from ner_zoo.training import HalfPrecisionLSTM

    model = nn.Module()
    model.encoder, model.chars = BiLSTMEncoder(4, 3), CharBiLSTM(10, 4, 3)
    HalfPrecisionLSTM().setup(None, model, "fit")
    assert model.encoder.half_on_cuda and model.chars.half_on_cuda
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model.encoder(torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.bool))
        chars = model.chars(torch.tensor([[[1, 2], [3, 0]]]))
    assert out.dtype == torch.float32 and chars.dtype == torch.float32


def test_compile_modules_compiles_named_submodules_in_place(monkeypatch):
    from ner_zoo.training import CompileModules

    compiled = []
    monkeypatch.setattr(nn.Module, "compile", lambda self, **kw: compiled.append((type(self).__name__, kw)))
    model = nn.Module()
    model.encoder = BiLSTMEncoder(4, 3)
    CompileModules(["encoder", "encoder.lstm"]).setup(None, model, "fit")
    assert compiled == [("BiLSTMEncoder", {"dynamic": True, "mode": None}), ("LSTM", {"dynamic": True, "mode": None})]
    with pytest.raises(AttributeError):
        CompileModules(["decoder"]).setup(None, model, "fit")


def test_training_loader_builds_the_ids_of_every_sentence_up_front():
    from ner_zoo.data.corpora import SampleCorpus

    dm = SampleCorpus(batch_size=4, max_sentences=12)
    loader = dm.train_dataloader()
    assert len(loader.collate_fn._ids) == len(dm.train_sentences()) == 12
    assert not dm.val_dataloader().collate_fn._ids  # evaluation: built as batches come


def test_rand_dropout_keeps_at_the_rate_scales_and_backpropagates_through_the_mask():
    from ner_zoo.modules.dropout import Dropout

    drop = Dropout(0.3)
    x = torch.randn(200, 50, 40, requires_grad=True)
    torch.manual_seed(1)
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.7) < 0.01
    torch.testing.assert_close(y[kept], x[kept] / 0.7)
    y.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.7)
    torch.manual_seed(1)
    assert torch.equal(drop(x), y)  # seeded by the global generator
    assert not torch.equal(drop(x), y)
    drop.eval()
    assert torch.equal(drop(x), x)
    assert isinstance(drop, nn.Dropout) and Dropout(0.0).train()(x) is x



def test_clipping_over_touched_rows_equals_clip_grad_norm():
    from ner_zoo.modules.embeddings import WordEmbedding
    from ner_zoo.training.base import clip_grad_norm_rows

    torch.manual_seed(0)
    emb, lin = WordEmbedding(500, 6), nn.Linear(6, 3)
    emb.track_rows = True
    params = [emb.embedding.weight, lin.weight, lin.bias]
    for scale, max_norm, clipped in ((1.0, 0.5, True), (1e-4, 5.0, False)):
        for p in params:
            p.grad = None
        (lin(emb(torch.randint(0, 500, (4, 7)))).sum() + lin(emb(torch.tensor([[3, 3, 499]]))).sum() * 2).mul(
            scale).backward()
        weight, rows = emb.touched_rows()
        assert weight is params[0] and emb.touched_rows() is None  # consumed
        copies = [nn.Parameter(p.detach().clone()) for p in params]
        for c, p in zip(copies, params):
            c.grad = p.grad.clone()
        expected = torch.nn.utils.clip_grad_norm_(copies, max_norm)
        assert bool(expected > max_norm) == clipped
        torch.testing.assert_close(clip_grad_norm_rows(params, max_norm, {id(weight): rows}), expected)
        for c, p in zip(copies, params):
            torch.testing.assert_close(p.grad, c.grad)


def test_a_fit_clipping_over_touched_rows_takes_the_same_steps(tmp_path, monkeypatch):
    import ner_zoo.training.base as base
    from battery import SAMPLE_DATA, build

    calls = []
    real = base.clip_grad_norm_rows
    monkeypatch.setattr(base, "clip_grad_norm_rows", lambda *a: calls.append(1) or real(*a))
    weights = []
    for track in (True, False):
        model = {"class_path": "ner_zoo.models.BiLSTMCRF", "init_args": {"words": {"dim": 8}, "lstm_hidden": 8}}
        cli = build(model, SAMPLE_DATA, tmp_path / str(track), trainer={
            "max_epochs": 1, "limit_val_batches": 0, "gradient_clip_val": 0.05})
        cli.model.tokens.words.track_rows = track
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
        weights.append({k: v.clone() for k, v in cli.model.state_dict().items()})
    assert len(calls) == 6  # every step of the tracked fit, none of the other
    for k in weights[0]:
        torch.testing.assert_close(weights[0][k], weights[1][k], msg=k)
