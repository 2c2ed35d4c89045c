"""Point estimates with 95% bootstrap intervals that resample problems."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

BOOTSTRAP_SAMPLES = 1000


def warm_estimates(problems: int = 0) -> None:
    """Pay now what the first intervals would: NumPy imports ``numpy.ma`` on its first
    percentile (about 12 ms), and the resamples of a group of ``problems`` problems are
    drawn once (about 50 ms for 1,024).  A run calls this while its requests wait."""
    np.percentile(np.zeros(2), [2.5, 97.5])
    if problems >= 2:
        _resample_weights(problems, BOOTSTRAP_SAMPLES, 0)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95% bootstrap interval (NaN when undefined)."""

    value: float
    low: float = math.nan
    high: float = math.nan
    n: int = 0

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}

    def __str__(self) -> str:
        if math.isnan(self.value):
            return "n/a"
        if math.isnan(self.low):
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def mean(values: Sequence[float]) -> float:
    """The mean, NaN for no values."""
    return float(np.mean(values)) if len(values) else math.nan


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean of the defined values and its standard error (sample SD / √n); NaN where
    undefined (no values, or one for the SE)."""
    values = [v for v in values if not math.isnan(v)]
    if len(values) < 2:
        return (float(values[0]) if values else math.nan), math.nan
    return float(np.mean(values)), float(np.std(values, ddof=1) / math.sqrt(len(values)))


@functools.lru_cache(maxsize=4)
def _resample_indices(n: int, samples: int, seed: int) -> np.ndarray:
    """(samples, n): the problems (by sorted position) each bootstrap resample draws.

    One array per (n, samples, seed): every statistic of every group of n
    problems resamples the same problems, as when each drew from a fresh
    generator with ``seed``.
    """
    indices = np.random.default_rng(seed).integers(0, n, (samples, n))
    indices.flags.writeable = False
    return indices


@functools.lru_cache(maxsize=4)
def _resample_weights(n: int, samples: int, seed: int) -> np.ndarray:
    """(1 + samples, n): row 0 counts every problem once (the point estimate), row
    1 + i how often resample i drew each problem."""
    picked = _resample_indices(n, samples, seed) + n * np.arange(samples)[:, None]
    counts = np.bincount(picked.ravel(), minlength=samples * n).reshape(samples, n)
    weights = np.vstack([np.ones((1, n)), counts]).astype(float)
    weights.flags.writeable = False
    return weights


class ProblemResamples:
    """A group's problems and the bootstrap resamples of them that all its statistics share.

    The papers' intervals resample problems, keeping each problem's episodes
    together: a problem drawn twice counts twice.  Statistics are computed
    from per-problem arrays for the whole group and all resamples at once.
    """

    def __init__(self, problems: Iterable[str], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0):
        self.problems = sorted(problems)
        n = len(self.problems)
        # with fewer than 2 problems there is nothing to resample: the point estimate alone
        self.weights = _resample_weights(n, samples, seed) if n >= 2 else np.ones((1, n))

    def totals(self, per_problem: ArrayLike) -> np.ndarray:
        """Sums of ``per_problem`` (one row per problem, in :attr:`problems` order) over the
        whole group (row 0) and over each resample (rows 1..samples)."""
        return self.weights @ np.asarray(per_problem, dtype=float)

    def problem_means(self, per_problem: ArrayLike) -> np.ndarray:
        """The mean over problems of ``per_problem`` rows, for the group (row 0) and each
        resample (NaN without problems)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.totals(per_problem) / self.weights.sum(axis=1).reshape(
                -1, *[1] * (np.ndim(per_problem) - 1)
            )

    def estimate(self, statistic: np.ndarray) -> Estimate:
        """An :class:`Estimate` from a statistic's value on the group (``statistic[0]``)
        and on each resample (NaN where undefined: those resamples are left out)."""
        n = len(self.problems)
        value = float(statistic[0])
        draws = statistic[1:][~np.isnan(statistic[1:])]
        if math.isnan(value) or not draws.size:
            return Estimate(value, n=n)
        low, high = np.percentile(draws, [2.5, 97.5])
        return Estimate(value, float(low), float(high), n)

    def mean(self, values: Mapping[str, Sequence[float]]) -> Estimate:
        """The mean of all problems' ``values`` pooled (NaN without values)."""
        sums = [math.fsum(values.get(p, ())) for p in self.problems]
        counts = [len(values.get(p, ())) for p in self.problems]
        totals = self.totals(np.column_stack([sums, counts]).reshape(len(self.problems), 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            statistic = np.where(totals[:, 1] > 0, totals[:, 0] / totals[:, 1], math.nan)
        return self.estimate(statistic)


def bootstrap(
    episodes_by_problem: dict[str, list],
    statistic: Callable[[list], float],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> Estimate:
    """``statistic`` over all episodes, with a CI from resampling problems.

    For statistics that are not a pooled mean (those use :class:`ProblemResamples`,
    which computes every resample at once); the same resamples either way.
    """
    keys = sorted(episodes_by_problem)
    value = statistic([e for k in keys for e in episodes_by_problem[k]])
    if len(keys) < 2 or math.isnan(value):
        return Estimate(value, n=len(keys))
    draws = []
    for picked in _resample_indices(len(keys), samples, seed):
        stat = statistic([e for i in picked for e in episodes_by_problem[keys[i]]])
        if not math.isnan(stat):
            draws.append(stat)
    if not draws:
        return Estimate(value, n=len(keys))
    low, high = np.percentile(draws, [2.5, 97.5])
    return Estimate(value, float(low), float(high), len(keys))


def problem_mean(values: dict[str, float], samples: int = BOOTSTRAP_SAMPLES) -> Estimate:
    """The mean of one value per problem, with a CI from resampling problems.

    For metrics that first reduce each problem to one number (repeats or
    variants averaged), so that a problem drawn twice counts twice.
    """
    if not values:
        return Estimate(math.nan)
    resamples = ProblemResamples(values, samples)
    return resamples.estimate(resamples.problem_means([values[p] for p in resamples.problems]))


PERMUTATIONS = 10000


@functools.lru_cache(maxsize=4)
def _signs(n: int, samples: int, seed: int) -> np.ndarray:
    """(samples, n) random signs, one array shared by every test of n differences."""
    signs = np.random.default_rng(seed).choice(np.array([-1, 1], dtype=np.int8), (samples, n))
    signs.flags.writeable = False
    return signs


def paired_permutation_p(
    differences: Sequence[float], samples: int = PERMUTATIONS, seed: int = 0
) -> float:
    """Two-sided p-value of a sign-flip permutation test that the mean difference is 0.

    Each paired difference keeps or flips its sign at random; the p-value is
    the share of ``samples`` flips (plus the observed one) whose mean is at
    least as far from 0 as the observed mean.  NaN without differences.
    """
    values = np.asarray(differences, dtype=float)
    if not len(values):
        return math.nan
    observed = abs(values.mean())
    flipped = np.abs(_signs(len(values), samples, seed) @ values) / len(values)
    # a small tolerance so that flips equal to the observed mean count despite rounding
    extreme = int(np.count_nonzero(flipped >= observed - 1e-12))
    return (extreme + 1) / (samples + 1)
