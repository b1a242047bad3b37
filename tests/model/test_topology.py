from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtgym.core.errors import ConfigError
from mtgym.core.topology import Topology

SUMMIT_LIKE_NAMES = ("node", "cabinet", "row", "system")


def summit_like(num_nodes: int = 12, cabinet: int = 2, cabinets_per_row: int = 2) -> Topology:
    """node -> cabinet (``cabinet`` nodes) -> row (``cabinets_per_row`` cabinets) -> system."""
    n = np.arange(num_nodes)
    cab = n // cabinet
    row = cab // cabinets_per_row
    return Topology.build(
        SUMMIT_LIKE_NAMES,
        np.stack([cab, row], axis=1),
        bandwidth_gbps=(300.0, 50.0, 25.0, 12.5),
        latency_s=(1e-6, 2e-6, 3e-6, 5e-6),
        locality_factor=(1.0, 1.0, 1.2, 1.7),
    )


# -- build / uniform ------------------------------------------------------------------
def test_topology_uniform__coords_shape_and_values():
    t = Topology.uniform(5, 2)
    assert t.num_nodes == 5
    assert t.num_levels == 3
    assert t.level_names == ("node", "group", "system")
    assert t.coords.shape == (5, 3)
    assert t.coords.dtype == np.int32
    np.testing.assert_array_equal(t.coords[:, 0], [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(t.coords[:, 1], [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(t.coords[:, 2], [0, 0, 0, 0, 0])


def test_topology_uniform__defaults_and_read_only_arrays():
    t = Topology.uniform(4, 2)
    np.testing.assert_array_equal(t.bandwidth_gbps, [150.0, 25.0, 12.5])
    np.testing.assert_array_equal(t.latency_s, [1e-6, 2e-6, 5e-6])
    np.testing.assert_array_equal(t.locality_factor, [1.0, 1.0, 1.0])
    for arr in (t.coords, t.bandwidth_gbps, t.latency_s, t.locality_factor):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 7


def test_topology_build__sparse_group_ids_become_dense_and_keep_membership():
    t = Topology.build(("node", "group", "system"), [10, 10, 7, 7, 42], (3, 2, 1), (0, 0, 0))
    g = t.coords[:, 1]
    assert sorted(set(g.tolist())) == [0, 1, 2]
    assert g[0] == g[1]
    assert g[2] == g[3]
    assert len({g[0], g[2], g[4]}) == 3
    np.testing.assert_array_equal(t.coords[:, 0], np.arange(5))
    np.testing.assert_array_equal(t.coords[:, -1], 0)


def test_topology_build__three_level_summit_like_coords():
    t = summit_like()
    assert t.coords.shape == (12, 4)
    np.testing.assert_array_equal(t.coords[:, 0], np.arange(12))
    np.testing.assert_array_equal(t.coords[:, 1], [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    np.testing.assert_array_equal(t.coords[:, 2], [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    np.testing.assert_array_equal(t.coords[:, 3], 0)


def test_topology_build__node_and_system_only():
    t = Topology.build(("node", "system"), np.zeros((3, 0), dtype=int), (100.0, 10.0), (0, 0))
    np.testing.assert_array_equal(t.coords, [[0, 0], [1, 0], [2, 0]])
    assert t.spread(np.array([0, 2])) == 1


# -- spread ---------------------------------------------------------------------------
def test_topology_spread__one_node_is_zero():
    t = Topology.uniform(6, 3)
    assert t.spread(np.array([4])) == 0
    assert t.spread(np.array([], dtype=int)) == 0


def test_topology_spread__two_nodes_in_one_group_is_one():
    t = Topology.uniform(6, 3)
    assert t.spread(np.array([0, 2])) == 1
    assert t.spread(np.array([5, 3, 4])) == 1


def test_topology_spread__across_groups_is_last_level():
    t = Topology.uniform(6, 3)
    assert t.spread(np.array([2, 3])) == 2
    assert t.spread(np.arange(6)) == 2


def test_topology_spread__summit_like_cabinet_row_system():
    t = summit_like()  # cabinets {0,1},{2,3},...; rows {0..3},{4..7},{8..11}
    assert t.spread(np.array([0])) == 0
    assert t.spread(np.array([0, 1])) == 1
    assert t.spread(np.array([0, 2])) == 2
    assert t.spread(np.array([0, 1, 2, 3])) == 2
    assert t.spread(np.array([3, 4])) == 3
    assert t.spread(np.array([0, 11])) == 3
    assert t.spread(np.array([9, 8])) == 1


@st.composite
def _topology_and_sets(draw):
    n = draw(st.integers(1, 40))
    cab = draw(st.integers(1, 6))
    per_row = draw(st.integers(1, 4))
    k = draw(st.integers(1, 6))
    labels = draw(st.lists(st.integers(-1, k - 1), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**31 - 1))
    return summit_like(n, cab, per_row), np.array(labels), seed


@settings(max_examples=60, deadline=None)
@given(_topology_and_sets())
def test_topology_spreads_by_job__equals_spread_per_set(case):
    topo, labels, seed = case
    rng = np.random.default_rng(seed)
    sets = [rng.permutation(np.flatnonzero(labels == j)) for j in rng.permutation(labels.max() + 1)]
    sets = [s for s in sets if s.size]
    if not sets:
        assert (
            topo.spreads_by_job(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).size == 0
        )
        return
    sorted_nodes = np.concatenate(sets)
    starts = np.cumsum([0] + [s.size for s in sets[:-1]])
    got = topo.spreads_by_job(sorted_nodes, starts)
    assert got.tolist() == [topo.spread(s) for s in sets]


# -- validation -----------------------------------------------------------------------
def test_topology_build__non_nesting_groups_is_config_error():
    # cabinet 0 holds nodes 0 and 1, but they sit in rows 0 and 1
    with pytest.raises(ConfigError) as info:
        Topology.build(
            SUMMIT_LIKE_NAMES,
            [[0, 0], [0, 1], [1, 1], [1, 1]],
            (1.0, 1.0, 1.0, 1.0),
            (0.0, 0.0, 0.0, 0.0),
        )
    assert info.value.field == "group_ids"
    assert "cabinet" in str(info.value)


def test_topology_build__wrong_group_ids_shape_is_config_error():
    with pytest.raises(ConfigError) as info:
        Topology.build(SUMMIT_LIKE_NAMES, [0, 0, 1, 1], (1, 1, 1, 1), (0, 0, 0, 0))
    assert info.value.field == "group_ids"


def test_topology_build__fewer_than_two_levels_is_config_error():
    with pytest.raises(ConfigError) as info:
        Topology.build(("node",), np.zeros((2, 0)), (1.0,), (0.0,))
    assert info.value.field == "level_names"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"bandwidth_gbps": (150.0, 25.0)}, "bandwidth_gbps"),
        ({"bandwidth_gbps": (150.0, 25.0, 12.5, 1.0)}, "bandwidth_gbps"),
        ({"bandwidth_gbps": (150.0, 0.0, 12.5)}, "bandwidth_gbps"),
        ({"bandwidth_gbps": (150.0, float("nan"), 12.5)}, "bandwidth_gbps"),
        ({"latency_s": (1e-6, 2e-6)}, "latency_s"),
        ({"latency_s": (1e-6, -2e-6, 0.0)}, "latency_s"),
        ({"locality_factor": (1.0, 1.0, 0.9)}, "locality_factor"),
        ({"locality_factor": (1.0, 1.7)}, "locality_factor"),
    ],
)
def test_topology_uniform__bad_link_parameters_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as info:
        Topology.uniform(4, 2, **kwargs)
    assert info.value.field == field
    assert field in str(info.value)


def test_topology_uniform__bad_sizes_are_config_errors():
    with pytest.raises(ConfigError):
        Topology.uniform(0, 2)
    with pytest.raises(ConfigError):
        Topology.uniform(4, 0)
