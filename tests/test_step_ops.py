"""Issue 33 (item 3): the BiLSTM-CRF step's reversals, char-word picking and dropout mask take fewer, cheaper
operations, with the same numbers as the plain forms (bitwise where only values are moved)."""

from pathlib import Path

import pytest
import torch
from torch import nn

from ner_zoo.modules import CharBiLSTM
from ner_zoo.modules.dropout import Dropout
from ner_zoo.modules.rnn import (BiLSTMEncoder, _directions, bilstm, bilstm_final, reverse_index,
                                 reverse_padded)


def graph_ops(t: torch.Tensor) -> set[str]:
    """Names of the autograd nodes behind ``t``."""
    seen, todo, names = set(), [t.grad_fn], set()
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.add(type(fn).__name__)
        todo.extend(f for f, _ in fn.next_functions)
    return names


def gather_reverse(x, lengths):
    """The plain form: one gather over an index expanded to ``x``'s shape."""
    index = reverse_index(lengths, x.shape[1], x.device)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


def test_reverse_padded_equals_the_gather_exactly_with_gradients_and_scatters_nothing():
    torch.manual_seed(0)
    lengths = torch.tensor([6, 1, 4, 6])
    x = torch.randn(4, 6, 5, 3, requires_grad=True)
    g = torch.randn(4, 6, 5, 3)
    got = reverse_padded(x, lengths)
    (gx,) = torch.autograd.grad(got, x, g)
    want = gather_reverse(x, lengths)
    (wx,) = torch.autograd.grad(want, x, g)
    assert torch.equal(got, want) and torch.equal(gx, wx)
    assert "GatherBackward0" not in graph_ops(got)


@pytest.mark.parametrize("layers", [1, 2])
def test_bilstm_graph_has_no_gather(layers):
    lstm = nn.LSTM(4, 3, num_layers=layers, batch_first=True, bidirectional=True)
    out = bilstm(lstm, torch.randn(3, 5, 4, requires_grad=True), torch.tensor([5, 2, 3]))
    assert "GatherBackward0" not in graph_ops(out)


@pytest.mark.parametrize("layers, dropout", [(1, 0.0), (2, 0.0), (2, 0.5)])
def test_bilstm_over_unpadded_rows_is_one_call_with_the_two_direction_result(layers, dropout, monkeypatch):
    """A batch without padding runs both directions in one ``nn.LSTM`` call: the outputs of the per-direction
    form exactly, gradients up to summation order; with dropout between layers in training, the general path."""
    import ner_zoo.modules.rnn as rnn

    torch.manual_seed(0)
    lstm = nn.LSTM(4, 3, num_layers=layers, batch_first=True, bidirectional=True, dropout=dropout)
    x = torch.randn(3, 5, 4, requires_grad=True)
    lengths = torch.full((3,), 5)
    calls = []
    monkeypatch.setattr(rnn, "_directions", lambda *a: calls.append(1) or _directions(*a))
    torch.manual_seed(1)
    got = bilstm(lstm, x, lengths)
    assert bool(calls) == (dropout > 0)
    monkeypatch.setattr(rnn, "unpadded", lambda *a: False)  # the per-direction form
    torch.manual_seed(1)
    want = bilstm(lstm, x, lengths)
    assert torch.equal(got, want)
    g = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(got, [x, *lstm.parameters()], g),
                    torch.autograd.grad(want, [x, *lstm.parameters()], g)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    short = bilstm(lstm, x, torch.tensor([5, 4, 5]))  # one padded row: the per-direction form
    assert "IndexSelectBackward0" in graph_ops(short)


@pytest.mark.parametrize("layers", [1, 2])
def test_bilstm_final_is_the_last_forward_and_first_backward_output(layers):
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 3, num_layers=layers, batch_first=True, bidirectional=True)
    lengths = torch.tensor([5, 1, 3, 5])
    x = torch.randn(4, 5, 4, requires_grad=True)
    out = bilstm(lstm, x, lengths)
    want = torch.cat([out[torch.arange(4), lengths - 1, :3], out[:, 0, 3:]], 1)
    got = bilstm_final(lstm, x, lengths)
    assert torch.equal(got, want)
    g = torch.randn(4, 6)
    for a, b in zip(torch.autograd.grad(got, [x, *lstm.parameters()], g),
                    torch.autograd.grad(want, [x, *lstm.parameters()], g)):
        assert torch.equal(a, b)
    if layers == 1:  # the backward outputs are not reversed back: no gather, and one cat of [B, 2 * hidden]
        assert "GatherBackward0" not in graph_ops(got)


def per_word(enc: CharBiLSTM, chars: torch.Tensor) -> torch.Tensor:
    """Each word encoded alone by the packed LSTM: the plain definition (zero for empty slots)."""
    out = torch.zeros(*chars.shape[:2], enc.output_dim)
    for b in range(chars.shape[0]):
        for w in range(chars.shape[1]):
            ids = chars[b, w][chars[b, w] != enc.padding_idx]
            if len(ids):
                h = enc.lstm(enc.embedding(ids).unsqueeze(0))[1][0]
                out[b, w] = torch.cat([h[0, 0], h[1, 0]])
    return out


@pytest.mark.parametrize("case", ["with_empty_slots", "no_empty_slot", "all_empty", "wide_padding",
                                  "no_char_column"])
def test_char_bilstm_over_all_slots_equals_each_word_alone(case):
    torch.manual_seed(0)
    enc = CharBiLSTM(12, char_dim=4, hidden=3).train()
    chars = {"with_empty_slots": [[[3, 4, 5, 0], [6, 0, 0, 0], [3, 4, 5, 0]],
                                  [[6, 0, 0, 0], [7, 8, 9, 10], [0, 0, 0, 0]]],
             "no_empty_slot": [[[3, 4, 0], [6, 0, 0], [3, 4, 0]], [[6, 0, 0], [7, 8, 9], [3, 4, 0]]],
             "all_empty": [[[0, 0], [0, 0]]],
             "wide_padding": [[[3, 4, 0, 0, 0], [0, 0, 0, 0, 0]]],  # columns no word reaches
             "no_char_column": torch.zeros(2, 3, 0, dtype=torch.long)}[case]
    chars = torch.tensor(chars)
    weights = torch.randn(*chars.shape[:2], 6)
    got = enc(chars)
    want = per_word(enc, chars)
    torch.testing.assert_close(got, want)
    assert got.shape == (*chars.shape[:2], 6)
    if case in ("all_empty", "no_char_column"):
        assert not got.any()
        return
    g_got = torch.autograd.grad((got * weights).sum(), list(enc.parameters()))
    g_want = torch.autograd.grad((want * weights).sum(), list(enc.parameters()))
    for a, b in zip(g_got, g_want):
        torch.testing.assert_close(a, b)
    assert graph_ops(got).isdisjoint({"GatherBackward0", "IndexPutBackward0", "IndexBackward0"})


def test_char_bilstm_with_another_padding_id_or_dropout_takes_the_general_path():
    torch.manual_seed(0)
    enc = CharBiLSTM(12, char_dim=4, hidden=3, padding_idx=11).eval()
    chars = torch.tensor([[[3, 4, 11], [11, 11, 11], [3, 4, 11], [0, 2, 11]]])
    torch.testing.assert_close(enc(chars), per_word(enc, chars))
    drop = CharBiLSTM(12, char_dim=4, hidden=3, dropout=0.5).train()
    out = drop(torch.tensor([[[3, 4, 0], [0, 0, 0]]]))
    assert out.shape == (1, 2, 6) and not out[0, 1].any() and out[0, 0].any()


def test_word_encoder_equals_the_gather_form_exactly(monkeypatch):
    """The encoder's outputs and gradients are those of the gather reversal, bit for bit."""
    import ner_zoo.modules.rnn as rnn

    torch.manual_seed(0)
    enc = BiLSTMEncoder(5, 4)
    lengths = torch.tensor([7, 3, 1, 6])
    mask = torch.arange(7) < lengths.unsqueeze(1)
    x = torch.randn(4, 7, 5, requires_grad=True)
    g = torch.randn(4, 7, 8)
    got = enc(x, mask)
    grads = torch.autograd.grad(got, [x, *enc.parameters()], g)
    monkeypatch.setattr(rnn, "_reverser", lambda index: lambda t: t.gather(
        1, index.view(*index.shape, *([1] * (t.dim() - 2))).expand_as(t)))
    want = enc(x, mask)
    assert torch.equal(got, want)
    for a, b in zip(grads, torch.autograd.grad(want, [x, *enc.parameters()], g)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_dropout_mask_is_the_scaled_comparison_of_the_same_draws(dtype):
    x = torch.randn(30, 7, 9, dtype=dtype, requires_grad=True)
    torch.manual_seed(3)
    y = Dropout(0.4).train()(x)
    torch.manual_seed(3)
    keep = (torch.rand(x.shape) >= 0.4).to(dtype).mul_(1 / 0.6)  # the scale in x's dtype
    want = x * keep
    assert y.dtype == dtype and torch.equal(y, want)
    (gx,) = torch.autograd.grad(y.sum(), x)
    assert torch.equal(gx, keep.expand_as(x))


@pytest.mark.parametrize("shape,high", [((250, 15), 85), ((40, 30), 300), ((7, 1), 2), ((5, 9), 1), ((0, 4), 3),
                                        ((60, 10), 2 ** 20)])
def test_unique_rows_equals_torch_unique_over_rows(shape, high):
    from ner_zoo.modules.char_encoders import unique_rows

    g = torch.Generator().manual_seed(shape[0])
    n, c = shape
    types = torch.randint(0, high, (max(1, n // 3), c), generator=g)
    x = types[torch.randint(0, len(types), (n,), generator=g)] if n else torch.zeros(0, c, dtype=torch.long)
    if n > 3:
        x[:3] = 0  # empty slots
    want = torch.unique(x, dim=0, return_inverse=True)
    got = unique_rows(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def cli_trainer(tmp_path, *extra):
    from ner_zoo.cli.lightning_cli import NERZooCLI

    data = tmp_path / "data.yaml"
    data.write_text("data:\n  class_path: ner_zoo.data.SampleCorpus\n"
                    "  init_args: {max_sentences: 20, embeddings: null}\n"
                    "model:\n  init_args: {words: {vectors: null}}\ntrainer: {logger: false}\n")
    config = Path(__file__).resolve().parents[1] / "configs" / "baselines" / "conll2003.yaml"
    args = ["--config", str(config), "--config", str(data), "--trainer.default_root_dir",
            str(tmp_path), *extra]
    return NERZooCLI(args=args, run=False).trainer


def test_cli_default_progress_bar_redraws_10_times_a_second_and_a_configured_one_keeps_its_rate(tmp_path):
    from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar

    bar = cli_trainer(tmp_path).progress_bar_callback
    assert type(bar) is RichProgressBar and bar.refresh_rate == 10  # Lightning's default: 100
    named = "--trainer.callbacks+=lightning.pytorch.callbacks."
    bar = cli_trainer(tmp_path, named + "RichProgressBar").progress_bar_callback
    assert type(bar) is RichProgressBar and bar.refresh_rate == 100  # named in the config: as configured
    assert type(cli_trainer(tmp_path, named + "TQDMProgressBar").progress_bar_callback) is TQDMProgressBar
    assert cli_trainer(tmp_path, "--trainer.enable_progress_bar", "false").progress_bar_callback is None
