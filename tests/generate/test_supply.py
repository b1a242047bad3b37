from __future__ import annotations

import functools

import numpy as np
import pytest

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Supply
from mtgym.generate.supply import (
    SUMMIT_IDLE_FRACTION,
    SUMMIT_WINDOW_MEAN_S,
    SUMMIT_WINDOW_MEDIAN_S,
    SyntheticSupply,
    supply_from_windows,
)

T0 = 1000.0
T1 = T0 + 3 * 86400.0
SUPPLY_FIELDS = ("node", "start_s", "end_s", "end_known", "end_order", "end_sorted_s")


@functools.cache
def summit_supply(seed: int = 1) -> Supply:
    return SyntheticSupply().generate(np.random.default_rng(seed), 2000, T0, T1)


def assert_no_overlap(sup: Supply) -> None:
    by_node = np.lexsort((sup.start_s, sup.node))
    n, s, e = sup.node[by_node], sup.start_s[by_node], sup.end_s[by_node]
    same = n[1:] == n[:-1]
    assert not np.any(same & (s[1:] < e[:-1]))


# -- SyntheticSupply: Summit calibration ----------------------------------------------
def test_synthetic_supply__summit_window_median():
    d = summit_supply().end_s - summit_supply().start_s
    assert np.median(d) == pytest.approx(SUMMIT_WINDOW_MEDIAN_S, rel=0.10)
    assert SUMMIT_WINDOW_MEDIAN_S == 475.0


def test_synthetic_supply__summit_window_mean():
    d = summit_supply().end_s - summit_supply().start_s
    assert d.mean() == pytest.approx(SUMMIT_WINDOW_MEAN_S, rel=0.10)
    assert abs(SUMMIT_WINDOW_MEAN_S - 1192.0) <= 1.0


def test_synthetic_supply__summit_idle_fraction():
    frac = summit_supply().offered_node_seconds(T0, T1) / (2000 * (T1 - T0))
    assert frac == pytest.approx(SUMMIT_IDLE_FRACTION, rel=0.10)
    assert SUMMIT_IDLE_FRACTION == 0.083


def test_synthetic_supply__windows_are_valid():
    sup = summit_supply()
    assert sup.num_windows > 10_000
    assert_no_overlap(sup)
    assert sup.start_s.min() >= T0
    assert sup.end_s.max() <= T1
    assert np.all(sup.end_s > sup.start_s)
    assert sup.node.min() >= 0 and sup.node.max() < 2000
    assert not sup.end_known.any()  # end_known_prob = 0 and no drains by default
    # sorted by (start, node)
    key = np.lexsort((sup.node, sup.start_s))
    np.testing.assert_array_equal(key, np.arange(sup.num_windows))


def test_synthetic_supply__windows_start_no_earlier_than_t0():
    # regression: starts computed as (t0 + cumsum) - idle fell a rounding error below t0
    for t0 in (1000.0, 3600.0, 12345.678):
        sup = SyntheticSupply().generate(np.random.default_rng(1), 2000, t0, t0 + 86400.0)
        assert sup.start_s.min() == t0  # the windows open at t0 start exactly there


def test_synthetic_supply__same_seed_same_arrays():
    a = SyntheticSupply(drains_per_hour=1.0).generate(np.random.default_rng(7), 100, 0.0, 86400.0)
    b = SyntheticSupply(drains_per_hour=1.0).generate(np.random.default_rng(7), 100, 0.0, 86400.0)
    for f in SUPPLY_FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


def test_synthetic_supply__different_seed_different_arrays():
    a = SyntheticSupply().generate(np.random.default_rng(7), 100, 0.0, 86400.0)
    b = SyntheticSupply().generate(np.random.default_rng(8), 100, 0.0, 86400.0)
    assert a.num_windows != b.num_windows or not np.array_equal(a.start_s, b.start_s)


def test_synthetic_supply__idle_fraction_parameter():
    sup = SyntheticSupply(idle_fraction=0.35).generate(np.random.default_rng(3), 1000, 0.0, 86400.0)
    frac = sup.offered_node_seconds(0.0, 86400.0) / (1000 * 86400.0)
    assert frac == pytest.approx(0.35, rel=0.05)
    assert_no_overlap(sup)


def test_synthetic_supply__idle_fraction_is_stationary_from_t0():
    # regression: a first busy gap of busy*U and a first idle residual of idle*U (instead of a
    # fresh exponential and a length-biased window) left ~0.118 idle in the first hour
    sup = SyntheticSupply().generate(np.random.default_rng(0), 10_000, 0.0, 3600.0)
    frac = sup.offered_node_seconds(0.0, 3600.0) / (10_000 * 3600.0)
    assert frac == pytest.approx(SUMMIT_IDLE_FRACTION, rel=0.10)


def test_synthetic_supply__sigma_from_mean_and_median():
    s = SyntheticSupply(window_median_s=100.0, window_mean_s=100.0 * np.exp(0.5))
    assert s.sigma == pytest.approx(1.0, rel=1e-12)


def test_synthetic_supply__min_window_lengthens_short_windows():
    sup = SyntheticSupply(idle_fraction=0.2).generate(np.random.default_rng(2), 300, 0.0, 86400.0)
    d = sup.end_s - sup.start_s
    # windows cut by the span's ends may be shorter; interior ones are >= 50 s
    interior = (sup.start_s > 0.0) & (sup.end_s < 86400.0)
    assert d[interior].min() >= 50.0 - 1e-9


# -- drains / end_known ---------------------------------------------------------------
def test_synthetic_supply__drains_have_known_ends():
    sup = SyntheticSupply(drains_per_hour=2.0).generate(np.random.default_rng(1), 200, 0.0, 86400.0)
    assert sup.end_known.any()
    assert not sup.end_known.all()
    assert_no_overlap(sup)
    assert sup.start_s.min() >= 0.0 and sup.end_s.max() <= 86400.0


def test_synthetic_supply__no_drains_no_known_ends():
    sup = SyntheticSupply(drains_per_hour=0.0, end_known_prob=0.0).generate(
        np.random.default_rng(1), 200, 0.0, 86400.0
    )
    assert not sup.end_known.any()


def test_synthetic_supply__end_known_prob_one_marks_every_window():
    sup = SyntheticSupply(end_known_prob=1.0).generate(np.random.default_rng(1), 50, 0.0, 86400.0)
    assert sup.num_windows > 0
    assert sup.end_known.all()


# -- Supply.from_windows --------------------------------------------------------------
def test_supply_from_windows__sorted_by_start_then_node():
    sup = Supply.from_windows(
        np.array([2, 0, 1, 0, 3]),
        np.array([5.0, 5.0, 1.0, 0.0, 4.0]),
        np.array([6.0, 7.0, 3.0, 2.0, 6.0]),
        np.array([True, False, True, False, False]),
    )
    np.testing.assert_array_equal(sup.node, [0, 1, 3, 0, 2])
    np.testing.assert_array_equal(sup.start_s, [0.0, 1.0, 4.0, 5.0, 5.0])
    np.testing.assert_array_equal(sup.end_s, [2.0, 3.0, 6.0, 7.0, 6.0])
    np.testing.assert_array_equal(sup.end_known, [False, True, False, False, True])
    assert sup.node.dtype == np.int32
    assert sup.num_windows == 5


def test_supply_from_windows__end_order_by_end_then_node():
    sup = Supply.from_windows(
        np.array([2, 0, 1, 0, 3]),
        np.array([5.0, 5.0, 1.0, 0.0, 4.0]),
        np.array([6.0, 7.0, 3.0, 2.0, 6.0]),
    )
    # ends [2, 3, 6 (node 3), 7, 6 (node 2)] -> 2, 3, 6 (node 2), 6 (node 3), 7
    np.testing.assert_array_equal(sup.end_order, [0, 1, 4, 2, 3])
    np.testing.assert_array_equal(sup.end_sorted_s, sup.end_s[sup.end_order])
    np.testing.assert_array_equal(sup.end_sorted_s, [2.0, 3.0, 6.0, 6.0, 7.0])
    assert not sup.end_known.any()
    for f in SUPPLY_FIELDS:
        assert not getattr(sup, f).flags.writeable


def test_supply_from_windows__overlap_names_the_node():
    with pytest.raises(ConfigError) as info:
        Supply.from_windows(np.array([1, 3, 3]), np.array([0.0, 0.0, 5.0]), np.array([9.0, 10, 12]))
    assert info.value.field == "windows"
    assert "node 3" in str(info.value)


def test_supply_from_windows__nested_overlap_detected():
    with pytest.raises(ConfigError):
        Supply.from_windows(
            np.array([0, 0, 0]), np.array([0.0, 2.0, 5.0]), np.array([10.0, 3.0, 6.0])
        )


@pytest.mark.parametrize(("start", "end"), [(5.0, 5.0), (5.0, 4.0), (0.0, np.inf)])
def test_supply_from_windows__bad_range_is_config_error(start, end):
    with pytest.raises(ConfigError) as info:
        Supply.from_windows(np.array([0]), np.array([start]), np.array([end]))
    assert info.value.field == "window"


def test_supply_from_windows__node_out_of_range_is_config_error():
    with pytest.raises(ConfigError):
        Supply.from_windows(np.array([4]), np.array([0.0]), np.array([1.0]), num_nodes=4)
    with pytest.raises(ConfigError):
        Supply.from_windows(np.array([-1]), np.array([0.0]), np.array([1.0]))


def test_supply_from_windows__touching_windows_are_merged():
    sup = Supply.from_windows(
        np.array([0, 0, 0, 1]),
        np.array([5.0, 0.0, 10.0, 5.0]),
        np.array([10.0, 5.0, 12.0, 6.0]),
        np.array([False, False, True, False]),
    )
    # node 0 was idle on [0, 12) without a break: one window, whose end is the last one's
    np.testing.assert_array_equal(sup.node, [0, 1])
    np.testing.assert_array_equal(sup.start_s, [0.0, 5.0])
    np.testing.assert_array_equal(sup.end_s, [12.0, 6.0])
    np.testing.assert_array_equal(sup.end_known, [True, False])


def test_supply_from_windows__empty():
    sup = Supply.from_windows(np.zeros(0), np.zeros(0), np.zeros(0))
    assert sup.num_windows == 0
    assert sup.offered_node_seconds(0.0, 10.0) == 0.0


def test_supply_offered_node_seconds__hand_computed():
    sup = Supply.from_windows(
        np.array([0, 1, 0]), np.array([0.0, 5.0, 30.0]), np.array([10.0, 20.0, 40.0])
    )
    # [8, 35): [8,10) + [8,20) + [30,35) = 2 + 12 + 5
    assert sup.offered_node_seconds(8.0, 35.0) == 19.0
    assert sup.offered_node_seconds(0.0, 100.0) == 35.0
    assert sup.offered_node_seconds(20.0, 30.0) == 0.0
    assert sup.offered_node_seconds(50.0, 60.0) == 0.0


# -- supply_from_windows --------------------------------------------------------------
def test_supply_from_windows_fn__subset_renumbers_and_clips():
    node = np.array([0, 1, 2, 5, 0])
    start = np.array([-10.0, 0.0, 50.0, 90.0, 150.0])
    end = np.array([20.0, 30.0, 70.0, 200.0, 160.0])
    known = np.array([True, False, True, False, True])
    sup, orig = supply_from_windows(
        node, start, end, known, nodes=np.array([5, 0]), t0=0.0, t1=100.0
    )
    np.testing.assert_array_equal(orig, [5, 0])
    np.testing.assert_array_equal(sup.node, [1, 0])  # old 0 -> new 1, old 5 -> new 0
    np.testing.assert_array_equal(sup.start_s, [0.0, 90.0])
    np.testing.assert_array_equal(sup.end_s, [20.0, 100.0])
    np.testing.assert_array_equal(sup.end_known, [True, False])


def test_supply_from_windows_fn__defaults_keep_everything():
    node = np.array([3, 0])
    sup, orig = supply_from_windows(node, np.array([1.0, 2.0]), np.array([4.0, 3.0]))
    np.testing.assert_array_equal(orig, [0, 1, 2, 3])
    np.testing.assert_array_equal(sup.node, [3, 0])
    np.testing.assert_array_equal(sup.start_s, [1.0, 2.0])
    assert not sup.end_known.any()


# -- parameters -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"idle_fraction": 0.0}, "idle_fraction"),
        ({"idle_fraction": 1.0}, "idle_fraction"),
        ({"window_median_s": 2000.0}, "window_median_s/window_mean_s"),
        ({"window_median_s": 0.0}, "window_median_s/window_mean_s"),
        ({"min_window_s": 500.0}, "min_window_s"),
        ({"end_known_prob": 1.5}, "end_known_prob"),
        ({"drains_per_hour": -1.0}, "drains"),
        ({"drain_nodes_median": 0.5}, "drains"),
        ({"drain_median_s": 0.0}, "drains"),
    ],
)
def test_synthetic_supply__bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as info:
        SyntheticSupply(**kwargs)
    assert info.value.field == field


def test_synthetic_supply__bad_span_is_config_error():
    with pytest.raises(ConfigError):
        SyntheticSupply().generate(np.random.default_rng(0), 10, 5.0, 5.0)
    with pytest.raises(ConfigError):
        SyntheticSupply().generate(np.random.default_rng(0), 0, 0.0, 5.0)
