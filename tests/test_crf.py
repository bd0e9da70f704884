"""LinearChainCRF against brute-force enumeration and against pytorch-crf."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from ner_zoo.data.tagging import allowed_transitions, is_valid, tag_names
from ner_zoo.modules.crf import NEG, LinearChainCRF, paths_to_lists


def _random_crf(T: int, seed: int, constraints=None, scale: float = 1.0) -> LinearChainCRF:
    torch.manual_seed(seed)
    crf = LinearChainCRF(T, constraints)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_(0, scale)
    return crf


def _random_batch(B: int, L: int, T: int, seed: int, dtype=torch.float64, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    em = (torch.randn(B, L, T, generator=g) * scale).to(dtype)
    lengths = torch.randint(1, L + 1, (B,), generator=g)
    lengths[0] = L
    mask = torch.arange(L) < lengths[:, None]
    tags = torch.randint(0, T, (B, L), generator=g)
    return em, tags, mask


def _path_scores(crf: LinearChainCRF, em_row: torch.Tensor, paths: torch.Tensor) -> torch.Tensor:
    """Scores of every path ``[N, n]`` for one sentence ``em_row[n, T]``, constraints as NEG, in float64."""
    start, trans, end = (p.detach().double() for p in (crf.start_transitions, crf.transitions, crf.end_transitions))
    if crf.allowed_transitions is not None:
        start = start.masked_fill(~crf.allowed_start, NEG)
        trans = trans.masked_fill(~crf.allowed_transitions, NEG)
        end = end.masked_fill(~crf.allowed_end, NEG)
    n = paths.shape[1]
    s = start[paths[:, 0]] + end[paths[:, -1]] + em_row.double()[torch.arange(n), paths].sum(1)
    if n > 1:
        s = s + trans[paths[:, :-1], paths[:, 1:]].sum(1)
    return s


def _all_paths(T: int, n: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product(range(T), repeat=n)))


def _brute(crf, em, tags, mask):
    """Per row: (nll, best path, best score, marginals[n, T]) by enumerating all T^n sequences."""
    T = em.shape[2]
    out = []
    for b in range(em.shape[0]):
        n = int(mask[b].sum())
        paths = _all_paths(T, n)
        scores = _path_scores(crf, em[b, :n], paths)
        log_z = torch.logsumexp(scores, 0)
        gold = _path_scores(crf, em[b, :n], tags[b, :n].unsqueeze(0))[0]
        probs = torch.exp(scores - log_z)
        marg = torch.zeros(n, T, dtype=torch.float64)
        for t in range(n):
            marg[t].index_add_(0, paths[:, t], probs)
        best = int(scores.argmax())
        out.append((float(log_z - gold), paths[best].tolist(), float(scores[best]), marg))
    return out


@pytest.mark.parametrize("T", [3, 4])
@pytest.mark.parametrize("L", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_nll_viterbi_marginals_match_brute_force(T, L, dtype):
    crf = _random_crf(T, seed=T * 10 + L)
    em, tags, mask = _random_batch(5, L, T, seed=L * 7 + T, dtype=dtype)
    want = _brute(crf, em, tags, mask)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    nll = crf.nll(em, tags, mask, reduction="none")
    assert nll.dtype == dtype
    torch.testing.assert_close(nll.double(), torch.tensor([w[0] for w in want], dtype=torch.float64), **tol)
    paths, scores = crf.viterbi(em, mask)
    assert paths_to_lists(paths, mask) == [w[1] for w in want]
    torch.testing.assert_close(scores.double(), torch.tensor([w[2] for w in want], dtype=torch.float64), **tol)
    assert (paths[~mask] == 0).all()
    marg = crf.marginals(em, mask)
    for b, w in enumerate(want):
        n = int(mask[b].sum())
        torch.testing.assert_close(marg[b, :n].double(), w[3], **tol)
        assert (marg[b, n:] == 0).all()


@pytest.mark.parametrize("scheme", ["iob2", "bioes"])
def test_constrained_nll_matches_brute_force(scheme):
    names = tag_names(["A"], scheme)  # 3 or 5 tags
    crf = _random_crf(len(names), seed=3, constraints=allowed_transitions(names, scheme))
    em, _, mask = _random_batch(4, 4, len(names), seed=5)
    tags = torch.tensor([[names.index(t) for t in seq] for seq in (["O", "O", "O", "O"],) * 4])
    want = _brute(crf, em, tags, mask)
    torch.testing.assert_close(crf.nll(em, tags, mask, reduction="none"),
                               torch.tensor([w[0] for w in want], dtype=torch.float64), rtol=1e-10, atol=1e-10)


def _torchcrf_twin(crf: LinearChainCRF):
    torchcrf = pytest.importorskip("torchcrf")
    twin = torchcrf.CRF(crf.num_tags, batch_first=True)
    with torch.no_grad():
        twin.start_transitions.copy_(crf.start_transitions)
        twin.end_transitions.copy_(crf.end_transitions)
        twin.transitions.copy_(crf.transitions)
    return twin


@pytest.mark.parametrize("reduction", ["sum", "mean", "none", "token_mean"])
def test_matches_torchcrf(reduction):
    crf = _random_crf(7, seed=11, scale=0.5)
    twin = _torchcrf_twin(crf)
    em, tags, mask = _random_batch(9, 13, 7, seed=2, dtype=torch.float32, scale=3.0)
    em_a = em.clone().requires_grad_()
    em_b = em.clone().requires_grad_()
    ours = crf.nll(em_a, tags, mask, reduction=reduction)
    theirs = -twin(em_b, tags, mask=mask, reduction=reduction)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    ours.sum().backward()
    theirs.sum().backward()
    torch.testing.assert_close(em_a.grad, em_b.grad, rtol=1e-5, atol=1e-5)
    for name in ("start_transitions", "end_transitions", "transitions"):
        torch.testing.assert_close(getattr(crf, name).grad, getattr(twin, name).grad, rtol=1e-5, atol=1e-5)
    assert paths_to_lists(crf.decode(em, mask), mask) == twin.decode(em, mask)


def test_gradcheck():
    crf = _random_crf(3, seed=1).double()
    em, tags, mask = _random_batch(3, 4, 3, seed=4)
    names = ("start_transitions", "transitions", "end_transitions")
    inputs = (em.requires_grad_(), *(getattr(crf, n).detach().clone().requires_grad_() for n in names))

    def f(em, *params):
        return torch.func.functional_call(crf, dict(zip(names, params)), (em, tags, mask), {"reduction": "none"})

    assert torch.autograd.gradcheck(f, inputs)


def test_gradient_flows_and_padding_is_ignored():
    crf = _random_crf(5, seed=0)
    em, tags, mask = _random_batch(6, 8, 5, seed=1, dtype=torch.float32)
    em.requires_grad_()
    loss = crf.nll(em, tags, mask, reduction="mean")
    loss.backward()
    assert torch.isfinite(em.grad).all() and (em.grad[~mask] == 0).all() and em.grad[mask].abs().sum() > 0
    for p in crf.parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0
    # garbage (even inf/nan) at padded positions changes nothing
    em2 = em.detach().clone()
    em2[~mask] = float("nan")
    tags2 = tags.masked_fill(~mask, -100)
    want = crf.nll(em.detach(), tags, mask, reduction="none")
    torch.testing.assert_close(crf.nll(em2, tags2, mask, reduction="none"), want)
    assert torch.equal(crf.decode(em2, mask), crf.decode(em.detach(), mask))


@pytest.mark.parametrize("scheme", ["iob2", "bioes"])
def test_constrained_decoding_is_always_valid(scheme):
    names = tag_names(["PER", "LOC", "ORG"], scheme)
    constrained = _random_crf(len(names), seed=2, constraints=allowed_transitions(names, scheme), scale=2.0)
    free = _random_crf(len(names), seed=2, scale=2.0)
    em, _, mask = _random_batch(64, 12, len(names), seed=9, dtype=torch.float32, scale=4.0)
    ok = [is_valid([names[i] for i in row], scheme) for row in paths_to_lists(constrained.decode(em, mask), mask)]
    assert all(ok)
    free_ok = [is_valid([names[i] for i in row], scheme) for row in paths_to_lists(free.decode(em, mask), mask)]
    assert not all(free_ok)  # the test has teeth: unconstrained decoding does produce invalid sequences


def test_constraints_and_state_dict_round_trip():
    names = tag_names(["PER", "LOC"], "bioes")
    crf = LinearChainCRF(len(names), allowed_transitions(names, "bioes"))
    assert crf.allowed_transitions is not None and "constrained=True" in repr(crf)
    copy = LinearChainCRF(len(names), allowed_transitions(names, "iob2"))
    copy.load_state_dict(crf.state_dict())
    assert torch.equal(copy.allowed_transitions, crf.allowed_transitions)
    assert LinearChainCRF(len(names)).allowed_transitions is None


def test_length_one_and_extreme_scores_are_finite():
    names = tag_names(["PER", "LOC"], "iob2")
    crf = _random_crf(len(names), seed=4, constraints=allowed_transitions(names, "iob2"))
    em, tags, mask = _random_batch(8, 1, len(names), seed=3, dtype=torch.float32)
    assert torch.isfinite(crf.nll(em, tags, mask, reduction="none")).all()
    assert crf.decode(em, mask).shape == (8, 1)
    # huge emissions (hundreds of nats apart) and gold paths that break the constraints
    em, tags, mask = _random_batch(8, 10, len(names), seed=3, dtype=torch.float32, scale=300.0)
    em.requires_grad_()
    nll = crf.nll(em, tags, mask, reduction="none")
    want = crf.nll(em.detach().double(), tags, mask, reduction="none")
    assert torch.isfinite(nll).all()
    torch.testing.assert_close(nll.double(), want, rtol=1e-5, atol=1e-2)
    nll.sum().backward()
    assert torch.isfinite(em.grad).all()


def test_bf16_autocast_runs_in_fp32():
    crf = _random_crf(9, seed=0)
    proj = torch.nn.Linear(16, 9)
    x = torch.randn(4, 11, 16)
    _, tags, mask = _random_batch(4, 11, 9, seed=0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        em = proj(x)
        assert em.dtype == torch.bfloat16
        nll = crf.nll(em, tags, mask)
        paths = crf.decode(em, mask)
    assert nll.dtype == torch.float32 and torch.isfinite(nll)
    nll.backward()
    assert torch.isfinite(proj.weight.grad).all() and torch.isfinite(crf.transitions.grad).all()
    assert paths.shape == (4, 11)


def test_bad_inputs_raise_clear_errors():
    crf = LinearChainCRF(4)
    em = torch.randn(2, 3, 4)
    tags = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"mask\[:, 0\] must be True"):
        crf.nll(em, tags, torch.tensor([[True, True, False], [False, False, False]]))
    with pytest.raises(ValueError, match="left-aligned"):
        crf.decode(em, torch.tensor([[True, False, True], [True, True, True]]))
    with pytest.raises(ValueError, match=r"tags must lie in \[0, 4\)"):
        crf.nll(em, tags + 4)
    with pytest.raises(ValueError, match="emissions must be"):
        crf.decode(torch.randn(2, 3, 5))
    with pytest.raises(ValueError, match="reduction"):
        crf.nll(em, tags, reduction="avg")
    with pytest.raises(ValueError, match="constraints must be"):
        LinearChainCRF(4, (torch.ones(4, dtype=torch.bool), torch.ones(3, 3, dtype=torch.bool), torch.ones(4) > 0))


def _lossy_chain(case: str):
    """A float32 chain (time-major, with the stop state) on which a probability-space pass loses a cell that
    matters: an emission 100 nats below the row's best underflows to 0 (float32 keeps about 87)."""
    names = ["a", "b"]
    allowed = torch.ones(2, 2, dtype=torch.bool)
    start, end = torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=torch.bool)
    if case == "transition":  # b is only reachable from b; b at position 0 is lost, b at position 1 wins
        allowed[0, 1] = False
        em = [[0.0, -100.0], [-200.0, 0.0], [0.0, 0.0]]
    elif case == "end":  # only a may end; a at the last position is lost
        end[1] = False
        em = [[0.0, 0.0], [0.0, 0.0], [-100.0, 0.0]]
    elif case == "backward":  # a's only successor b is lost at position 1, so beta(a) at position 0 is lost
        allowed[0, 0] = False
        em = [[50.0, 0.0], [0.0, -100.0], [0.0, 0.0]]
    else:  # "start", one position: b's end score is lost in the backward pass, its emission makes up for it
        em = [[-100.0, 0.0]]
    crf = LinearChainCRF(len(names), (start, allowed, end), init_range=0.0)
    with torch.no_grad():
        crf.end_transitions[1] = -100.0 if case == "start" else 0.0
        return crf._chain(torch.tensor([em]), torch.ones(1, len(em), dtype=torch.bool))


@pytest.mark.parametrize("case", ["transition", "end", "backward", "start"])
def test_probability_space_passes_redo_exactly_where_a_cell_is_lost(case, monkeypatch):
    from ner_zoo.modules import crf as crf_module

    em, start, trans, end = _lossy_chain(case)
    want_a = crf_module._forward_alphas(em, start, trans, end, exact=True)
    want_b = crf_module._backward_betas(em, start, trans, end, exact=True)
    live = (want_a > NEG / 2) & (want_b > NEG / 2)  # cells on some allowed path

    def errors():
        got_a = crf_module._forward_alphas(em, start, trans, end)
        got_b = crf_module._backward_betas(em, start, trans, end)
        log_z = torch.logsumexp(got_a[-1] + end, 1)
        return ((got_a - want_a)[live].abs().max().item(), (got_b - want_b)[live].abs().max().item(),
                abs(log_z.item() - torch.logsumexp(want_a[-1] + end, 1).item()))

    assert max(errors()) < 1e-3
    monkeypatch.setitem(crf_module._LOG_RANGE, torch.float32, -math.inf)  # the checks never fire
    assert not max(errors()) < 1e-3  # the test has teeth: without its check the pass loses the cell
