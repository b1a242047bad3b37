"""Seed statistics for paired policy comparisons: means, bootstrap intervals, paired deltas.

Every policy runs the same instances (one per seed), so a comparison against a reference
policy is *paired*: the per-seed differences ``x[s] - ref[s]`` carry the comparison, and
their spread, not the spread of either policy alone, says whether the difference is real.

Intervals are **percentile bootstrap** intervals over seeds: resample the seeds with
replacement ``n_boot`` times, take the statistic of each resample, report its
``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles. The resampling indices come from
``numpy.random.default_rng(seed)``: the same inputs and seed give the same interval, bit for
bit. With few seeds the percentile bootstrap is too narrow (with 2 seeds it spans at most
the two values); 10 seeds is the report default.

Seeds where a metric is undefined (NaN, e.g. a mean JCT when no job completed) are left out
of that metric's statistics; a paired statistic uses the seeds where both policies have a
value. ``n`` says how many seeds were used. Fewer than two seeds give a NaN interval.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

#: Defaults of every interval in the reports.
LEVEL = 0.95
N_BOOT = 10_000
SEED = 0
#: Intervals from fewer seeds than this are printed with a warning (``few_seeds_warning``).
MIN_SEEDS = 5


def few_seeds_warning(n: int, hint: str = f"--seeds {MIN_SEEDS} or more") -> str | None:
    """The warning the printed tables carry beside intervals from ``n`` seeds (module
    docstring: with few seeds the percentile bootstrap is too narrow); None from
    ``MIN_SEEDS`` seeds on.

    Args:
        n: the seeds each interval is computed from.
        hint: how to get more seeds, in the command's own terms.
    """
    if n >= MIN_SEEDS:
        return None
    return (
        f"warning: intervals from {n} seed{'' if n == 1 else 's'} (fewer than {MIN_SEEDS}) "
        "are too narrow to trust (a percentile bootstrap over 2 seeds spans at most their "
        f"two values); for conclusions use {hint}"
    )


@dataclass(frozen=True)
class Interval:
    """A mean over seeds and its bootstrap interval (NaN when undefined).

    Attributes:
        mean: The mean over the seeds with a value (NaN when none has one).
        ci_low: The interval's low end: the ``(1 - level) / 2`` quantile of the resampled
            means (NaN with fewer than two seeds).
        ci_high: Its high end, the ``(1 + level) / 2`` quantile.
        n: Seeds with a value.
    """

    mean: float
    ci_low: float
    ci_high: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        """Plain dict (JSON-friendly)."""
        return asdict(self)


@dataclass(frozen=True)
class Paired:
    """A policy against a reference over the same seeds.

    ``diff`` is the mean of the per-seed differences ``x - ref`` (equal to the difference of
    the means over the seeds both have); ``ratio`` is ``mean(x) / mean(ref)`` over those seeds.
    Both intervals come from the same bootstrap resamples of the seeds.

    Attributes:
        reference: The reference policy's name.
        diff: Mean of ``x - ref`` over the seeds where both have a value.
        diff_ci_low: Low end of its percentile-bootstrap interval.
        diff_ci_high: High end.
        ratio: ``mean(x) / mean(ref)`` (NaN when the reference's mean is 0).
        ratio_ci_low: Low end of its interval (resamples with a zero denominator dropped).
        ratio_ci_high: High end.
        n: Seeds where both have a value; intervals are NaN below 2.
    """

    reference: str
    diff: float
    diff_ci_low: float
    diff_ci_high: float
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    n: int

    def as_dict(self) -> dict[str, float | int | str]:
        """Plain dict (JSON-friendly)."""
        return asdict(self)


def _check(level: float, n_boot: int) -> None:
    """``ValueError`` unless 0 < ``level`` < 1 and ``n_boot`` >= 1."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")


def resample_indices(n: int, n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """(n_boot, n) indices of seeds drawn with replacement (deterministic given ``seed``).

    ``mean_ci`` and ``paired`` draw with the same ``seed``: for the same number of seeds
    they resample the same seeds, so a metric's interval and its paired interval line up.

    Args:
        n: Seeds to resample (values 0..n-1).
        n_boot: Resamples.
        seed: Seed of ``numpy.random.default_rng``.
    """
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_boot, n))


def _quantiles(stats: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` interval of the finite resampled statistics (NaN, NaN if none)."""
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(stats, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)


def mean_ci(
    values: np.ndarray | list[float],
    *,
    level: float = LEVEL,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> Interval:
    """Mean of ``values`` (NaNs dropped) and its percentile-bootstrap interval.

    Args:
        values: One value per seed; NaN where undefined (dropped).
        level: Confidence level of the interval, in (0, 1).
        n_boot: Bootstrap resamples, >= 1.
        seed: Seed of the resampling.

    Raises:
        ValueError: ``level`` or ``n_boot`` out of range.
    """
    _check(level, n_boot)
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    n = int(x.size)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, float("nan"), float("nan"), n)
    lo, hi = _quantiles(x[resample_indices(n, n_boot, seed)].mean(axis=1), level)
    return Interval(mean, lo, hi, n)


def paired(
    values: np.ndarray | list[float],
    reference_values: np.ndarray | list[float],
    *,
    reference: str,
    level: float = LEVEL,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> Paired:
    """Paired difference and ratio of ``values`` against ``reference_values`` (seed by seed).

    Args:
        values: The policy's value per seed (NaN where undefined).
        reference_values: The reference's value per seed, in the same seed order.
        reference: The reference policy's name, recorded in the result.
        level: Confidence level of the intervals, in (0, 1).
        n_boot: Bootstrap resamples, >= 1.
        seed: Seed of the resampling.

    Raises:
        ValueError: the two arrays do not have one value per seed each (different lengths),
            or ``level`` or ``n_boot`` is out of range.
    """
    _check(level, n_boot)
    x = np.asarray(values, dtype=np.float64).ravel()
    r = np.asarray(reference_values, dtype=np.float64).ravel()
    if x.shape != r.shape:
        raise ValueError(
            f"paired: {x.size} values against {r.size} reference values; "
            "a paired comparison needs one value of each per seed"
        )
    ok = ~(np.isnan(x) | np.isnan(r))
    x, r = x[ok], r[ok]
    n = int(x.size)
    nan = float("nan")
    if n == 0:
        return Paired(reference, nan, nan, nan, nan, nan, nan, 0)
    d = x - r
    rm = float(r.mean())
    ratio = float(x.mean()) / rm if rm != 0 else nan
    if n < 2:
        return Paired(reference, float(d.mean()), nan, nan, ratio, nan, nan, n)
    idx = resample_indices(n, n_boot, seed)
    dlo, dhi = _quantiles(d[idx].mean(axis=1), level)
    num, den = x[idx].mean(axis=1), r[idx].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rlo, rhi = _quantiles(np.where(den != 0, num / den, np.nan), level)
    return Paired(reference, float(d.mean()), dlo, dhi, ratio, rlo, rhi, n)
