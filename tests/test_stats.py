"""mtgym.stats: bootstrap intervals and paired comparisons over seeds."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym import stats


def test_mean_ci__covers_the_true_mean_about_95_percent_of_the_time():
    # 400 experiments of 30 seeds from N(5, 2): a 95 % interval should miss ~5 % of the time
    # (the percentile bootstrap undercovers a little at n = 30)
    rng = np.random.default_rng(123)
    hits = 0
    trials = 400
    for i in range(trials):
        x = rng.normal(5.0, 2.0, size=30)
        iv = stats.mean_ci(x, n_boot=2000, seed=i)
        hits += iv.ci_low <= 5.0 <= iv.ci_high
    assert 0.90 <= hits / trials <= 0.99


def test_mean_ci__width_matches_the_normal_theory_interval():
    x = np.random.default_rng(7).normal(0.0, 1.0, size=200)
    iv = stats.mean_ci(x)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert iv.mean == pytest.approx(x.mean())
    assert iv.ci_high - iv.ci_low == pytest.approx(2 * 1.96 * se, rel=0.1)
    assert iv.ci_low < iv.mean < iv.ci_high and iv.n == 200


def test_mean_ci__is_deterministic_and_depends_on_the_seed():
    x = np.random.default_rng(1).exponential(size=10)
    a, b = stats.mean_ci(x, seed=3), stats.mean_ci(x.copy(), seed=3)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)  # bit for bit
    c = stats.mean_ci(x, seed=4)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


def test_mean_ci__drops_nans_and_has_no_interval_below_two_values():
    iv = stats.mean_ci([1.0, np.nan, 3.0])
    assert iv.mean == 2.0 and iv.n == 2 and 1.0 <= iv.ci_low <= iv.ci_high <= 3.0
    one = stats.mean_ci([np.nan, 4.0])
    assert one.mean == 4.0 and one.n == 1 and np.isnan(one.ci_low) and np.isnan(one.ci_high)
    none = stats.mean_ci([np.nan])
    assert none.n == 0 and np.isnan(none.mean)


def test_paired__difference_is_the_mean_of_per_seed_differences():
    rng = np.random.default_rng(5)
    ref = rng.normal(100.0, 30.0, size=12)  # large spread between seeds
    x = ref + 2.0 + rng.normal(0.0, 0.5, size=12)  # a small, consistent gain
    p = stats.paired(x, ref, reference="r")
    assert p.diff == pytest.approx(np.mean(x - ref))
    assert p.ratio == pytest.approx(x.mean() / ref.mean())
    # pairing removes the seed-to-seed spread: the interval excludes 0 and is tight
    assert 0.0 < p.diff_ci_low < p.diff < p.diff_ci_high < 4.0
    assert p.ratio_ci_low < p.ratio < p.ratio_ci_high and p.ratio_ci_low > 1.0
    # unpaired intervals of the two means overlap heavily
    a, b = stats.mean_ci(x), stats.mean_ci(ref)
    assert a.ci_low < b.ci_high
    assert p.reference == "r" and p.n == 12


def test_paired__uses_the_seeds_both_have_and_checks_lengths():
    p = stats.paired([1.0, np.nan, 5.0, 7.0], [0.0, 1.0, np.nan, 4.0], reference="r")
    assert p.n == 2 and p.diff == pytest.approx(((1 - 0) + (7 - 4)) / 2)
    assert p.ratio == pytest.approx((1 + 7) / (0 + 4))
    with pytest.raises(ValueError, match="one value of each per seed"):
        stats.paired([1.0, 2.0], [1.0], reference="r")
    with pytest.raises(ValueError, match="level"):
        stats.mean_ci([1.0, 2.0], level=1.5)


def test_paired__against_itself_is_zero_with_a_zero_interval():
    x = np.arange(8.0) + 1
    p = stats.paired(x, x, reference="self")
    assert (p.diff, p.diff_ci_low, p.diff_ci_high) == (0.0, 0.0, 0.0)
    assert p.ratio == p.ratio_ci_low == p.ratio_ci_high == 1.0
