"""Allocation validation (ValueError) and the documented, deterministic repair."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.sim.dynamics import advance, initial_state
from mtgym.sim.invariants import check_state
from mtgym.testing import linear_job, tiny_instance

W = 1e6


def make():
    windows = [(0, 0, 1e6), (1, 0, 1e6), (2, 0, 1e6), (3, 0, 1e6), (4, 100.0, 1e6)]
    rows = [
        linear_job("a", 100.0, 2, W),
        linear_job("b", 100.0, 4, W, min_nodes=3),
        linear_job("late", 100.0, 2, W, submit_s=50.0),
    ]
    inst = tiny_instance(5, rows, windows=windows)
    return inst, initial_state(inst)


@pytest.mark.parametrize(
    ("bad", "msg"),
    [
        (
            np.array([0, 0, 0, 0, 3], dtype=np.int32),
            r"allocation\[4\] = 3 is out of range; allowed -1 \(idle\) \.\. 2",
        ),
        (np.array([0, 0, -2, 0, 0], dtype=np.int32), r"allocation\[2\] = -2"),
        (np.zeros(4, dtype=np.int32), r"shape \(4,\); expected \(5,\)"),
        (np.zeros(5, dtype=np.float64), "not an integer type"),
    ],
)
def test_apply__out_of_space_raises_value_error(bad, msg):
    inst, s = make()
    with pytest.raises(ValueError, match=msg):
        advance(s, inst, bad)


def test_apply__repairs_unavailable_inactive_over_max_below_min():
    inst, s = make()
    # node 4 not idle yet; job 2 not submitted; job 0 over max (3 > 2); job 1 below min (1 < 3)
    a = np.array([0, 0, 0, 1, 2], dtype=np.int32)
    s2, info = advance(s, inst, a, until=10.0)
    rep = info.repair
    assert rep.repaired
    assert rep.inactive_job_nodes == 0 and rep.unavailable_nodes == 1
    assert rep.over_max_nodes == 1 and rep.below_min_jobs == 1
    assert rep.jobs == [0, 1, 2]
    assert list(s2.node_job) == [0, 0, -1, -1, -1]
    check_state(s2, inst)


def test_apply__inactive_job_is_repaired():
    inst, s = make()
    s2, info = advance(s, inst, np.array([2, 2, -1, -1, -1], dtype=np.int32), until=10.0)
    assert info.repair.inactive_job_nodes == 2
    assert np.all(s2.node_job == -1)


def test_apply__over_max_keeps_held_nodes_first():
    inst, s = make()
    s, _ = advance(s, inst, np.array([-1, -1, 0, 0, -1], dtype=np.int32), until=10.0)
    s2, info = advance(s, inst, np.array([0, 0, 0, 0, -1], dtype=np.int32), until=20.0)
    assert list(s2.node_job) == [-1, -1, 0, 0, -1]
    assert info.repair.over_max_nodes == 2
    assert s2.rescales[0] == 0  # the repaired allocation is what it held: no rescale


def test_apply__input_allocation_is_not_mutated():
    inst, s = make()
    a = np.array([0, 0, 0, 1, 2], dtype=np.int32)
    advance(s, inst, a, until=10.0)
    assert list(a) == [0, 0, 0, 1, 2]
