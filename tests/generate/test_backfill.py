from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtgym.core.errors import ConfigError, DataError
from mtgym.core.instance import Supply
from mtgym.generate.backfill import Schedule, easy_backfill, idle_windows
from mtgym.generate.supply import SWFSupply
from mtgym.readers.swf import SWFLog, read_swf

NAN = float("nan")


def make_log(*jobs: tuple[float, float, int] | tuple[float, float, int, float]) -> SWFLog:
    """Jobs as (submit, run, nodes[, requested time])."""
    submit = np.array([j[0] for j in jobs], dtype=float)
    run = np.array([j[1] for j in jobs], dtype=float)
    nodes = np.array([j[2] for j in jobs], dtype=np.int64)
    req = np.array([j[3] if len(j) > 3 else j[1] for j in jobs], dtype=float)
    return SWFLog.from_arrays(submit, run, nodes, req)


def node_sets(s: Schedule) -> list[list[int]]:
    return [s.nodes_of(i).tolist() for i in range(s.num_jobs)]


def windows(sup: Supply) -> list[tuple[int, float, float, bool]]:
    order = np.lexsort((sup.start_s, sup.node))
    return [
        (int(sup.node[w]), float(sup.start_s[w]), float(sup.end_s[w]), bool(sup.end_known[w]))
        for w in order
    ]


# -- hand-made logs with known schedules (4 nodes) ----------------------------------------
# A: J0 holds 2 nodes until 10; J1 (4 nodes) is blocked and reserved for 10 with no extra
# nodes; J2 (2 nodes, ends at 7 <= 10) backfills into the hole on nodes 2-3.
LOG_A = make_log((0, 10, 2), (1, 5, 4), (2, 5, 2))


def test_easy_backfill__short_job_backfills_before_reservation():
    s = easy_backfill(LOG_A, 4)
    assert s.start_s.tolist() == [0.0, 10.0, 2.0]
    assert s.end_s.tolist() == [10.0, 15.0, 7.0]
    assert node_sets(s) == [[0, 1], [0, 1, 2, 3], [2, 3]]
    assert s.reserved_s.tolist()[1] == 10.0
    assert s.reserved_at_s.tolist()[1] == 1.0
    assert math.isnan(s.reserved_s[0]) and math.isnan(s.reserved_s[2])
    # J1 started at the reservation fixed at t=1.
    assert s.start_known_s.tolist()[1] == 1.0
    assert s.dropped == 0


def test_easy_backfill__job_that_would_delay_head_waits():
    # J2 (2 nodes, 20 s) fits at t=2 but would run past the shadow time 10 and there are
    # no extra nodes: it waits until J1 (10-15) is done.
    s = easy_backfill(make_log((0, 10, 2), (1, 5, 4), (2, 20, 2)), 4)
    assert s.start_s.tolist() == [0.0, 10.0, 15.0]
    assert node_sets(s) == [[0, 1], [0, 1, 2, 3], [0, 1]]
    assert s.reserved_s.tolist()[1:] == [10.0, 15.0]
    assert s.reserved_at_s.tolist()[1:] == [1.0, 10.0]


def test_easy_backfill__long_job_backfills_on_extra_nodes():
    # J1 needs 3 of the 4 nodes free at 10: one extra node. J2 (1 node, 100 s) runs past 10
    # on it; J3 (1 node, 100 s) finds no extra node left and waits for J1 to end.
    s = easy_backfill(make_log((0, 10, 2), (1, 5, 3), (2, 100, 1), (3, 100, 1)), 4)
    assert s.start_s.tolist() == [0.0, 10.0, 2.0, 15.0]
    assert s.end_s.tolist() == [10.0, 15.0, 102.0, 115.0]
    assert node_sets(s) == [[0, 1], [0, 1, 3], [2], [0]]
    assert s.reserved_s.tolist()[1] == 10.0
    assert s.reserved_s.tolist()[3] == 15.0


def test_easy_backfill__head_starts_early_when_a_job_ends_before_its_estimate():
    # J0 requests 10 s but ends at 5: J1 is reserved for 10 yet starts at 5.
    s = easy_backfill(make_log((0, 5, 2, 10), (1, 5, 4)), 4)
    assert s.start_s.tolist() == [0.0, 5.0]
    assert s.reserved_s.tolist()[1] == 10.0
    assert math.isnan(s.start_known_s[1])  # it did not start at its reservation


def test_easy_backfill__estimate_used_for_backfill_decisions():
    # J0 really ends at 4 but requests 10, so J1's reservation is 10 and J2 (requests 9 s,
    # runs 3 s) is refused at t=2 (2 + 9 > 10) although it would have finished in time.
    s = easy_backfill(make_log((0, 4, 2, 10), (1, 5, 4), (2, 3, 2, 9)), 4)
    assert s.start_s.tolist() == [0.0, 4.0, 9.0]


def test_easy_backfill__jobs_killed_at_requested_time():
    s = easy_backfill(make_log((0, 50, 1, 20)), 1)
    assert s.end_s.tolist() == [20.0]
    assert s.req_end_s.tolist() == [20.0]


def test_easy_backfill__fcfs_when_nothing_can_backfill():
    s = easy_backfill(make_log((0, 10, 3), (0, 10, 3), (0, 10, 3)), 4)
    assert s.start_s.tolist() == [0.0, 10.0, 20.0]


def test_easy_backfill__jobs_ending_together_free_their_nodes_together():
    # J0 and J1 both end at 10; J2 (3 nodes) is reserved for 10 with 1 extra node, which
    # lets J3 (1 node, long) backfill.
    s = easy_backfill(make_log((0, 10, 1), (0, 10, 2), (1, 5, 3), (2, 50, 1)), 4)
    assert s.start_s.tolist() == [0.0, 0.0, 10.0, 2.0]
    assert node_sets(s)[2:] == [[0, 1, 2], [3]]


def test_easy_backfill__jobs_larger_than_machine_dropped_and_counted():
    s = easy_backfill(make_log((0, 10, 5), (1, 10, 4), (2, 10, 9)), 4)
    assert s.dropped == 2
    assert s.job.tolist() == [1]
    assert s.start_s.tolist() == [1.0]


def test_easy_backfill__t0_t1_select_submissions():
    log = make_log((0, 10, 4), (5, 10, 4), (20, 10, 4), (30, 10, 9))
    s = easy_backfill(log, 4, t0=5, t1=30)
    assert s.job.tolist() == [1, 2]
    assert s.start_s.tolist() == [5.0, 20.0]  # the machine starts empty at t0
    assert s.dropped == 0


def test_easy_backfill__rejects_empty_machine():
    with pytest.raises(ConfigError):
        easy_backfill(LOG_A, 0)


def test_easy_backfill__empty_log():
    s = easy_backfill(make_log(), 3)
    assert s.num_jobs == 0
    assert s.node_ptr.tolist() == [0]
    sup = idle_windows(s, 3, 0.0, 10.0)
    assert windows(sup) == [(n, 0.0, 10.0, False) for n in range(3)]


# -- idle windows ---------------------------------------------------------------------
def test_idle_windows__hand_schedule_with_known_ends():
    s = easy_backfill(LOG_A, 4)
    sup = idle_windows(s, 4, 0.0, 20.0, known_ends=True)
    assert windows(sup) == [
        (0, 15.0, 20.0, False),
        (1, 15.0, 20.0, False),
        (2, 0.0, 2.0, False),  # ended by a backfilled job: a surprise
        (2, 7.0, 10.0, True),  # opened at 7, after J1's reservation for 10 was fixed at 1
        (2, 15.0, 20.0, False),  # ended by the span
        (3, 0.0, 2.0, False),
        (3, 7.0, 10.0, True),
        (3, 15.0, 20.0, False),
    ]


def test_idle_windows__without_known_ends_every_end_is_a_surprise():
    sup = idle_windows(easy_backfill(LOG_A, 4), 4, 0.0, 20.0)
    assert sup.num_windows == 8
    assert not sup.end_known.any()


def test_idle_windows__window_opened_before_the_reservation_is_a_surprise():
    # Nodes 2-3 idle from 0; J1's reservation for 10 is only made at 1.
    s = easy_backfill(make_log((0, 10, 2), (1, 5, 4), (2, 20, 2)), 4)
    sup = idle_windows(s, 4, 0.0, 15.0, known_ends=True)
    assert windows(sup) == [(2, 0.0, 10.0, False), (3, 0.0, 10.0, False)]


def test_idle_windows__drain_for_a_reserved_job_has_known_ends():
    # J0 (2 nodes) ends at 5, J1 (2 nodes) at 10; J2 (4 nodes) reserved at 1 for 10:
    # nodes 0-1 drain on [5, 10) with a known end.
    s = easy_backfill(make_log((0, 5, 2), (0, 10, 2), (1, 5, 4)), 4)
    sup = idle_windows(s, 4, 0.0, 15.0, known_ends=True)
    assert windows(sup) == [(0, 5.0, 10.0, True), (1, 5.0, 10.0, True)]


def test_idle_windows__reservation_that_moved_earlier_is_known_from_the_move():
    # J0 requests 20 s but ends at 4; J1 (1 node, 10 s, ends at 10); J2 (3 nodes) is
    # reserved at 1 for 20, then at 4 (J0's early end) for 10. Node 1 and 2 drain on
    # [4, 10): known, since the reservation for 10 was fixed at 4.
    s = easy_backfill(make_log((0, 4, 2, 20), (0, 10, 1), (1, 5, 3)), 3)
    assert s.start_s.tolist() == [0.0, 0.0, 10.0]
    assert s.reserved_s.tolist()[2] == 20.0
    assert s.start_known_s.tolist()[2] == 4.0
    sup = idle_windows(s, 3, 0.0, 15.0, known_ends=True)
    assert windows(sup) == [(0, 4.0, 10.0, True), (1, 4.0, 10.0, True)]


def test_idle_windows__clipped_to_span_and_extra_nodes_idle():
    s = easy_backfill(LOG_A, 4)
    sup = idle_windows(s, 6, 1.0, 8.0, known_ends=True)
    assert windows(sup) == [
        (2, 1.0, 2.0, False),
        (2, 7.0, 8.0, False),  # its known end (10) is cut by the span
        (3, 1.0, 2.0, False),
        (3, 7.0, 8.0, False),
        (4, 1.0, 8.0, False),
        (5, 1.0, 8.0, False),
    ]


def test_idle_windows__rejects_bad_span_and_too_few_nodes():
    s = easy_backfill(LOG_A, 4)
    with pytest.raises(ConfigError):
        idle_windows(s, 4, 5.0, 5.0)
    with pytest.raises(ConfigError):
        idle_windows(s, 4, 0.0, float("inf"))
    with pytest.raises(ConfigError):
        idle_windows(s, 3, 0.0, 10.0)


def test_schedule__utilisation_of_hand_schedule():
    s = easy_backfill(LOG_A, 4)
    # busy: J0 2*10, J1 4*5, J2 2*5 = 50 node-s of 4*20
    assert s.busy_node_seconds(0.0, 20.0) == 50.0
    assert s.utilisation(0.0, 20.0) == pytest.approx(50 / 80)
    assert s.wait_s.tolist() == [0.0, 9.0, 0.0]


# -- SWFSupply.windows --------------------------------------------------------------------
def test_swf_supply_windows__defaults_from_header(tmp_path):
    p = tmp_path / "a.swf"
    p.write_text(
        "; MaxNodes: 4\n"
        "1 0 -1 10 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
        "2 1 -1 5 4 -1 -1 4 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
        "3 2 -1 5 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    )
    sup = SWFSupply(p, known_ends=True).windows()  # span [0, 2): the last submit
    assert windows(sup) == [(2, 0.0, 2.0, False), (3, 0.0, 2.0, False)]
    sup = SWFSupply(p, known_ends=True).windows(t0=0.0, t1=20.0)
    assert windows(sup) == windows(idle_windows(easy_backfill(LOG_A, 4), 4, 0, 20, known_ends=True))
    sup = SWFSupply(p, known_ends=False).windows(5, t0=0.0, t1=20.0)
    assert set(sup.node.tolist()) == {0, 1, 2, 3, 4}


def test_swf_supply_windows__without_max_nodes_needs_num_nodes(tmp_path):
    p = tmp_path / "b.swf"
    p.write_text("1 0 -1 10 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    with pytest.raises(DataError) as info:
        SWFSupply(p).windows(t1=10.0)
    assert info.value.field == "MaxNodes"
    assert SWFSupply(p).windows(2, t1=20.0).offered_node_seconds(0, 20) == 20.0


# -- properties on random small logs --------------------------------------------------
def reference_easy(log: SWFLog, n: int) -> tuple[list[float], list[list[int]]]:
    """A slow, time-stepped EASY on integer times: at every second, recompute everything."""
    J = log.num_jobs
    start: list[float] = [NAN] * J
    nodes: list[list[int]] = [[] for _ in range(J)]
    free = [True] * n
    running: list[int] = []
    queue: list[int] = []
    run_for = np.minimum(log.run_s, log.req_time_s)
    t = 0
    while any(math.isnan(x) for x in start) or running:
        for j in [j for j in running if start[j] + run_for[j] == t]:
            running.remove(j)
            for k in nodes[j]:
                free[k] = True
        queue += [j for j in range(J) if log.submit_s[j] == t]

        def go(j: int, t: int) -> None:
            nodes[j] = [k for k in range(n) if free[k]][: log.nodes[j]]
            for k in nodes[j]:
                free[k] = False
            start[j] = t
            running.append(j)

        while queue and log.nodes[queue[0]] <= sum(free):
            go(queue.pop(0), t)
        if queue:
            want = log.nodes[queue[0]]
            ends = sorted({start[j] + log.req_time_s[j] for j in running})

            def avail(T: float) -> int:
                return sum(free) + sum(
                    int(log.nodes[j]) for j in running if start[j] + log.req_time_s[j] <= T
                )

            shadow = next(T for T in ends if avail(T) >= want)
            extra = avail(shadow) - want
            for j in list(queue[1:]):
                k = log.nodes[j]
                if k > sum(free):
                    continue
                if t + log.req_time_s[j] <= shadow:
                    go(j, t)
                    queue.remove(j)
                elif k <= extra:
                    go(j, t)
                    queue.remove(j)
                    extra -= k
        t += 1
    return start, nodes


@st.composite
def small_logs(draw: st.DrawFn) -> tuple[SWFLog, int]:
    n = draw(st.integers(1, 6))
    J = draw(st.integers(0, 18))
    submit = draw(st.lists(st.integers(0, 40), min_size=J, max_size=J))
    run = draw(st.lists(st.integers(1, 25), min_size=J, max_size=J))
    slack = draw(st.lists(st.integers(-5, 15), min_size=J, max_size=J))
    size = draw(st.lists(st.integers(1, n), min_size=J, max_size=J))
    req = [max(1, r + s) for r, s in zip(run, slack, strict=True)]
    log = SWFLog.from_arrays(
        np.array(submit, float), np.array(run, float), np.array(size), np.array(req, float)
    )
    return log, n


PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(small_logs())
def test_easy_backfill__matches_time_stepped_reference(case):
    log, n = case
    s = easy_backfill(log, n)
    start, nodes = reference_easy(log, n)
    assert s.start_s.tolist() == start
    assert node_sets(s) == nodes


@PROPS
@given(small_logs())
def test_easy_backfill__schedule_invariants(case):
    log, n = case
    s = easy_backfill(log, n)
    assert s.num_jobs == log.num_jobs
    # no job starts before its submission
    assert np.all(s.start_s >= s.submit_s)
    # the head never starts after the reservation it was given
    has = ~np.isnan(s.reserved_s)
    assert np.all(s.start_s[has] <= s.reserved_s[has])
    assert np.all(s.reserved_at_s[has] >= s.submit_s[has])
    known = ~np.isnan(s.start_known_s)
    assert np.all(has[known])
    assert np.all(s.start_known_s[known] <= s.start_s[known])
    # each job holds the right number of distinct nodes; no node runs two jobs at once
    for i in range(s.num_jobs):
        got = s.nodes_of(i)
        assert got.size == s.nodes[i] == np.unique(got).size
    for k in range(n):
        on = [i for i in range(s.num_jobs) if k in s.nodes_of(i)]
        spans = sorted((s.start_s[i], s.end_s[i]) for i in on)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


@PROPS
@given(small_logs(), st.integers(0, 30), st.integers(1, 60), st.booleans())
def test_idle_windows__utilisation_equals_one_minus_idle_fraction(case, t0, length, known_ends):
    log, n = case
    t1 = t0 + length
    s = easy_backfill(log, n)
    sup = idle_windows(s, n, float(t0), float(t1), known_ends=known_ends)
    idle = sup.offered_node_seconds(t0, t1) / (n * (t1 - t0))
    assert s.utilisation(t0, t1) == pytest.approx(1.0 - idle, abs=1e-12)
    assert sup.start_s.size == 0 or (sup.start_s.min() >= t0 and sup.end_s.max() <= t1)
    # no window overlaps a job on its node; a known end is a reserved job's start there
    for w in range(sup.num_windows):
        k, a, b = int(sup.node[w]), sup.start_s[w], sup.end_s[w]
        for i in range(s.num_jobs):
            if k in s.nodes_of(i):
                assert s.end_s[i] <= a or s.start_s[i] >= b
        if sup.end_known[w]:
            enders = [i for i in range(s.num_jobs) if s.start_s[i] == b and k in s.nodes_of(i)]
            assert len(enders) == 1
            assert s.start_known_s[enders[0]] <= a


# -- the real Lublin log ----------------------------------------------------------------
def test_easy_backfill__lublin_log(shared_data):
    log = read_swf(shared_data / "swf" / "lublin_256.swf")
    assert log.max_nodes == 256
    s = easy_backfill(log, 256)
    assert s.num_jobs == 10_000
    assert s.dropped == 0
    assert np.all(s.start_s >= s.submit_s)
    has = ~np.isnan(s.reserved_s)
    assert has.any() and np.all(s.start_s[has] <= s.reserved_s[has])
    t0, t1 = 0.0, float(log.submit_s[-1])
    util = s.utilisation(t0, t1)
    assert 0.3 < util < 1.0
    sup = idle_windows(s, 256, t0, t1, known_ends=True)
    idle = sup.offered_node_seconds(t0, t1) / (256 * (t1 - t0))
    assert util == pytest.approx(1.0 - idle, abs=1e-9)
    assert sup.num_windows > 1000
    assert 0 < sup.end_known.sum() < sup.num_windows
    # node-seconds are conserved: the busy ones are the jobs' node-seconds
    assert s.busy_node_seconds(-np.inf, np.inf) == pytest.approx(
        float(np.dot(log.run_s, log.nodes))
    )
