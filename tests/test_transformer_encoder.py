"""TransformerEncoder: alignment, pooling against a naive loop, windows, context, autocast, parameter groups."""

from __future__ import annotations

import pytest
import torch

from ner_zoo.data.schema import Sentence
from ner_zoo.modules.transformer import DocumentContext, TransformerEncoder
from tiny_bert import MAX_POSITIONS, tiny_bert_dir  # noqa: F401  (session fixture)

TRICKY = [["Eva", "Novak", ",", "naïve", "\u200b", "Zürich-based", "zzzzzzzzzzzzzzzzzzzzzz", "."], ["x"],
          ["", "—", "(", "EU", ")", "3.5%"], ["\u200b", ""]]


@pytest.fixture(scope="module")
def encoders(tiny_bert_dir):  # noqa: F811
    made = {}

    def get(**kw):
        kw.setdefault("casing_dim", 0)  # the transformer's own states (casing: test_casing_embedding_*)
        key = tuple(sorted((k, str(v)) for k, v in kw.items()))
        if key not in made:
            torch.manual_seed(0)
            made[key] = TransformerEncoder(str(tiny_bert_dir), **kw).eval()
        return made[key]

    return get


def word_pieces(enc: TransformerEncoder, word: str) -> list[int]:
    """Sub-word ids of one word on its own: cap and fallback as documented."""
    ids = enc.tokenizer(word, add_special_tokens=False)["input_ids"][:enc.cap]
    return ids or [enc.unk_id]


def run_model(enc: TransformerEncoder, ids: list[int]) -> tuple[torch.Tensor, ...]:
    """All layers of ``[CLS] ids [SEP]`` for one unpadded sequence, specials stripped."""
    x = torch.tensor([enc.prefix + ids + enc.suffix])
    out = enc.model(input_ids=x, output_hidden_states=True)
    return tuple(h[0, len(enc.prefix):len(enc.prefix) + len(ids)] for h in out.hidden_states)


def naive_words(enc: TransformerEncoder, tokens: list[str], pooling: str) -> torch.Tensor:
    pieces = [word_pieces(enc, w) for w in tokens]
    states = run_model(enc, [i for p in pieces for i in p])[-1]
    out, at = [], 0
    for p in pieces:
        chunk = states[at:at + len(p)]
        at += len(p)
        out.append({"first": chunk[0], "mean": chunk.mean(0), "max": chunk.max(0).values}[pooling])
    return torch.stack(out)


@pytest.mark.parametrize("pooling", ["first", "mean", "max"])
@torch.no_grad()
def test_pooling_matches_naive_loop(encoders, pooling):
    enc = encoders(pooling=pooling, max_subwords_per_word=4)
    words, mask = enc(TRICKY)
    assert words.dtype == torch.float32
    assert mask.sum(1).tolist() == [len(s) for s in TRICKY]
    for b, tokens in enumerate(TRICKY):
        torch.testing.assert_close(words[b, :len(tokens)], naive_words(enc, tokens, pooling), atol=1e-5, rtol=1e-4)
        assert words[b, len(tokens):].abs().sum() == 0


@torch.no_grad()
def test_alignment_round_trip(encoders):
    enc = encoders(max_subwords_per_word=3)
    out = enc.encode(TRICKY)
    for b, tokens in enumerate(TRICKY):
        pieces = [word_pieces(enc, w) for w in tokens]
        lengths = [len(p) for p in pieces]
        assert all(n >= 1 for n in lengths)  # "\u200b" and "" keep a sub-word (UNK)
        n = sum(lengths)
        assert out.subword_mask[b].sum() == n
        expected = [w for w, k in enumerate(lengths) for _ in range(k)]
        assert out.word_ids[b, :n].tolist() == expected and (out.word_ids[b, n:] == -1).all()
        ends = torch.cumsum(torch.tensor(lengths), 0)
        assert out.word_end[b, :len(tokens)].tolist() == ends.tolist()
        assert out.word_start[b, :len(tokens)].tolist() == (ends - torch.tensor(lengths)).tolist()
    assert enc.tokenizer("\u200b", add_special_tokens=False)["input_ids"] == []  # the case the fallback covers


@torch.no_grad()
def test_hidden_states_at_subword_level(encoders):
    enc = encoders(output_hidden_states=True)
    out = enc.encode(TRICKY[:1])
    assert len(out.hidden_states) == enc.model.config.num_hidden_layers + 1
    torch.testing.assert_close(out.hidden_states[-1], out.subword_states)
    ids = [i for w in TRICKY[0] for i in word_pieces(enc, w)]
    for got, ref in zip(out.hidden_states, run_model(enc, ids)):
        torch.testing.assert_close(got[0], ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("layers, factor", [("last", 1), (0, 1), ([-1, -2], 2), ("mean_last4", 1), ("scalar_mix", 1)])
def test_layer_choices(encoders, layers, factor):
    enc = encoders(layers=layers)
    words, _ = enc(TRICKY)
    assert enc.output_dim == factor * enc.model.config.hidden_size == words.size(-1)
    words.sum().backward()  # scalar mix weights get gradients too
    if layers == "scalar_mix":
        assert enc.mix.weights.grad is not None


def long_sentence(enc: TransformerEncoder, n: int) -> list[str]:
    """``n`` words of exactly one sub-word each."""
    vocab = [w for w in enc.tokenizer.get_vocab() if w.isalpha() and len(w) > 2]
    return [vocab[i % len(vocab)] for i in range(n)]


@torch.no_grad()
def test_long_sentence_uses_most_central_window(encoders):
    enc = encoders(window_stride=20)
    tokens = long_sentence(enc, 150)
    words, mask = enc([tokens, ["x"]])
    assert mask[0].sum() == 150 and words.shape[:2] == (2, 150) and torch.isfinite(words).all()
    ids = [i for w in tokens for i in word_pieces(enc, w)]
    assert len(ids) == 150 > MAX_POSITIONS
    w = enc.budget
    starts = list(range(0, 150 - w, 20)) + [150 - w]
    windows = [run_model(enc, ids[s:s + w])[-1] for s in starts]
    for p in range(150):
        score = [min(p - s, s + w - 1 - p) if s <= p < s + w else -1 for s in starts]
        k = max(range(len(starts)), key=lambda i: (score[i], -i))
        torch.testing.assert_close(words[0, p], windows[k][p - starts[k]], atol=1e-5, rtol=1e-4)


@torch.no_grad()
def test_context_keeps_target_and_matches_concatenation(encoders):
    enc = encoders()
    target, left, right = ["Eva", "Novak", "works", "."], ["Rain", "delayed", "the", "match"], ["Blue", "Harbor"]
    words, mask = enc([target, ["x"]], left=[left, []], right=[right, ["y"]])
    plain, _ = enc([target, ["x"]])
    assert mask.sum(1).tolist() == [4, 1]
    assert not torch.allclose(words[0, :4], plain[0, :4])  # the context is seen
    ids = [i for w in left + target + right for i in word_pieces(enc, w)]
    states = run_model(enc, ids)[-1]
    torch.testing.assert_close(words[0, :4], states[len(left):len(left) + 4], atol=1e-5, rtol=1e-4)


@torch.no_grad()
def test_long_context_is_trimmed_symmetrically_target_never_cut(encoders):
    enc = encoders()
    assert enc._plan(torch.tensor([[100, 50, 100]])) == [(0, 94, 62)]  # 6 sub-words each side
    assert enc._plan(torch.tensor([[2, 50, 100]])) == [(0, 0, 62)]  # the unused left room goes right
    assert enc._plan(torch.tensor([[100, 70, 100]])) == [(0, 100, 62), (0, 108, 62)]  # windows, no context
    target = long_sentence(enc, 50)
    ctx = long_sentence(enc, 300)
    words, mask = enc([target, target + target], left=[ctx, ctx], right=[ctx, ctx])
    assert mask.sum(1).tolist() == [50, 100] and torch.isfinite(words).all()


@pytest.fixture(scope="module")
def cased_tiny_bert(tiny_bert_dir, tmp_path_factory):  # noqa: F811
    """The tiny BERT with a tokenizer that keeps case."""
    import shutil

    from transformers import BertTokenizerFast

    out = tmp_path_factory.mktemp("cased_tiny_bert")
    for f in tiny_bert_dir.iterdir():
        if f.name.startswith(("config", "model")):
            shutil.copy(f, out / f.name)
    BertTokenizerFast(vocab_file=str(tiny_bert_dir / "vocab.txt"), do_lower_case=False,
                      model_max_length=MAX_POSITIONS).save_pretrained(out)
    return out


@torch.no_grad()
def test_casing_embedding_on_for_uncased_encoders_only(tiny_bert_dir, cased_tiny_bert):  # noqa: F811
    """Review M5: an uncased encoder cannot tell "Apple" from "apple"; by default it gets a casing
    embedding (8-d) on every word state, a cased encoder does not."""
    from ner_zoo.modules.embeddings import casing_ids

    uncased, cased = TransformerEncoder(str(tiny_bert_dir)).eval(), TransformerEncoder(str(cased_tiny_bert)).eval()
    hidden = uncased.model.config.hidden_size
    assert (uncased.casing_dim, uncased.output_dim) == (8, hidden + 8)
    assert (cased.casing_dim, cased.output_dim, cased.casing) == (0, hidden, None)
    out = uncased.encode([["Apple", "apple", "EU"], ["x"]])
    assert out.word_states.shape[-1] == hidden + 8
    expected = uncased.casing(torch.tensor(casing_ids(["Apple", "apple", "EU"])))
    torch.testing.assert_close(out.word_states[0, :3, hidden:], expected)
    assert not torch.equal(out.word_states[0, 0], out.word_states[0, 1])  # same sub-words, other case
    first = out.word_start[0, :3]
    torch.testing.assert_close(out.subword_casing[0, first], expected)  # each sub-word gets its word's casing
    assert cased.encode([["Apple"]]).subword_casing is None


def test_document_context():
    doc = [Sentence(tokens=[f"s{i}"], doc_id="d1", index=i) for i in range(4)]
    other = Sentence(tokens=["o"], doc_id="d2", index=0)
    ctx = DocumentContext(doc + [other])
    left, right = ctx.get([doc[0], doc[2], other, Sentence(tokens=["n"])], k=2)
    assert left == [[], ["s0", "s1"], [], []]
    assert right == [["s1", "s2"], ["s3"], [], []]


def test_document_context_is_keyed_by_split():
    """A dev sentence with the same (doc_id, index) as a training sentence never becomes its context."""
    train = [Sentence(tokens=[f"t{i}"], doc_id="0", index=i, split="train") for i in range(3)]
    dev = [Sentence(tokens=[f"d{i}"], doc_id="0", index=i, split="dev") for i in range(3)]
    ctx = DocumentContext(train + dev)  # dev added last, as prepare() does at fit
    left, right = ctx.get([train[1], dev[1]], k=1)
    assert left == [["t0"], ["d0"]] and right == [["t2"], ["d2"]]


def test_bf16_autocast_forward_is_finite(encoders):
    enc = encoders(pooling="mean")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        words, mask = enc(TRICKY)
    assert words.dtype == torch.float32 and torch.isfinite(words[mask]).all()


def test_pretrained_parameters_are_flagged_and_freeze(encoders, tiny_bert_dir):  # noqa: F811
    enc = encoders(layers="scalar_mix")
    flagged = {id(p) for m in enc.modules() if getattr(m, "is_pretrained", False) for p in m.parameters()}
    assert flagged == {id(p) for p in enc.model.parameters()}
    assert not flagged & {id(p) for p in enc.mix.parameters()}
    fresh = TransformerEncoder(str(tiny_bert_dir))
    assert all(m.training for m in fresh.modules())  # fine-tuning gets the transformer's dropout
    frozen = TransformerEncoder(str(tiny_bert_dir), freeze=True, dropout=0.1)
    assert not any(p.requires_grad for p in frozen.model.parameters())
    assert not any(m.training for m in frozen.model.modules()) and frozen.dropout.training
    frozen.train()
    assert not frozen.model.training and frozen.training


def test_bad_arguments(tiny_bert_dir):  # noqa: F811
    with pytest.raises(ValueError, match="pooling"):
        TransformerEncoder(str(tiny_bert_dir), pooling="last")
    with pytest.raises(ValueError, match="window_stride"):
        TransformerEncoder(str(tiny_bert_dir), window_stride=1000)
    with pytest.raises(ValueError, match="layers"):
        TransformerEncoder(str(tiny_bert_dir), layers=[-1, 7])
    with pytest.raises(ValueError, match="empty sentence"):
        TransformerEncoder(str(tiny_bert_dir))([["a"], []])


def test_plm_dropout_sets_every_dropout_inside_the_pretrained_model(tiny_bert_dir):  # noqa: F811
    """``plm_dropout`` (BiaffineNER's and DSpERT's 0.2) reaches the hidden and attention dropout of the model;
    ``None`` keeps the model's own."""
    own = {m.p for m in TransformerEncoder(str(tiny_bert_dir)).model.modules() if isinstance(m, torch.nn.Dropout)}
    set_ = {m.p for m in TransformerEncoder(str(tiny_bert_dir), plm_dropout=0.3).model.modules()
            if isinstance(m, torch.nn.Dropout)}
    assert set_ == {0.3} and own and 0.3 not in own
