"""PSA (Wei et al. 2021): model battery on NER and on POS tagging, attention and fusion-gate unit tests,
and the paper's configs (main, ablations, same-recipe baselines) parsed through the CLI."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import torch
import yaml

from battery import SAMPLE_DATA, ModelBattery, build
from ner_zoo.testing.tiny import tiny_model
from ner_zoo.models.psa import PSA, ContextFusion, PositionAwareSelfAttention, relative_index
from ner_zoo.modules.embeddings import Words

ROOT = Path(__file__).resolve().parents[1]
TINY_MODEL = tiny_model("psa")
TINY = TINY_MODEL["init_args"]


class TestPSA(ModelBattery):
    model = TINY_MODEL


def test_gate_and_position_weights_logged_and_recorded(tmp_path):
    import json

    cli = build(copy.deepcopy(TINY_MODEL), copy.deepcopy(SAMPLE_DATA), tmp_path, trainer={"max_epochs": 1},
                subcommand="fit")
    logged = cli.trainer.callback_metrics
    for layer in ("input", "output"):
        alphas = [float(logged[f"val/psa/{layer}/alpha_{k}"]) for k in ("mask", "position", "gaussian")]
        assert sum(alphas) == pytest.approx(1.0) and 0 < float(logged[f"val/psa/{layer}/gate"]) < 1
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)
    record = json.loads(next(tmp_path.rglob("results.json")).read_text())
    assert 0 < record["test"]["psa/output/gate"] < 1 and "psa/input/alpha_position" in record["test"]


# --- POS tagging through the same CLI, on a tiny synthetic treebank --------------------------------------
LEXICON = {"DT": ["the", "a", "this"], "NN": ["dog", "report", "market", "plan"], "VBZ": ["runs", "says", "rises"],
           "JJ": ["big", "new", "old"], "NNP": ["Ada", "Boston", "Acme"], "RB": ["quickly", "sharply"]}


def write_tiny_treebank(root: Path, files: int = 10, per_file: int = 4) -> None:
    """Synthetic PTB ``wsj_00NN.mrg`` files (our own words; every tag occurs in every file)."""
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        trees = []
        for _ in range(per_file):
            leaf = lambda tag: f"({tag} {rng.choice(LEXICON[tag])})"  # noqa: E731
            subj = f"(NP-SBJ {leaf('DT')} {leaf('JJ')} {leaf('NN')})"
            trees.append(f"( (S {subj} (NP {leaf('NNP')}) (VP {leaf('VBZ')} (ADVP {leaf('RB')}) "
                         f"(SBAR (-NONE- 0))) (. .) ))")
        (root / f"wsj_00{f + 1:02d}.mrg").write_text("\n".join(trees) + "\n")


class TestPSAPos(ModelBattery):
    model = TINY_MODEL
    test_print_config = None  # same model as TestPSA; the data module's config is not PSA's concern

    @pytest.fixture(autouse=True)
    def _treebank(self, tmp_path_factory):
        root = tmp_path_factory.getbasetemp() / "psa_tiny_wsj"
        if not root.exists():
            write_tiny_treebank(root)
        self.data = {"class_path": "ner_zoo.data.WSJPOS", "init_args": {"data_dir": str(root), "batch_size": 4}}


# --- attention unit tests -----------------------------------------------------------------------------------
def _mask(lengths: list[int]) -> torch.Tensor:
    n = max(lengths)
    return torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]


def test_never_attends_to_padding_or_itself():
    torch.manual_seed(0)
    att = PositionAwareSelfAttention(8, window=3)
    mask = _mask([5, 3, 1])
    x = torch.randn(3, 5, 8)
    s, probs, has_key = att(x, mask)
    assert (probs.masked_select(~mask[:, None, :].expand_as(probs)) == 0).all()      # padding keys
    assert (torch.diagonal(probs, dim1=1, dim2=2) == 0).all()                         # M: no self
    assert torch.equal(has_key, mask & (mask.sum(1, keepdim=True) > 1))
    sums = probs.sum(-1)
    torch.testing.assert_close(sums[has_key], torch.ones(int(has_key.sum())))
    assert (sums[~has_key] == 0).all() and (s[~has_key] == 0).all()
    # garbage in the padding changes nothing on real tokens
    x2 = x.clone()
    x2[~mask] = 1e4
    s2, _, _ = att(x2, mask)
    torch.testing.assert_close(s2[mask], s[mask])


def test_without_self_mask_a_token_attends_to_itself():
    att = PositionAwareSelfAttention(4, window=3, self_mask=False)
    _, probs, has_key = att(torch.randn(1, 4, 4), _mask([4]))
    assert (torch.diagonal(probs, dim1=1, dim2=2) > 0).all() and has_key.all()


def test_relative_index_is_clipped():
    idx = relative_index(6, 2)
    for i in range(6):
        for j in range(6):
            assert idx[i, j] == max(-2, min(2, i - j)) + 2


def test_token_bias_uses_clipped_relative_distance():
    """With the additive score zeroed and only P on, log a_ij - log a_ik = P_ij - P_ik = x_i . (W3[c_ij] - W3[c_ik])."""
    r, n = 2, 8
    att = PositionAwareSelfAttention(1, window=r, self_mask=False, gaussian_bias=False, alphas=[0.0, 1.0, 0.0])
    with torch.no_grad():
        att.score.weight.zero_()
        att.position.copy_(torch.arange(2 * r + 1, dtype=torch.float32)[:, None] * 0.5)  # W3[c] = c / 2
    x = torch.full((1, n, 1), 2.0)                                                       # x_i . W3[c] = c
    _, probs, _ = att(x, _mask([n]))
    logp = probs[0].log()
    expected = relative_index(n, r).float()
    torch.testing.assert_close(logp - logp[:, :1], expected - expected[:, :1])


def test_gaussian_bias_peaks_at_distance_one():
    n = 9
    att = PositionAwareSelfAttention(4, window=4, token_bias=False)  # learned alphas, M and G on
    with torch.no_grad():
        att.score.weight.zero_()
    _, probs, _ = att(torch.randn(1, n, 4), _mask([n]))
    p = probs[0]
    for i in range(n):
        best = p[i].argmax().item()
        assert abs(best - i) == 1
        row = [p[i, j].item() for j in range(n) if j != i]
        dist = [abs(j - i) for j in range(n) if j != i]
        for (d1, p1), (d2, p2) in zip(sorted(zip(dist, row)), sorted(zip(dist, row))[1:]):
            assert d1 == d2 or p1 > p2  # strictly decreasing with distance
    torch.testing.assert_close(p[4, 3], p[4, 5])  # symmetric


def test_alphas_sum_to_one_over_enabled_factors():
    assert torch.allclose(PositionAwareSelfAttention(4).alphas().sum(), torch.tensor(1.0))
    a = PositionAwareSelfAttention(4, self_mask=False).alphas()
    assert a[0] == 0 and torch.allclose(a.sum(), torch.tensor(1.0))
    with pytest.raises(ValueError):
        PositionAwareSelfAttention(4, alphas=[0.5, 0.5])


def test_gate_stays_in_open_interval_and_padding_is_zero():
    torch.manual_seed(1)
    layer = ContextFusion(16, window=3).eval()
    mask = _mask([6, 2, 1])
    x = torch.randn(3, 6, 16) * 3
    out, probs, gate = layer.fuse(x, mask)
    assert ((gate > 0) & (gate < 1)).all()
    assert (out[~mask] == 0).all()
    # out is a convex mix of x and the context s~ (in (-1, 1)), elementwise
    lo, hi = torch.minimum(x, torch.full_like(x, -1)), torch.maximum(x, torch.ones_like(x))
    assert ((out[mask] >= lo[mask] - 1e-6) & (out[mask] <= hi[mask] + 1e-6)).all()


def test_one_token_sentence_gets_zero_context_fp32_and_bf16():
    torch.manual_seed(2)
    layer = ContextFusion(8, window=3)
    mask = _mask([1, 4])
    x = torch.randn(2, 4, 8, requires_grad=True)
    for autocast in (False, True):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out, probs, gate = layer.fuse(x, mask)
        assert torch.isfinite(out).all() and torch.isfinite(probs).all()
        torch.testing.assert_close(out[0, 0].float(), (gate[0, 0] * x[0, 0]).float())  # lambda * x, s~ = 0
        out.float().sum().backward()
        assert torch.isfinite(x.grad).all()
        assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)
        x.grad = None
        layer.zero_grad()


# --- the model -----------------------------------------------------------------------------------------------
def _tiny_psa(vocabs: dict, **kw) -> PSA:
    from ner_zoo.modules import CharBiLSTM

    return PSA(vocabs=vocabs, words=Words(dim=16), lstm_hidden=12, window=3, char_encoder=lambda n: CharBiLSTM(n, 8, 6), **kw)


@pytest.fixture(scope="module")
def sample():
    from ner_zoo.data.corpora import SampleCorpus

    dm = SampleCorpus(max_sentences=12)
    sents = dm.sentences("train")[:6]
    sents = [sents[0].__class__(sents[0].tokens[:1], [], {}, "d", 0, "x:1")] + sents[1:]  # one 1-token sentence
    batch = dm.vocabularies.collator()(list(enumerate(sents)))
    return dm.vocabs, batch


def test_gradients_reach_w3_and_alphas(sample):
    vocabs, batch = sample
    model = _tiny_psa(vocabs)
    loss = model.compute_loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    for layer in (model.fusion_input, model.fusion_output):
        assert layer.attention.position.grad.abs().sum() > 0
        assert layer.attention.alpha_logits.grad.abs().sum() > 0


def test_one_token_sentence_in_model_bf16(sample):
    vocabs, batch = sample
    assert batch.mask.sum(1).min() == 1
    model = _tiny_psa(vocabs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model.compute_loss(batch)
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    model.eval()
    assert len(model.decode(batch)[0]) <= 1


def test_no_fusion_equals_bilstm_crf(sample):
    from ner_zoo.models import BiLSTMCRF
    from ner_zoo.modules import CharBiLSTM

    vocabs, batch = sample
    torch.manual_seed(3)
    psa = _tiny_psa(vocabs, fuse_input=False, fuse_output=False).eval()
    torch.manual_seed(3)
    base = BiLSTMCRF(vocabs=vocabs, words=Words(dim=16), lstm_hidden=12, char_encoder=lambda n: CharBiLSTM(n, 8, 6)).eval()
    assert sum(p.numel() for p in psa.parameters()) == sum(p.numel() for p in base.parameters())
    with torch.no_grad():
        torch.testing.assert_close(psa.emissions(batch), base.emissions(batch))


def test_switches(sample):
    vocabs, batch = sample
    model = _tiny_psa(vocabs, token_bias=False, gaussian_bias=False, absolute_position=True, fuse_output=False)
    assert model.fusion_output is None and model.fusion_input.attention.position is None
    assert model.emissions(batch).shape == (*batch.mask.shape, model.num_tags)


# --- configs ---------------------------------------------------------------------------------------------------
CONFIGS = sorted((ROOT / "configs" / "psa").glob("*.yaml")) + [
    ROOT / "configs" / "baselines" / f"{t}.yaml" for t in ("wsj_pos", "conll2000")]
ABLATIONS = sorted((ROOT / "configs" / "psa" / "ablations").glob("*.yaml"))


def _config_model(path: Path, *overrides: Path) -> dict:
    model = yaml.safe_load(path.read_text())["model"]
    for extra in overrides:
        model["init_args"].update(yaml.safe_load(extra.read_text())["model"]["init_args"])
    model["init_args"]["words"] = {**model["init_args"].get("words", {}), "vectors": None}  # no GloVe in unit tests
    return model


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_config_builds(path, tmp_path):
    cli = build(_config_model(path), copy.deepcopy(SAMPLE_DATA), tmp_path)
    assert type(cli.model).__name__ in ("PSA", "BiLSTMCRF")
    assert cli.model.lstm.output_dim == 300


@pytest.mark.parametrize("path", ABLATIONS, ids=lambda p: p.stem)
def test_ablation_builds(path, tmp_path):
    cli = build(_config_model(ROOT / "configs" / "psa" / "conll2003.yaml", path), copy.deepcopy(SAMPLE_DATA), tmp_path)
    ablation = yaml.safe_load(path.read_text())
    for key, value in ablation["model"]["init_args"].items():
        assert cli.model.hparams[key] == value
    assert ablation["variant"] == path.stem and "logger" not in ablation.get("trainer", {})  # the CLI names runs
