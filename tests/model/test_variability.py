from __future__ import annotations

import functools

import numpy as np
import pytest

from mtgym.core.errors import ConfigError
from mtgym.core.types import AppClass
from mtgym.model.variability import (
    ClassVariability,
    VariabilitySpec,
    node_factors,
    sample_empirical,
)


@functools.cache
def default_draw() -> np.ndarray:
    return VariabilitySpec().sample(np.random.default_rng(0), 20000)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx = np.argsort(np.argsort(x))
    ry = np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def test_variability_sample__shape_and_floor():
    spec = VariabilitySpec()
    sf = default_draw()
    assert sf.shape == (20000, 4)
    for c in AppClass:
        assert sf[:, c].min() >= spec.classes[c].floor


def test_variability_sample__class_a_has_a_heavy_tail():
    a = default_draw()[:, AppClass.A]
    share = float(np.mean(a > 1.10))
    assert 0.01 <= share <= 0.05
    assert a.max() > 1.5  # outliers reach far beyond the lognormal body
    assert a.max() <= 2.6 + 1e-9


def test_variability_sample__class_a_matches_documented_calibration():
    a = default_draw()[:, AppClass.A]
    assert float(np.mean(a > 1.05)) == pytest.approx(0.065, abs=0.02)
    assert float(np.mean(a > 1.10)) == pytest.approx(0.018, abs=0.01)


def test_variability_sample__class_d_is_insensitive():
    d = default_draw()[:, AppClass.D]
    assert d.min() >= 0.97
    assert d.max() <= 1.02


def test_variability_sample__bc_within_bert_range():
    sf = default_draw()
    for c in (AppClass.B, AppClass.C):
        assert sf[:, c].max() <= 1.3 + 1e-9
        assert 0.0 < np.mean(sf[:, c] > 1.05) < 0.02


def test_variability_sample__median_is_one():
    med = np.median(default_draw(), axis=0)
    np.testing.assert_allclose(med, 1.0, atol=0.005)


def test_variability_sample__correlated_classes():
    sf = VariabilitySpec(correlation=0.9).sample(np.random.default_rng(1), 20000)
    assert spearman(sf[:, AppClass.A], sf[:, AppClass.B]) > 0.8
    assert spearman(sf[:, AppClass.B], sf[:, AppClass.C]) > 0.8


def test_variability_sample__uncorrelated_classes():
    sf = VariabilitySpec(correlation=0.0).sample(np.random.default_rng(1), 20000)
    assert abs(spearman(sf[:, AppClass.A], sf[:, AppClass.B])) < 0.05
    assert abs(spearman(sf[:, AppClass.A], sf[:, AppClass.D])) < 0.05


def test_variability_sample__same_seed_same_draw():
    a = VariabilitySpec().sample(np.random.default_rng(5), 100)
    b = VariabilitySpec().sample(np.random.default_rng(5), 100)
    c = VariabilitySpec().sample(np.random.default_rng(6), 100)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_variability_none__all_ones():
    sf = VariabilitySpec.none().sample(np.random.default_rng(0), 1000)
    np.testing.assert_array_equal(sf, np.ones((1000, 4)))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sigma": -0.1}, "sigma"),
        ({"sigma": 1.0}, "sigma"),
        ({"outlier_prob": 1.5}, "outlier_prob"),
        ({"outlier_prob": -0.1}, "outlier_prob"),
        ({"outlier_min": 0.9, "outlier_max": 2.0}, "outlier_min/outlier_max"),
        ({"outlier_min": 2.0, "outlier_max": 1.5}, "outlier_min/outlier_max"),
        ({"floor": 0.0}, "floor"),
        ({"floor": 1.2}, "floor"),
    ],
)
def test_class_variability__bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as info:
        ClassVariability(**kwargs)
    assert info.value.field == field
    assert field in str(info.value)


def test_variability_spec__bad_correlation_names_the_field():
    for rho in (-0.1, 1.1):
        with pytest.raises(ConfigError) as info:
            VariabilitySpec(correlation=rho)
        assert info.value.field == "correlation"


def test_variability_spec__missing_class_names_it():
    with pytest.raises(ConfigError) as info:
        VariabilitySpec({AppClass.A: ClassVariability(), AppClass.B: ClassVariability()})
    assert info.value.field == "classes"
    assert "C" in str(info.value) and "D" in str(info.value)


def test_sample_empirical__draws_only_given_values():
    a_vals = np.array([0.95, 1.0, 1.3, 3.57])
    b_vals = np.array([1.01, 1.02])
    out = sample_empirical(np.random.default_rng(0), 2000, {AppClass.A: a_vals, AppClass.B: b_vals})
    assert out.shape == (2000, 4)
    assert set(np.unique(out[:, AppClass.A])) == set(a_vals)  # all values drawn, none else
    assert set(np.unique(out[:, AppClass.B])) <= set(b_vals)
    # missing classes are 1.0
    np.testing.assert_array_equal(out[:, AppClass.C], 1.0)
    np.testing.assert_array_equal(out[:, AppClass.D], 1.0)


@pytest.mark.parametrize("vals", [np.array([]), np.array([1.0, -1.0]), np.array([np.nan])])
def test_sample_empirical__bad_samples_are_config_errors(vals):
    with pytest.raises(ConfigError) as info:
        sample_empirical(np.random.default_rng(0), 3, {AppClass.C: vals})
    assert info.value.field == "samples[C]"


def test_node_factors__max_over_devices():
    dev = np.array(
        [
            [[1.0, 0.9, 1.2, 1.0], [1.1, 1.0, 0.95, 1.0], [0.97, 1.3, 1.0, 1.01]],
            [[2.5, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.99]],
        ]
    )
    np.testing.assert_array_equal(node_factors(dev), [[1.1, 1.3, 1.2, 1.01], [2.5, 1.0, 1.0, 1.0]])
