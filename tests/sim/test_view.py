"""SchedulerView: information limits and read-only snapshots."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mtgym.core.instance import Supply
from mtgym.policy.equal_share import EqualShare
from mtgym.policy.play import play
from mtgym.sim.dynamics import advance, initial_state
from mtgym.sim.view import InfoMode, ViewBuilder
from mtgym.testing import linear_job, tiny_instance


def test_view__shows_only_open_windows_known_ends():
    inst = tiny_instance(3, [linear_job("j", 1.0, 3, 1e5)])
    sup = Supply.from_windows(
        np.array([0, 1, 2]),
        np.array([0.0, 0.0, 50.0]),
        np.array([100.0, 200.0, 300.0]),
        np.array([True, False, True]),
    )
    inst = replace(inst, supply=sup)
    v = ViewBuilder(inst)(initial_state(inst))
    assert v.window_end.shape == (3,)
    # node 0: open, known end; node 1: open, unknown; node 2: not open yet (its known end is the future)
    assert v.window_end[0] == 100.0 and np.isinf(v.window_end[1]) and np.isinf(v.window_end[2])
    assert not any(
        isinstance(x, np.ndarray) and x.shape == (sup.num_windows,) and x.size > 3
        for x in vars(v).values()
    )


@pytest.mark.parametrize("mode", list(InfoMode))
def test_view__job_information_by_mode(mode):
    row = linear_job("j", 10.0, 2, 1e5, r_up_s=7.0)
    inst = tiny_instance(2, [row])
    jobs = replace(
        inst.jobs,
        declared_curve_tput=inst.jobs.curve_tput * 2.0,
        declared_r_up_s=inst.jobs.r_up_s + 1.0,
    )
    inst = replace(inst, jobs=jobs)
    v = ViewBuilder(inst, mode, policy_name="clairvoyant")(initial_state(inst))
    if mode in (InfoMode.ORACLE, InfoMode.CLAIRVOYANT):  # (the true ones)
        assert v.curve_tput[0, 1] == 10.0 and v.r_up_s[0] == 7.0 and v.work[0] == 1e5
        assert (v.instance is inst) == (mode is InfoMode.CLAIRVOYANT)
    elif mode is InfoMode.USER:
        assert v.curve_tput[0, 1] == 20.0 and v.r_up_s[0] == 8.0 and v.work[0] == 1e5
    else:
        assert np.isnan(v.curve_tput).all() and np.isnan(v.r_up_s).all() and np.isnan(v.work).all()


def test_view__rate_is_zero_while_pausing_and_arrays_are_read_only():
    inst = tiny_instance(2, [linear_job("j", 10.0, 2, 1e5, startup_s=30.0)])
    s, _ = advance(initial_state(inst), inst, np.array([0, 0], dtype=np.int32), until=10.0)
    v = ViewBuilder(inst, InfoMode.PROFILED)(s)
    assert s.rate[0] == 20.0 and v.rate[0] == 0.0
    s, _ = advance(s, inst, None, until=40.0)
    assert ViewBuilder(inst)(s).rate[0] == 20.0
    with pytest.raises(ValueError):
        v.node_job[0] = 1
    with pytest.raises(ValueError):
        v.available[0] = False


def test_runner__rejects_a_non_positive_decision_interval():
    inst = tiny_instance(2, [linear_job("j", 10.0, 2, 1e5)])
    with pytest.raises(ValueError, match="decision_interval_s must be > 0"):
        play(inst, EqualShare(), decision_interval_s=0.0)
