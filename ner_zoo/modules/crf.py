"""A batch-first linear-chain CRF: negative log-likelihood, posterior marginals and batched Viterbi.

Parametrisation (the same as pytorch-crf): ``start_transitions[T]``, ``transitions[T_from, T_to]`` and
``end_transitions[T]``; the score of tags ``y`` for emissions ``x`` is
``start[y_0] + sum_t x[t, y_t] + sum_t trans[y_{t-1}, y_t] + end[y_{n-1}]``.

How it is fast and exact:

* Padding becomes part of the chain. The tag set gets one extra absorbing *stop* state: a real tag
  ``i`` moves to it with score ``end[i]``, it stays in it with score 0, and padded positions can only
  be in it. Every row then runs the full length with no per-step masking, the gold path is scored by
  plain gathers, and Viterbi's backpointers carry the last real tag through the padding.
* The forward and backward recursions run in probability space, each step a matrix product, a product
  with the step's exponentiated emissions (made for all steps at once) and a division by the row's sum:
  ``p_t = (p_{t-1} @ exp(trans - colmax)) * exp(x_t + colmax - max) / sum``; the log-values are rebuilt
  after the loop in one ``log`` plus a cumulative sum of the logs of the scales. The gradient comes from
  the forward-backward algorithm (posterior marginals) in one custom autograd function instead of
  autograd through every step. When a value that matters falls out of float range (huge score gaps,
  e.g. together with forbidden moves), a check after the loop sees it and the pass is redone with
  exact log-sum-exp steps, so results never depend on underflow.
* Everything runs with autocast off in at least float32 (float64 input stays float64).

Forbidden transitions (``constraints``) score :data:`NEG`, whose exponential is exactly 0 in float32.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from ner_zoo.modules.precision import autocast_off, compute_dtype

NEG = -1e4  # score of a forbidden move; exp(NEG - anything realistic) == 0.0 in float32
_LOG_TINY = -80.0  # exp() below about -87 hits a slow underflow path on CPU; clamp where it is vectorised
_EXP_FLOOR = {torch.float32: -87.0, torch.float64: -708.0}  # exp() of this is still a normal float
_LOG_RANGE = {torch.float32: -67.0, torch.float64: -650.0}  # a recursion whose checked sum for a live
# cell falls below exp(this) is redone exactly: far enough above underflow (even flushed to zero) that the
# mass lost to it is below 2e-6 of the cell's (worst case, 18 tags; see _forward_alphas)
_PAIR_CHUNK = 1 << 22  # max elements of one pairwise-marginal block in the backward pass


def _exp(x: torch.Tensor) -> torch.Tensor:
    """``exp(x)``, exactly 0 below the smallest normal result (where the CPU's ``exp`` takes a slow path)."""
    floor = _EXP_FLOOR[x.dtype]
    return x.clamp_min(floor).exp_().masked_fill_(x < floor, 0.0)


def _log(p: torch.Tensor) -> torch.Tensor:
    """``log(p)`` for ``p >= 0``, ``-inf`` below the smallest normal ``p`` (avoids the slow path of ``log(0)``)."""
    tiny = math.exp(_EXP_FLOOR[p.dtype])
    return p.clamp_min(tiny).log_().masked_fill_(p < tiny, -math.inf)


def _forward_alphas(em: torch.Tensor, start: torch.Tensor, trans: torch.Tensor, end: torch.Tensor,
                    exact: bool = False):
    """Forward algorithm on full-length chains: ``alphas[L, B, S]`` from time-major ``em[L, B, S]``.

    Probability space, each row scaled to sum 1: ``q_t = (p_{t-1} @ X) * E_t`` and ``p_t = q_t / sum(q_t)``,
    with ``X = exp(trans - colmax)`` and ``E_t = exp(em_t + colmax - max)`` made for all ``t`` at once
    (``E_0`` holds the start scores instead), so a step is 4 ops (mm, mul, sum, div); afterwards
    ``alphas = log p + cumsum(max + log sum)``. A value below the float range becomes 0; that matters only
    where something later depends on it, which the check sees: a live cell (``em != NEG``, ``t >= 1``) whose
    transition sum ``R_t = p_{t-1} @ X``, in the units of the unscaled ``q_{t-1}`` (times its sum), is below
    ``exp(_LOG_RANGE)``, or a row whose end sum ``q_{L-1} @ exp(end - max)`` is. Then the whole pass is redone
    with ``exact`` log-sum-exp steps.
    """
    if exact:
        alphas = torch.empty_like(em)
        out, em_t = alphas.unbind(0), em.unbind(0)
        a = torch.add(start, em[0], out=out[0])
        for t in range(1, em.shape[0]):
            a = torch.logsumexp(a.unsqueeze(2) + trans, 1, out=out[t]).add_(em_t[t])
        return alphas
    cmax = trans.amax(0)
    x = _exp(trans - cmax)
    emc = em + cmax
    emc[0] = em[0] + start
    rowmax = emc.amax(2, keepdim=True)
    p = _exp(emc.sub_(rowmax))  # E_t, overwritten in place by p_t
    r, sums = torch.empty_like(em), torch.empty_like(rowmax)
    p_t, r_t, s_t = p.unbind(0), r.unbind(0), sums.unbind(0)
    torch.sum(p_t[0], 1, keepdim=True, out=s_t[0])
    p_t[0].div_(s_t[0])
    for t in range(1, em.shape[0]):
        torch.mm(p_t[t - 1], x, out=r_t[t])
        torch.sum(p_t[t].mul_(r_t[t]), 1, keepdim=True, out=s_t[t])
        p_t[t].div_(s_t[t])
    floor = math.exp(_LOG_RANGE[em.dtype])
    end_sum = (p[-1] * _exp(end - end.amax())).sum(1, keepdim=True) * sums[-1]
    if bool(((r[1:] * sums[:-1] < floor) & (em[1:] != NEG)).any() | (end_sum < floor).any()):
        return _forward_alphas(em, start, trans, end, exact=True)
    return _log(p).add_(sums.log_().add_(rowmax).cumsum(0))


def _backward_betas(em: torch.Tensor, start: torch.Tensor, trans: torch.Tensor, end: torch.Tensor,
                    exact: bool = False):
    """Backward algorithm: ``betas[t, b, i]`` = log-sum of the scores of all continuations after tag ``i``.

    Probability space like :func:`_forward_alphas`: ``R_{t-1} = (F_t * u_t) @ X'^T`` and ``u_{t-1} = R_{t-1} /
    sum(R_{t-1})``, with ``X' = exp(trans - rowmax)``, ``F_t = exp(em_t + rowmax - max)`` and ``u_t`` proportional
    to ``exp(beta_t - rowmax)``. Checked against ``exp(_LOG_RANGE)``: ``R`` at real tags of positions followed
    by a real position (at the last real position ``beta`` is just the end score), and each row's start sum
    ``exp(start + em_0 + rowmax - max) @ u_0``.
    """
    L, B, S = em.shape
    if exact:
        betas = torch.empty_like(em)
        out, em_t = betas.unbind(0), em.unbind(0)
        b = out[L - 1].copy_(end.expand(B, S))
        for t in range(L - 1, 0, -1):
            b = torch.logsumexp(trans + (em_t[t] + b).unsqueeze(1), 2, out=out[t - 1])
        return betas
    rmax = trans.amax(1)
    xt = _exp(trans - rmax.unsqueeze(1)).t()
    f = em + rmax
    f[0] = em[0] + start + rmax  # F_0 only weighs u_0 in the start check
    shift = f.amax(2, keepdim=True)
    f = _exp(f.sub_(shift))
    u, r, sums = torch.empty_like(em), torch.empty_like(em), torch.empty_like(shift)
    f_t, u_t, r_t, s_t = f.unbind(0), u.unbind(0), r.unbind(0), sums.unbind(0)
    last = end - rmax
    end_max = last.amax()
    r_t[L - 1].copy_(_exp(last - end_max).expand(B, S))
    torch.sum(r_t[L - 1], 1, keepdim=True, out=s_t[L - 1])
    torch.div(r_t[L - 1], s_t[L - 1], out=u_t[L - 1])
    for t in range(L - 1, 0, -1):
        torch.mm(f_t[t].mul_(u_t[t]), xt, out=r_t[t - 1])
        torch.sum(r_t[t - 1], 1, keepdim=True, out=s_t[t - 1])
        torch.div(r_t[t - 1], s_t[t - 1], out=u_t[t - 1])
    floor = math.exp(_LOG_RANGE[em.dtype])
    real_next = (em[1:, :, -1] == NEG).unsqueeze(2)  # the stop state is impossible at real positions
    if bool(((r[:-1, :, :-1] < floor) & real_next).any() | ((f[0] * u[0]).sum(1) < floor).any()):
        return _backward_betas(em, start, trans, end, exact=True)
    logs = sums.log_().add_(torch.cat([shift[1:], end_max.expand(1, B, 1)]))  # log of each step's scale
    return _log(u).add_(rmax).add_(logs.sum(0) - logs.cumsum(0) + logs)


def _backtrack(backptr: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """Tags at steps ``0..L-2`` from backpointers ``[L-1, B, S]`` (state at t+1 -> best state at t).

    Pointer doubling: after round k, ``maps[t]`` sends a state at ``min(t + 2^k, L-1)`` to its best
    predecessor at ``t``, so ``log2(L)`` gathers replace ``L`` sequential ones.
    """
    maps, n, k = backptr.clone(), backptr.shape[0], 1
    while k < n:
        maps[: n - k] = maps[: n - k].gather(2, maps[k:])
        k *= 2
    return maps.gather(2, last.view(1, -1, 1).expand(n, -1, 1)).squeeze(2)


class _LogPartition(torch.autograd.Function):
    """``log Z`` per chain; the backward pass returns posterior marginals (forward-backward)."""

    @staticmethod
    def forward(ctx, em, start, trans, end):  # type: ignore[override]
        alphas = _forward_alphas(em, start, trans, end)
        log_z = torch.logsumexp(alphas[-1] + end, 1)
        ctx.saved = (em, start, trans, end, alphas, log_z)
        return log_z

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):  # type: ignore[override]
        em, start, trans, end, alphas, log_z = ctx.saved
        betas = _backward_betas(em, start, trans, end)
        L, B, S = alphas.shape
        z = log_z.view(1, B, 1)
        mu = (alphas + betas - z).clamp_min_(_LOG_TINY).exp_()  # unary marginals
        grad_trans = torch.zeros_like(trans)
        right = em[1:] + betas[1:] - z  # [L-1, B, S]
        step = max(1, _PAIR_CHUNK // max(1, B * S * S))
        for t0 in range(0, L - 1, step):  # pairwise marginals, summed over time then weighted by g
            pair = alphas[:-1][t0:t0 + step].unsqueeze(3) + right[t0:t0 + step].unsqueeze(2)
            pair = pair.add_(trans).clamp_min_(_LOG_TINY).exp_().sum(0)
            grad_trans += (g @ pair.view(B, S * S)).view(S, S)
        return mu * g.view(1, B, 1), g @ mu[0], grad_trans, g @ mu[-1]


class LinearChainCRF(nn.Module):
    """Linear-chain CRF over ``num_tags`` tags, batch-first, with optional hard transition constraints.

    Args:
        num_tags: size of the tag set ``T``.
        constraints: optional ``(start[T], transitions[T_from, T_to], end[T])`` boolean masks of allowed
            moves, e.g. from :func:`ner_zoo.data.tagging.allowed_transitions`. Forbidden moves score
            :data:`NEG` in training and decoding, so decoding never produces an invalid sequence.
        init_range: parameters start uniform in ``[-init_range, init_range]``.
    """

    def __init__(self, num_tags: int, constraints: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
                 init_range: float = 0.1):
        super().__init__()
        if num_tags < 1:
            raise ValueError(f"num_tags must be positive, got {num_tags}")
        self.num_tags = num_tags
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-init_range, init_range))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-init_range, init_range))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-init_range, init_range))
        allowed: Sequence[torch.Tensor | None] = (None, None, None)
        if constraints is not None:
            start, trans, end = (torch.as_tensor(c, dtype=torch.bool) for c in constraints)
            if start.shape != (num_tags,) or end.shape != (num_tags,) or trans.shape != (num_tags, num_tags):
                raise ValueError(
                    f"constraints must be (start[{num_tags}], transitions[{num_tags}, {num_tags}], "
                    f"end[{num_tags}]) boolean masks; got shapes {tuple(start.shape)}, {tuple(trans.shape)}, "
                    f"{tuple(end.shape)}"
                )
            allowed = (start, trans, end)
        self.register_buffer("allowed_start", allowed[0])
        self.register_buffer("allowed_transitions", allowed[1])
        self.register_buffer("allowed_end", allowed[2])

    def extra_repr(self) -> str:
        return f"num_tags={self.num_tags}, constrained={self.allowed_transitions is not None}"

    # ----------------------------------------------------------------------------------------------
    def _check(self, emissions: torch.Tensor, mask: torch.Tensor | None, tags: torch.Tensor | None = None):
        if emissions.dim() != 3 or emissions.shape[2] != self.num_tags:
            raise ValueError(f"emissions must be [batch, length, {self.num_tags}], got {tuple(emissions.shape)}")
        B, L, T = emissions.shape
        if L == 0:
            raise ValueError("emissions have length 0; every sequence needs at least one token")
        if mask is None:
            mask = torch.ones(B, L, dtype=torch.bool, device=emissions.device)
        elif mask.shape != (B, L):
            raise ValueError(f"mask must be [batch, length] = {[B, L]}, got {list(mask.shape)}")
        mask = mask.bool()
        if tags is not None and tags.shape != (B, L):
            raise ValueError(f"tags must be [batch, length] = {[B, L]}, got {list(tags.shape)}")
        if B == 0:
            return mask
        checks = [~mask[:, 0].all(), (mask[:, 1:] & ~mask[:, :-1]).any()]
        if tags is not None:
            checks.append((((tags < 0) | (tags >= T)) & mask).any())
        bad = torch.stack(checks).tolist()  # one host sync for all checks
        if bad[0]:
            rows = (~mask[:, 0]).nonzero().flatten().tolist()
            raise ValueError(f"mask[:, 0] must be True (every sequence needs a first token); rows {rows[:10]} are not")
        if bad[1]:
            raise ValueError("mask must be left-aligned: True for the first n tokens of a row, False after")
        if len(bad) > 2 and bad[2]:
            raise ValueError(f"tags must lie in [0, {T}) at unmasked positions")
        return mask

    def _chain(self, emissions: torch.Tensor, mask: torch.Tensor):
        """Time-major emissions and scores over tags plus the stop state (index ``T``)."""
        dtype = compute_dtype(emissions.dtype)
        start, trans, end = (p.to(dtype) for p in (self.start_transitions, self.transitions, self.end_transitions))
        if self.allowed_transitions is not None:
            start = start.masked_fill(~self.allowed_start, NEG)
            trans = trans.masked_fill(~self.allowed_transitions, NEG)
            end = end.masked_fill(~self.allowed_end, NEG)
        T = self.num_tags
        one_neg = start.new_full((1,), NEG)
        zero = start.new_zeros(1)
        start_s = torch.cat([start, one_neg])
        end_s = torch.cat([end, zero])
        stop_row = torch.cat([start.new_full((1, T), NEG), zero.view(1, 1)], 1)
        trans_s = torch.cat([torch.cat([trans, end.unsqueeze(1)], 1), stop_row], 0)
        m = mask.t().unsqueeze(2)  # [L, B, 1]
        em = torch.where(m, emissions.transpose(0, 1).to(dtype), NEG)
        em_s = torch.cat([em, torch.where(m, NEG, 0.0).to(dtype)], 2)  # [L, B, T+1], contiguous
        return em_s, start_s, trans_s, end_s

    # ----------------------------------------------------------------------------------------------
    def score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Unnormalised score of the tag sequences ``tags`` (``[B, L]``; padded positions ignored), ``[B]``."""
        mask = self._check(emissions, mask, tags)
        with autocast_off(emissions):
            return self._score(*self._chain(emissions, mask), tags, mask)

    def _score(self, em_s, start_s, trans_s, end_s, tags, mask) -> torch.Tensor:
        S = self.num_tags + 1
        y = torch.where(mask, tags, self.num_tags).t()  # [L, B]; padding sits in the stop state
        total = em_s.gather(2, y.unsqueeze(2)).sum((0, 2)) + start_s[y[0]] + end_s[y[-1]]
        if y.shape[0] > 1:
            total = total + trans_s.view(-1).gather(0, (y[:-1] * S + y[1:]).reshape(-1)).view_as(y[1:]).sum(0)
        return total

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None,
            reduction: str = "sum") -> torch.Tensor:
        """Negative log-likelihood of ``tags``.

        Args:
            emissions: ``[B, L, T]`` scores (any float dtype; computed in at least float32).
            tags: ``[B, L]`` gold tag ids; values at padded positions are ignored.
            mask: ``[B, L]`` bool, True at real tokens, left-aligned with ``mask[:, 0]`` all True.
            reduction: ``"sum"`` over the batch, ``"mean"`` over sequences, ``"token_mean"`` over real
                tokens, or ``"none"`` for a ``[B]`` tensor.
        """
        if reduction not in ("sum", "mean", "none", "token_mean"):
            raise ValueError(f"reduction must be sum, mean, none or token_mean, got {reduction!r}")
        mask = self._check(emissions, mask, tags)
        with autocast_off(emissions):
            chain = self._chain(emissions, mask)
            nll = _LogPartition.apply(*chain) - self._score(*chain, tags, mask)
        if reduction == "sum":
            return nll.sum()
        if reduction == "mean":
            return nll.mean()
        if reduction == "token_mean":
            return nll.sum() / mask.sum().clamp_min(1)
        return nll

    forward = nll

    def marginals(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Posterior tag probabilities ``p(y_t = j | x)``, ``[B, L, T]``; rows sum to 1, padding is 0."""
        mask = self._check(emissions, mask)
        with torch.enable_grad(), autocast_off(emissions):
            em_s, start_s, trans_s, end_s = (x.detach().requires_grad_() for x in self._chain(emissions, mask))
            log_z = _LogPartition.apply(em_s, start_s, trans_s, end_s)
            (grad,) = torch.autograd.grad(log_z.sum(), em_s)
        return grad[:, :, : self.num_tags].transpose(0, 1) * mask.unsqueeze(2)

    @torch.no_grad()
    def viterbi(self, emissions: torch.Tensor, mask: torch.Tensor | None = None,
                pad_value: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Best tag sequences and their scores.

        Args:
            emissions: ``[B, L, T]`` scores.
            mask: ``[B, L]`` bool, True at real tokens, left-aligned with ``mask[:, 0]`` all True.
            pad_value: written at padded positions of the returned paths.

        Returns:
            ``(paths[B, L] long, scores[B])``.
        """
        mask = self._check(emissions, mask)
        with autocast_off(emissions):
            em_s, start_s, trans_s, end_s = self._chain(emissions, mask)
            L, B, S = em_s.shape
            backptr = torch.empty((L - 1, B, S), dtype=torch.long, device=em_s.device)
            bp, em_t = backptr.unbind(0), em_s.unbind(0)
            a = start_s + em_t[0]
            a_col, buf = a.unsqueeze(2), em_s.new_empty(B, S, S)
            for t in range(1, L):
                torch.add(a_col, trans_s, out=buf)
                torch.max(buf, 1, out=(a, bp[t - 1]))
                a.add_(em_t[t])
            scores, last = (a + end_s).max(1)
            path = torch.cat([_backtrack(backptr, last), last.unsqueeze(0)])  # [L, B]
        return path.t().masked_fill(~mask, pad_value), scores

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor | None = None, pad_value: int = 0) -> torch.Tensor:
        """Best tag ids, ``[B, L]`` long, ``pad_value`` at padded positions (see :meth:`viterbi`)."""
        return self.viterbi(emissions, mask, pad_value)[0]


def paths_to_lists(paths: torch.Tensor, mask_or_lengths: torch.Tensor) -> list[list[int]]:
    """``[B, L]`` paths -> one list of tag ids per row, cut to its length (a ``[B, L]`` mask or ``[B]`` lengths)."""
    lengths = mask_or_lengths.sum(1) if mask_or_lengths.dim() == 2 else mask_or_lengths
    return [row[:n] for row, n in zip(paths.tolist(), lengths.tolist())]
