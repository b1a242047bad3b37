"""Invariants under random allocations (hypothesis), and the checker catching corruption."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtgym.core.errors import InvariantError
from mtgym.core.instance import Campaigns, CostModel
from mtgym.core.types import AppClass, JobStatus, PreemptionMode, RescaleMode
from mtgym.generate.default import default_generator
from mtgym.generate.workload import JobRow
from mtgym.policy.equal_share import EqualShare
from mtgym.sim.dynamics import advance, initial_state
from mtgym.sim.invariants import check_state
from mtgym.testing import RawRandomPolicy, checked_rollout, linear_job, tiny_instance


@st.composite
def instances(draw):
    n = draw(st.integers(1, 10))
    windows = []
    for node in range(n):
        cuts = sorted(draw(st.lists(st.integers(0, 2000), min_size=0, max_size=6, unique=True)))
        for a, b in zip(cuts[::2], cuts[1::2], strict=False):
            if b > a:
                windows.append((node, float(a), float(b)))
    if not windows:
        windows = [(0, 0.0, 500.0)]
    n_jobs = draw(st.integers(1, 5))
    camp = draw(st.booleans())
    rows: list[JobRow] = []
    for j in range(n_jobs):
        mx = draw(st.integers(1, 6))
        mn = draw(st.integers(1, mx))
        pts = np.array(sorted(draw(st.lists(st.floats(1, 500), min_size=mx, max_size=mx))))
        row = linear_job(
            f"j{j}",
            1.0,
            mx,
            draw(st.floats(1e3, 2e5)),
            submit_s=float(draw(st.integers(0, 800))),
            min_nodes=mn,
            r_up_s=draw(st.floats(0, 40)),
            r_down_s=draw(st.floats(0, 40)),
            startup_s=draw(st.floats(0, 40)),
            ckpt_every=draw(st.sampled_from([np.inf, 5e3, 2e4])),
            campaign=0 if camp else -1,
            rungs=(0.3, 0.6) if camp else (),
            quality=draw(st.floats(-2, 2)),
            app_class=AppClass(draw(st.integers(0, 3))),
        )
        row.curve_tput = np.concatenate([[0.0], pts])
        rows.append(row)
    costs = CostModel(
        draw(st.sampled_from(list(RescaleMode))), draw(st.sampled_from(list(PreemptionMode)))
    )
    campaigns = Campaigns(("c",), ("hpo",), np.array([2.0])) if camp else None
    return tiny_instance(n, rows, windows=windows, t_end=2500.0, costs=costs, campaigns=campaigns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(), seed=st.integers(0, 2**16))
def test_invariants__hold_under_random_allocations(inst, seed):
    traj = checked_rollout(inst, RawRandomPolicy(seed), max_steps=400)
    final = traj[-1][0]
    # conservation: per-step samples add up to the final progress
    total = sum(info.samples for _, info in traj)
    assert total == pytest.approx(final.progress.sum(), rel=1e-9, abs=1e-6)
    done = final.status == JobStatus.COMPLETED
    assert np.all(final.finish_time[done] >= inst.jobs.submit_s[done])


@settings(max_examples=20, deadline=None)
@given(inst=instances())
def test_invariants__hold_under_equal_share(inst):
    checked_rollout(inst, EqualShare(max_jobs=3), max_steps=400)


def test_invariants__default_scenario_random_policy():
    inst = default_generator()(3)
    traj = checked_rollout(inst, RawRandomPolicy(7), max_steps=3000)
    assert traj[-1][0].time > 0


def _running_state():
    inst = tiny_instance(3, [linear_job("a", 10.0, 3, 1e5), linear_job("b", 10.0, 3, 1e5)])
    s, _ = advance(initial_state(inst), inst, np.array([0, 0, 1], dtype=np.int32), until=10.0)
    check_state(s, inst)
    return inst, s


@pytest.mark.parametrize(
    ("corrupt", "match"),
    [
        (lambda s: s.available.__setitem__(0, False), "not idle"),
        (lambda s: s.n_nodes.__setitem__(0, 3), "n_nodes=3"),
        (
            lambda s: s.status.__setitem__(1, JobStatus.COMPLETED),
            "holds nodes with status COMPLETED",
        ),
        (lambda s: s.progress.__setitem__(0, -5.0), "progress outside"),
        (lambda s: setattr(s, "unused_node_s", s.unused_node_s + 5.0), "offered node-s"),
        (
            lambda s: (
                s.rate.__setitem__(0, 0.0)
                or s.rate.__setitem__(1, 0.0)
                or s.node_job.__setitem__(2, -1)
                or s.n_nodes.__setitem__(1, 0)
                or s.rate.__setitem__(1, 3.0)
            ),
            "without nodes has a non-zero rate",
        ),
    ],
)
def test_check_state__detects_corruption(corrupt, match):
    inst, s = _running_state()
    corrupt(s)
    with pytest.raises(InvariantError, match=match):
        check_state(s, inst)


def test_check_state__detects_decreasing_progress_and_bounds():
    inst, s = _running_state()
    later = s.copy()
    later.progress[0] -= 1.0
    with pytest.raises(InvariantError, match="progress decreased"):
        check_state(later, inst, s)
    inst2 = tiny_instance(3, [linear_job("a", 10.0, 3, 1e5, min_nodes=2)])
    s2 = initial_state(inst2)
    s2.node_job[0] = 0
    s2.n_nodes[0] = 1
    s2.status[0] = JobStatus.ACTIVE
    with pytest.raises(InvariantError, match=r"outside \[2, 3\]"):
        check_state(s2, inst2)
