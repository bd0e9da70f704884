"""Paired statistics for ``ner-zoo compare``: Student's t quantile, the paired-t confidence interval of a mean
difference, the paired bootstrap over test sentences, and the reproduction verdict (no scipy).

The two-sided t probability for integer degrees of freedom uses the closed forms of Abramowitz & Stegun
26.7.3 (odd df) and 26.7.4 (even df); the quantile inverts it by bisection.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np


def t_central_probability(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` (>= 1, integer) degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 c^2 + 2*4/(3*5) c^4 + ... up to c^(df-3)))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0  # even: sin (1 + 1/2 c^2 + 1*3/(2*4) c^4 + ... up to c^(df-2))
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``p`` in (0.5, 1)) of Student's t with ``df`` degrees of freedom."""
    target = 2 * p - 1  # P(|T| <= q) for the upper quantile q
    lo, hi = 0.0, 1.0
    while t_central_probability(hi, df) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_central_probability(mid, df) < target else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class PairedCI:
    n: int
    mean: float  # mean of the per-pair differences
    std: float  # their sample standard deviation (0 for one pair)
    low: float  # 95 % (or ``level``) confidence interval of the mean difference; nan for fewer than 2 pairs
    high: float


def paired_ci(model: Sequence[float], baseline: Sequence[float], level: float = 0.95) -> PairedCI:
    """Paired-t confidence interval of ``mean(model - baseline)`` (``model[i]`` and ``baseline[i]`` share a seed)."""
    if len(model) != len(baseline) or not model:
        raise ValueError("paired_ci needs two equally long, non-empty sequences")
    diffs = [m - b for m, b in zip(model, baseline)]
    n, mean = len(diffs), statistics.fmean(diffs)
    if n < 2:
        return PairedCI(n, mean, 0.0, math.nan, math.nan)
    std = statistics.stdev(diffs)
    half = t_quantile((1 + level) / 2, n - 1) * std / math.sqrt(n)
    return PairedCI(n, mean, std, mean - half, mean + half)


def micro_f1(counts: np.ndarray) -> np.ndarray:
    """F1 ``= 2 tp / (2 tp + fp + fn)`` (0 when nothing was predicted or expected) of ``counts [..., 3]``."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.maximum(den, 1), 0.0)


def bootstrap_differences(model: Sequence, baseline: Sequence, weights: np.ndarray) -> np.ndarray:
    """Per resample, the mean over seed pairs of ``F1(model run) - F1(baseline run)`` on the resampled sentences.

    Args:
        model, baseline: per seed pair, the runs' per-sentence ``(tp, fp, fn)`` (``[pairs][sentences][3]``).
        weights: ``[resamples, sentences]``, how often each sentence is drawn in each resample.
    """
    m, b = np.asarray(model, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if m.shape != b.shape or m.ndim != 3 or m.shape[1] != weights.shape[1]:
        raise ValueError(f"per-sentence counts must be [pairs, sentences, 3] for both arms and match the weights; "
                         f"got {m.shape}, {b.shape}, weights {weights.shape}")
    w = weights.astype(np.float64)
    fm = micro_f1(np.einsum("rs,psc->prc", w, m))  # [pairs, resamples]
    fb = micro_f1(np.einsum("rs,psc->prc", w, b))
    return (fm - fb).mean(0)


def paired_bootstrap(model: Sequence, baseline: Sequence, resamples: int = 1000, level: float = 0.95,
                     seed: int = 0, weights: np.ndarray | None = None) -> tuple[float, float]:
    """Percentile ``level`` interval (linear interpolation between order statistics) of the mean F1 difference
    under resampling the test sentences with replacement; every resample draws the same sentences for both
    arms and every seed pair (the pairing). ``weights``: given resamples instead of ``resamples`` random ones."""
    if weights is None:
        n = len(model[0])
        weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=resamples)
    diffs = bootstrap_differences(model, baseline, weights)
    alpha = (1 - level) / 2
    return float(np.quantile(diffs, alpha)), float(np.quantile(diffs, 1 - alpha))


def t_p_value(ci: PairedCI) -> float:
    """Two-sided paired-t p-value of ``mean difference = 0`` (nan below 2 pairs; 0 when every pair agrees)."""
    if ci.n < 2:
        return math.nan
    if ci.std == 0:
        return 0.0 if ci.mean else 1.0
    return 1.0 - t_central_probability(ci.mean / (ci.std / math.sqrt(ci.n)), ci.n - 1)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the input order: the ``i``-th smallest of
    ``m`` p-values becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


#: the words of a verdict; ``VERDICT_RULE`` states how they are chosen
SIGN_WORDS = ("same sign", "opposite sign", "sign unresolved")
MAGNITUDE_WORDS = ("consistent with the paper's gain", "smaller than the paper's", "larger than the paper's")
VERDICT_RULE = (
    "**Verdict rule.** *Sign*: the paired-t 95 % CI over seeds excludes 0 (*same sign* as the paper's gain or "
    "*opposite sign*), or not (*sign unresolved*). *Magnitude*: the paper's gain lies inside our CI "
    "(*consistent with the paper's gain*), above it (*smaller than the paper's*: our CI lies entirely below the "
    "paper's gain) or below it (*larger than the paper's*). *Stage*: the epochs both arms trained against the "
    "paper's schedule (`paper_results.yaml`, `epochs`, with its source), e.g. *at 1/35 epochs*; papers that "
    "train to convergence without an epoch count (early stopping, or none stated) are matched by arms "
    "stopped early on dev, or by a fixed budget at which both arms have plateaued (the plateau rule under "
    "*Training curves*). A row is *reproduced* only when the sign is the same, the magnitude consistent and "
    "the arms trained the paper's schedule; *contradicted* when the sign is opposite at the paper's schedule; "
    "otherwise the words say what holds (\"same sign at 1/35 epochs; smaller than the paper's\"). Rows without a "
    "paper number give the sign only (*gain*, *loss*, *inconclusive*). Fewer seeds than the protocol's are "
    "flagged. The bootstrap interval over test sentences is shown beside the t interval but does not enter the "
    "verdict. `p`: two-sided paired-t p-value against 0; `Holm p`: Holm-adjusted over the family of rows that "
    "test a paper gain with the protocol's seeds (the family size is stated below the table).")


@dataclass(frozen=True)
class Stage:
    """How far both arms trained against the paper's schedule.

    ``ours``: epochs trained (a number) or ``"early stopping"``; ``paper``: the paper's epoch count, or
    ``"early stopping"`` / None (trained to convergence, no count stated); ``plateaued``: both arms' dev curves
    passed the plateau check at ``ours`` epochs (:mod:`ner_zoo.results.curves`), which matches a paper that
    trained to convergence."""
    ours: float | str | None
    paper: int | str | None
    plateaued: bool = False

    @property
    def to_convergence(self) -> bool:
        return self.paper is None or self.paper == "early stopping"

    @property
    def at_schedule(self) -> bool:
        if self.to_convergence:
            return self.ours == "early stopping" or (isinstance(self.ours, (int, float)) and self.plateaued)
        return isinstance(self.ours, (int, float)) and self.ours >= self.paper

    def words(self) -> str:
        if self.at_schedule and self.to_convergence and self.ours != "early stopping":
            return f"at {_num(self.ours)} epochs, both arms plateaued (paper: to convergence)"
        if self.at_schedule:
            return "at the paper's schedule"
        if self.ours is None:
            return "at epochs that differ between seeds"
        ours = "early stopping" if self.ours == "early stopping" else f"{_num(self.ours)}"
        if isinstance(self.paper, int):
            return f"at {ours}/{self.paper} epochs" if ours != "early stopping" else \
                f"with early stopping (paper: {self.paper} epochs)"
        paper = "early stopping" if self.paper == "early stopping" else "to convergence"
        return f"at {ours} epochs (paper: {paper})"


def _num(x) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def verdict(ci: PairedCI, paper_gain: float | None, min_seeds: int, stage: Stage | None = None) -> str:
    """The verdict words of one paired row (:data:`VERDICT_RULE`): sign, magnitude against the paper's gain and
    stage against the paper's schedule; ``too few seeds`` is added below ``min_seeds`` pairs. Without a paper
    gain: the sign only (*gain*, *loss*, *inconclusive*). ``paper_gain`` is in the CI's units (F1 fractions)."""
    flag = f" (too few seeds: {ci.n} < {min_seeds})" if ci.n < min_seeds else ""
    if math.isnan(ci.low):
        return "inconclusive" + flag
    excludes = ci.low > 0 or ci.high < 0
    sign = 0 if not excludes else (1 if ci.low > 0 else -1)
    if paper_gain is None or paper_gain == 0:
        return ("inconclusive" if not sign else "gain" if sign > 0 else "loss") + flag
    stage = stage or Stage(None, None)
    if ci.high < paper_gain:
        magnitude = MAGNITUDE_WORDS[1]
    elif ci.low > paper_gain:
        magnitude = MAGNITUDE_WORDS[2]
    else:
        magnitude = MAGNITUDE_WORDS[0]
    same = sign * paper_gain > 0
    if stage.at_schedule and same and magnitude == MAGNITUDE_WORDS[0]:
        return "reproduced" + flag
    if stage.at_schedule and sign and not same:
        return f"contradicted; {magnitude}" + flag
    words = SIGN_WORDS[2] if not sign else SIGN_WORDS[0] if same else SIGN_WORDS[1]
    return f"{words} {stage.words()}; {magnitude}" + flag
