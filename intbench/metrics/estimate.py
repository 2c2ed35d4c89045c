"""Point estimates with 95% bootstrap intervals that resample problems."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SAMPLES = 1000


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


def bootstrap(
    episodes_by_problem: dict[str, list],
    statistic: Callable[[list], float],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> Estimate:
    """``statistic`` over all episodes, with a CI from resampling problems."""
    keys = sorted(episodes_by_problem)
    value = statistic([e for k in keys for e in episodes_by_problem[k]])
    if len(keys) < 2 or math.isnan(value):
        return Estimate(value, n=len(keys))
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(samples):
        picked = rng.integers(0, len(keys), len(keys))
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
    groups = {problem: [value] for problem, value in values.items()}
    return bootstrap(groups, lambda drawn: sum(drawn) / len(drawn), samples)


PERMUTATIONS = 10000


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
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(samples, len(values)))
    flipped = np.abs((signs * values).mean(axis=1))
    # a small tolerance so that flips equal to the observed mean count despite rounding
    extreme = int(np.count_nonzero(flipped >= observed - 1e-12))
    return (extreme + 1) / (samples + 1)
