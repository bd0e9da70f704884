"""SpanTransformer (DSpERT's span encoder): batched per-size and packed outputs equal a naive per-span
computation written from the paper's equations; depth 0 is max-pooling; tied vs copied weights."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertModel

from ner_zoo.modules.span_transformer import SpanTransformer


def _bert(layers: int = 3) -> BertModel:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    return BertModel(config).eval()


def _hidden(model: BertModel, B: int = 2, S: int = 7) -> list[torch.Tensor]:
    torch.manual_seed(1)
    ids = torch.randint(5, 50, (B, S))
    return list(model(input_ids=ids, output_hidden_states=True).hidden_states)


def naive_span(model: BertModel, hidden: list[torch.Tensor], b: int, i: int, k: int, depth: int) -> torch.Tensor:
    """Eqs. 1-4 for one span ``[i, i + k)``, with explicit matrix products."""
    L = model.config.num_hidden_layers
    l0 = L - depth
    q = hidden[l0][b, i:i + k].max(0).values  # [D]
    for n in range(l0 + 1, L + 1):  # layer n reads the states of layer n - 1
        layer = model.encoder.layer[n - 1]
        att, h = layer.attention.self, model.config.num_attention_heads
        window = hidden[n - 1][b, i:i + k]  # keys/values: the span's tokens one layer below
        Q = att.query(q).view(h, -1)
        K, V = att.key(window).view(k, h, -1), att.value(window).view(k, h, -1)
        ctx = torch.stack([torch.softmax(K[:, j] @ Q[j] / Q.shape[1] ** 0.5, 0) @ V[:, j] for j in range(h)])
        o = layer.attention.output
        a = o.LayerNorm(o.dense(ctx.reshape(-1)) + q)
        f = layer.output
        q = f.LayerNorm(f.dense(layer.intermediate(a)) + a)
    return q


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("pack", [False, True])
def test_equals_naive_per_span(depth, pack):
    model = _bert()
    hidden = _hidden(model)
    span = SpanTransformer.from_pretrained(model, depth, pack=pack).eval()
    sizes = [2, 3, 5]
    with torch.no_grad():
        out = span(hidden, sizes)
        for k, o in zip(sizes, out):
            assert o.shape == (2, 7 - k + 1, 16)
            for b in range(2):
                for i in range(7 - k + 1):
                    torch.testing.assert_close(o[b, i], naive_span(model, hidden, b, i, k, depth),
                                               atol=1e-5, rtol=1e-5)
        ref = span.forward_per_span(hidden, sizes)
    for a, r in zip(out, ref):
        torch.testing.assert_close(a, r, atol=1e-5, rtol=1e-5)


def test_depth_zero_is_max_pool_and_too_long_sizes_are_empty():
    model = _bert()
    hidden = _hidden(model, S=4)
    span = SpanTransformer.from_pretrained(model, 0).eval()
    assert span.depth == 0 and span.start_layer == 3
    two, nine = span(hidden, [2, 9])
    torch.testing.assert_close(two, torch.maximum(hidden[-1][:, :-1], hidden[-1][:, 1:]))
    assert nine.shape == (2, 0, 16)


def test_copied_vs_tied_weights_and_checkpoint_gradients():
    model = _bert()
    copied = SpanTransformer.from_pretrained(model, 2)
    tied = SpanTransformer.from_pretrained(model, 2, tied=True)
    assert copied.is_pretrained and tied.layers[0] is model.encoder.layer[1]
    assert copied.layers[0] is not model.encoder.layer[1]
    torch.testing.assert_close(copied.layers[0].attention.self.query.weight,
                               model.encoder.layer[1].attention.self.query.weight)
    with pytest.raises(ValueError, match="depth"):
        SpanTransformer.from_pretrained(model, 4)
    hidden = [h.detach().requires_grad_() for h in _hidden(model)]
    grads = []
    for ckpt in (False, True):
        span = SpanTransformer.from_pretrained(model, 2, checkpoint=ckpt, pool_dropout=0.0).train()
        set_eval_dropout(span)
        sum(o.sum() for o in span(hidden, [2, 4])).backward()
        grads.append(span.layers[0].attention.self.key.weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1])


def set_eval_dropout(module):
    for m in module.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
