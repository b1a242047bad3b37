"""Exact progress integration, costs and events on hand-computed toy cases."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.instance import Campaigns, CostModel
from mtgym.core.types import EventKind, JobStatus, PreemptionMode, RescaleMode
from mtgym.sim.dynamics import advance, initial_state
from mtgym.sim.invariants import check_state
from mtgym.testing import linear_job, tiny_instance

W = 1e6


def alloc(n_nodes: int, mapping: dict[int, int]) -> np.ndarray:
    a = np.full(n_nodes, -1, dtype=np.int32)
    for node, job in mapping.items():
        a[node] = job
    return a


def run_to_end(state, inst, a=None):
    """Advance with a fixed allocation until the workload is done; check invariants."""
    for _ in range(100):
        new, info = advance(state, inst, a)
        check_state(new, inst, state)
        state, a = new, None
        if info.all_done or info.horizon:
            return state
    raise AssertionError("did not finish")


def test_advance__completion_time_is_exact_linear_job():
    inst = tiny_instance(4, [linear_job("j", 100.0, 4, W)])
    s = initial_state(inst)
    s = run_to_end(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}))
    assert s.status[0] == JobStatus.COMPLETED
    assert s.finish_time[0] == W / 400.0
    assert s.progress[0] == W


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # pause: 100 s at 200/s = 20,000; stall 10 s; the rest at 400/s
        (RescaleMode.PAUSE, 110.0 + (W - 20_000.0) / 400.0),
        # BFTrainer: R_up x old rate = 10 x 200 = 2,000 samples to redo at 400/s
        (RescaleMode.BFTRAINER, 100.0 + (W - 20_000.0 + 2_000.0) / 400.0),
    ],
)
def test_advance__scale_up_cost_by_mode(mode, expected):
    inst = tiny_instance(
        4, [linear_job("j", 100.0, 4, W, r_up_s=10.0, r_down_s=5.0)], costs=CostModel(rescale=mode)
    )
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(4, {0: 0, 1: 0}), until=100.0)
    assert s.time == 100.0 and s.progress[0] == 20_000.0
    s = run_to_end(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}))
    assert s.finish_time[0] == pytest.approx(expected, rel=1e-12)
    assert s.rescales[0] == 1 and s.rescale_cost_s[0] == 10.0


def test_advance__shrink_costs_r_down_and_start_costs_startup():
    row = linear_job("j", 100.0, 4, W, r_up_s=10.0, r_down_s=5.0, startup_s=30.0)
    inst = tiny_instance(4, [row])
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}), until=130.0)
    # 30 s launch, then 100 s at 400/s
    assert s.progress[0] == pytest.approx(40_000.0)
    s = run_to_end(s, inst, alloc(4, {0: 0, 1: 0}))
    assert s.finish_time[0] == pytest.approx(135.0 + (W - 40_000.0) / 200.0, rel=1e-12)
    assert s.starts[0] == 1 and s.rescales[0] == 1
    assert s.rescale_cost_s[0] == 35.0


def test_advance__swap_of_nodes_counts_as_scale_up():
    inst = tiny_instance(4, [linear_job("j", 100.0, 4, W, r_up_s=10.0, r_down_s=5.0)])
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(4, {0: 0, 1: 0}), until=100.0)
    s, _ = advance(s, inst, alloc(4, {2: 0, 3: 0}), until=200.0)
    assert s.progress[0] == pytest.approx(20_000.0 + 90.0 * 200.0)


def test_advance__preemption_rdown_pause():
    # node 3 is reclaimed at t = 500
    windows = [(0, 0, 1e6), (1, 0, 1e6), (2, 0, 1e6), (3, 0, 500.0)]
    inst = tiny_instance(4, [linear_job("j", 100.0, 4, W, r_down_s=12.0)], windows=windows)
    s = initial_state(inst)
    s, info = advance(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}))
    assert info.kinds & EventKind.NODE_RECLAIMED and s.time == 500.0
    assert s.node_job[3] == -1 and not s.available[3] and s.n_nodes[0] == 3
    assert s.preemptions[0] == 1
    s = run_to_end(s, inst)
    assert s.finish_time[0] == pytest.approx(512.0 + (W - 200_000.0) / 300.0, rel=1e-12)


def test_advance__preemption_checkpoint_redoes_lost_work():
    windows = [(0, 0, 1e6), (1, 0, 1e6), (2, 0, 1e6), (3, 0, 500.0)]
    row = linear_job("j", 100.0, 4, W, r_down_s=12.0, ckpt_every=60_000.0)
    inst = tiny_instance(
        4, [row], windows=windows, costs=CostModel(preemption=PreemptionMode.CHECKPOINT)
    )
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}))
    # progress 200,000 at the reclaim; last checkpoint at 180,000: 20,000 to redo
    assert s.preempt_lost_samples[0] == pytest.approx(20_000.0)
    assert s.debt[0] == pytest.approx(20_000.0)
    s = run_to_end(s, inst)
    assert s.finish_time[0] == pytest.approx(512.0 + (W - 200_000.0 + 20_000.0) / 300.0, rel=1e-12)


def test_advance__bftrainer_preemption_charges_rdown_times_old_rate():
    windows = [(0, 0, 1e6), (1, 0, 1e6), (2, 0, 1e6), (3, 0, 500.0)]
    inst = tiny_instance(
        4,
        [linear_job("j", 100.0, 4, W, r_down_s=12.0)],
        windows=windows,
        costs=CostModel(rescale=RescaleMode.BFTRAINER),
    )
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}))
    assert s.debt[0] == pytest.approx(12.0 * 400.0)


def test_advance__reclaim_below_min_releases_the_job():
    windows = [(0, 0, 1e6), (1, 0, 1e6), (2, 0, 1e6), (3, 0, 500.0)]
    inst = tiny_instance(4, [linear_job("j", 100.0, 4, W, min_nodes=4)], windows=windows)
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(4, {0: 0, 1: 0, 2: 0, 3: 0}))
    assert s.n_nodes[0] == 0 and np.all(s.node_job == -1) and s.rate[0] == 0.0
    assert s.available[:3].all()
    check_state(s, inst)


def test_advance__touching_windows_do_not_preempt():
    # [0, 300) and [300, 1000) on node 0 are one idle period: the job keeps the node
    windows = [(0, 0, 300.0), (0, 300.0, 1000.0), (1, 0, 1000.0)]
    inst = tiny_instance(2, [linear_job("j", 100.0, 2, W)], windows=windows, t_end=1000.0)
    s = initial_state(inst)
    s, info = advance(s, inst, alloc(2, {0: 0, 1: 0}))
    assert s.time == 1000.0 and info.horizon
    assert s.preemptions[0] == 0 and s.progress[0] == 200_000.0


def test_advance__reclaim_and_new_window_at_same_instant_elsewhere():
    # node 0 is reclaimed at 300 while node 2 opens at 300: reclaim first, then the new node
    windows = [(0, 0, 300.0), (1, 0, 1000.0), (2, 300.0, 1000.0)]
    inst = tiny_instance(3, [linear_job("j", 100.0, 2, W)], windows=windows, t_end=1000.0)
    s = initial_state(inst)
    s, info = advance(s, inst, alloc(3, {0: 0, 1: 0}))
    assert s.time == 300.0
    assert info.kinds & EventKind.NODE_RECLAIMED and info.kinds & EventKind.NODE_IDLE
    assert not s.available[0] and s.available[2] and s.node_job[2] == -1 and s.n_nodes[0] == 1


def test_advance__completion_at_the_reclaim_instant_is_not_a_preemption():
    windows = [(0, 0, 100.0), (1, 0, 1000.0)]
    row = linear_job("j", 1.0, 1, 100.0, r_down_s=12.0, ckpt_every=1e9)
    inst = tiny_instance(
        2,
        [row],
        windows=windows,
        t_end=1000.0,
        costs=CostModel(preemption=PreemptionMode.CHECKPOINT),
    )
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(2, {0: 0}))
    assert s.status[0] == JobStatus.COMPLETED and s.finish_time[0] == 100.0
    assert s.preemptions[0] == 0 and s.preempt_lost_samples[0] == 0.0


@pytest.mark.parametrize("at", [99.0, 100.0])
def test_advance__reclaim_at_a_rung_keeps_the_loss(at):
    """Regression: a reclaim at the instant a trial passes its rung used to erase the debt."""
    windows = [(0, 0, at), (1, 0, 1e4)]
    row = linear_job("j", 1.0, 2, 200.0, r_down_s=12.0, campaign=0, rungs=(0.5,), quality=1.0)
    camp = Campaigns(name=("c",), kind=("hpo",), eta=np.array([2.0]))
    inst = tiny_instance(
        2,
        [row],
        windows=windows,
        t_end=1e4,
        costs=CostModel(rescale=RescaleMode.BFTRAINER),
        campaigns=camp,
    )
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(2, {0: 0}))  # 1 sample/s: the rung (100 samples) at t = 100
    assert s.time == at and s.debt[0] == pytest.approx(12.0 * 1.0)
    assert s.status[0] == JobStatus.ACTIVE and s.preemptions[0] == 1


def test_advance__reclaim_of_every_node_clears_a_pending_pause():
    windows = [(0, 0, 10.0), (0, 20.0, 1e4), (1, 0, 1e4)]
    row = linear_job("j", 1.0, 1, 1e6, r_up_s=100.0, r_down_s=0.0)
    inst = tiny_instance(2, [row], windows=windows, t_end=1e4)
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(2, {1: 0}), until=1.0)
    s, _ = advance(s, inst, alloc(2, {0: 0}), until=15.0)  # swap: a 100 s pause, then reclaimed
    assert s.n_nodes[0] == 0 and s.stall_until[0] == -np.inf
    check_state(s, inst)


def test_advance__bftrainer_stop_is_charged_like_a_shrink():
    row = linear_job("j", 100.0, 2, W, r_up_s=10.0, r_down_s=5.0)
    inst = tiny_instance(2, [row], costs=CostModel(rescale=RescaleMode.BFTRAINER))
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(2, {0: 0}), until=100.0)
    s, _ = advance(s, inst, alloc(2, {}), until=100.0)
    assert s.debt[0] == 5.0 * 100.0 and s.rescales[0] == 1
    s, _ = advance(s, inst, alloc(2, {0: 0, 1: 0}), until=200.0)
    # the debt is repaid first on restart: 100 s at 200/s minus 500 samples
    assert s.progress[0] == pytest.approx(10_000.0 + 20_000.0 - 500.0)


def test_advance__windows_cut_at_the_horizon_are_not_preemptions():
    inst = tiny_instance(2, [linear_job("j", 100.0, 2, W, r_down_s=12.0)], t_end=500.0)
    s = initial_state(inst)
    s, info = advance(s, inst, alloc(2, {0: 0, 1: 0}))
    assert info.horizon and s.preemptions[0] == 0 and s.preempt_cost_s[0] == 0.0


def test_advance__milestone_tolerance_is_relative_to_work_not_clock():
    t0 = 1.6e9
    rows = [
        linear_job("a", 1.0, 1, 100.0, submit_s=t0),
        linear_job("b", 1.0, 1, 101.0, submit_s=t0),
    ]
    inst = tiny_instance(2, rows, windows=[(0, t0, t0 + 1e4), (1, t0, t0 + 1e4)], t_end=t0 + 1e4)
    from dataclasses import replace

    inst = replace(inst, t_start=t0)
    s = initial_state(inst)
    s, _ = advance(s, inst, alloc(2, {0: 0, 1: 1}))
    assert s.status.tolist() == [JobStatus.COMPLETED, JobStatus.ACTIVE]
    s, _ = advance(s, inst, None)
    assert s.finish_time[1] - t0 == 101.0


def test_advance__arrival_stops_for_a_decision():
    rows = [linear_job("a", 100.0, 2, W), linear_job("b", 100.0, 2, W, submit_s=250.0)]
    inst = tiny_instance(2, rows)
    s = initial_state(inst)
    assert s.status[0] == JobStatus.ACTIVE and s.status[1] == JobStatus.FUTURE
    s, info = advance(s, inst, alloc(2, {0: 0, 1: 0}))
    assert s.time == 250.0 and info.kinds & EventKind.JOB_ARRIVED and info.arrivals == 1
    assert s.status[1] == JobStatus.ACTIVE and s.progress[0] == 50_000.0


def test_advance__horizon_truncates_exactly():
    inst = tiny_instance(2, [linear_job("j", 100.0, 2, W)], t_end=123.5)
    s = initial_state(inst)
    s, info = advance(s, inst, alloc(2, {0: 0, 1: 0}))
    assert info.horizon and s.time == 123.5 and s.progress[0] == 123.5 * 200.0
    assert s.offered_node_s == 2 * 123.5 and s.allocated_node_s == 2 * 123.5


def test_advance__campaign_stops_weak_trial_at_rung():
    rows = [
        linear_job("a", 100.0, 1, W, campaign=0, rungs=(0.5,), quality=1.0),
        linear_job("b", 100.0, 1, W, campaign=0, rungs=(0.5,), quality=2.0),
        linear_job("c", 100.0, 1, W, campaign=0, rungs=(0.5,), quality=0.0),
    ]
    camp = Campaigns(name=("hpo0",), kind=("hpo",), eta=np.array([2.0]))
    inst = tiny_instance(3, rows, campaigns=camp)
    s = initial_state(inst)
    s, info = advance(s, inst, alloc(3, {0: 0, 1: 1, 2: 2}))
    # all three reach the rung at W/2/100 s; in index order: a kept (1 of 1), b kept (best of 2),
    # c ranks 3rd of 3 and only ceil(3/2) = 2 go on
    assert s.time == W / 200.0
    assert info.kinds & EventKind.TRIAL_STOPPED and info.stops == 1
    assert list(s.status) == [JobStatus.ACTIVE, JobStatus.ACTIVE, JobStatus.STOPPED]
    assert s.node_job[2] == -1 and s.milestone[0] == W
    s = run_to_end(s, inst)
    assert s.finish_time[0] == W / 100.0 and s.status[1] == JobStatus.COMPLETED


def test_advance__is_pure_with_copy():
    inst = tiny_instance(2, [linear_job("j", 100.0, 2, W)])
    s0 = initial_state(inst)
    before = {
        k: (v.copy() if isinstance(v, np.ndarray) else v)
        for k, v in vars(s0).items()
        if k != "timers"
    }
    s1, _ = advance(s0, inst, alloc(2, {0: 0, 1: 0}), until=50.0)
    for k, v in before.items():
        cur = getattr(s0, k)
        assert np.array_equal(cur, v, equal_nan=True) if isinstance(v, np.ndarray) else cur == v, k
    assert s1.progress[0] == 10_000.0


def test_advance__decision_tick_via_until_integrates_between():
    inst = tiny_instance(2, [linear_job("j", 100.0, 2, W)])
    s = initial_state(inst)
    a = alloc(2, {0: 0, 1: 0})
    for k in range(1, 11):
        s, _ = advance(s, inst, a, until=10.0 * k)
    assert s.time == 100.0 and s.progress[0] == pytest.approx(20_000.0)
    assert s.rescales[0] == 0 and s.starts[0] == 1


def test_advance__timers_stop_the_call_and_count_as_events():
    """A due timer ends ``advance`` (TIMER is a decision event) exactly at its time, with
    the progress integrated to it; timers that do not stop the call are consumed in passing.
    """
    inst = tiny_instance(2, [linear_job("j", 100.0, 2, W)])
    s = initial_state(inst)
    s.timers.push(50.0, "a")
    s.timers.push(50.0, "b")
    s.timers.push(80.0, "c")
    events0 = s.events
    s, info = advance(s, inst, alloc(2, {0: 0, 1: 0}), copy=False)
    assert info.t1 == 50.0 and info.kinds & EventKind.TIMER
    assert s.events == events0 + 2 and len(s.timers) == 1  # both timers at 50 s popped
    assert s.progress[0] == 50.0 * 200.0 and info.samples == 50.0 * 200.0
    # Not a stop kind here: the timer at 80 s is consumed, the call runs to the completion.
    s, info = advance(s, inst, None, stop_on=EventKind.JOB_COMPLETED, copy=False)
    assert len(s.timers) == 0 and s.events == events0 + 3  # the timer (milestones: not here)
    assert info.kinds == EventKind.TIMER | EventKind.JOB_COMPLETED
    assert s.status[0] == JobStatus.COMPLETED and s.finish_time[0] == W / 200.0
    check_state(s, inst)
