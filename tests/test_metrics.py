"""mtgym.metrics: makespan (censored), completed jobs, common-job JCT and makespan."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.types import JobStatus
from mtgym.metrics import common_metrics, completion_times, compute_metrics
from mtgym.sim.dynamics import initial_state
from mtgym.testing import linear_job, tiny_instance


def three_jobs():
    rows = [
        linear_job(f"j{i}", 1.0, 2, 100.0, submit_s=s) for i, s in enumerate((10.0, 20.0, 50.0))
    ]
    return tiny_instance(2, rows, t_end=1000.0)


def state_at(inst, t, status, finish):
    st = initial_state(inst)
    st.time = t
    st.status = np.array(status, dtype=np.int8)
    st.finish_time = np.array(finish, dtype=np.float64)
    done = st.status == JobStatus.COMPLETED
    st.progress = np.where(done, inst.jobs.work, 0.0)
    return st


def test_makespan__all_finished_is_last_finish_minus_first_submission():
    inst = three_jobs()
    C, S = JobStatus.COMPLETED, JobStatus.STOPPED
    st = state_at(inst, 400.0, [C, S, C], [300.0, 150.0, 400.0])
    m = compute_metrics(st, inst)
    assert m.makespan == 400.0 - 10.0 and m.makespan_censored == 0
    assert m.jobs_completed == 2 and m.jobs_stopped == 1
    assert m.jct_mean == pytest.approx(((300 - 10) + (400 - 50)) / 2)


def test_makespan__not_all_finished_is_censored_at_the_run_end():
    inst = three_jobs()
    C, A = JobStatus.COMPLETED, JobStatus.ACTIVE
    st = state_at(inst, 1000.0, [C, A, A], [300.0, np.nan, np.nan])
    m = compute_metrics(st, inst)
    assert m.makespan == 1000.0 - 10.0 and m.makespan_censored == 1
    assert m.jobs_completed == 1 and m.jct_mean == 290.0


def test_completion_times__only_completed_jobs():
    inst = three_jobs()
    C, S, A = JobStatus.COMPLETED, JobStatus.STOPPED, JobStatus.ACTIVE
    st = state_at(inst, 500.0, [C, S, A], [300.0, 150.0, np.nan])
    got = completion_times(st)
    assert got[0] == 300.0 and np.isnan(got[1]) and np.isnan(got[2])


def test_common_metrics__restricts_to_jobs_every_policy_completed():
    submit = np.array([0.0, 10.0, 20.0, 30.0])
    nan = np.nan
    fast = np.array([100.0, 110.0, 120.0, nan])  # completes 0, 1, 2
    slow = np.array([400.0, nan, 220.0, 500.0])  # completes 0, 2, 3
    a, b = common_metrics([fast, slow], submit)
    # common: jobs 0 and 2
    assert a.jobs_common == b.jobs_common == 2
    assert a.jct_common_mean == pytest.approx(((100 - 0) + (120 - 20)) / 2)
    assert b.jct_common_mean == pytest.approx(((400 - 0) + (220 - 20)) / 2)
    assert a.makespan_common == 120.0 and b.makespan_common == 400.0
    # the plain means over own completions would rank them on different job sets
    assert np.nanmean(fast - submit) < np.nanmean(slow - submit)


def test_common_metrics__no_common_job_and_bad_shapes():
    (a, b) = common_metrics([np.array([1.0, np.nan]), np.array([np.nan, 2.0])], np.zeros(2))
    assert a.jobs_common == 0 and np.isnan(a.jct_common_mean) and np.isnan(b.makespan_common)
    with pytest.raises(ValueError, match="policy #1"):
        common_metrics([np.zeros(2), np.zeros(3)], np.zeros(2))


# -- the headline: normalised throughput, its efficiency, Jain's fairness ------------------
def _two_models(fast_nodes: list[int], slow_nodes: list[int], horizon: float = 3600.0):
    """4 identical nodes in one group; ``fast`` trains 1,000 samples/s per node and ``slow``
    1 (two models 1,000x apart), both scaling perfectly to 2 nodes; a fixed plan gives each
    its nodes for the whole run. Returns the final metrics.
    """
    from dataclasses import replace

    from mtgym.policy.play import play
    from mtgym.testing import ScriptPolicy

    rows = [
        replace(linear_job("fast", 1000.0, 2, 1e12), model="fast-model"),
        replace(linear_job("slow", 1.0, 2, 1e12), model="slow-model"),
    ]
    inst = tiny_instance(4, rows, t_end=horizon, group_size=4)
    plan = {**dict.fromkeys(fast_nodes, 0), **dict.fromkeys(slow_nodes, 1)}
    return inst, play(inst, ScriptPolicy([(0.0, plan)])).metrics


def test_headline__does_not_rank_allocations_by_model():
    """Two allocations differing only in which model gets the third node: the raw sum ranks
    them by model (the fast one 2x), the headline scores both 3 best-node equivalents.
    """
    _, fast_gets_it = _two_models([0, 1], [2])
    _, slow_gets_it = _two_models([0], [1, 2])
    assert fast_gets_it.throughput == pytest.approx(2001.0)
    assert slow_gets_it.throughput == pytest.approx(1002.0)
    assert fast_gets_it.normalized_throughput == pytest.approx(3.0, rel=1e-12)
    assert slow_gets_it.normalized_throughput == pytest.approx(
        fast_gets_it.normalized_throughput, rel=1e-12
    )
    # the same rates (2 and 1 best-node equivalents), so the same fairness
    assert fast_gets_it.fairness_jain == pytest.approx(slow_gets_it.fairness_jain)
    assert fast_gets_it.fairness_jain == pytest.approx(9 / 10)
    # 3 of the 4 offered nodes train at their reference rates
    assert fast_gets_it.normalized_efficiency == pytest.approx(3 / 4)


def test_headline__a_perfectly_scaling_job_on_best_nodes_scores_its_node_count():
    from mtgym.metrics import reference_rate
    from mtgym.policy.play import play
    from mtgym.testing import ScriptPolicy

    inst = tiny_instance(4, [linear_job("a", 7.0, 4, 1e12)], t_end=3600.0, group_size=4)
    assert reference_rate(inst).tolist() == [7.0]
    m = play(inst, ScriptPolicy([(0.0, dict.fromkeys(range(4), 0))])).metrics
    assert m.normalized_throughput == pytest.approx(4.0, rel=1e-12)
    assert m.normalized_samples == pytest.approx(4.0 * 3600.0, rel=1e-12)
    assert m.normalized_efficiency == pytest.approx(1.0, rel=1e-12)
    assert m.fairness_jain == 1.0  # one job: all alike


def test_headline__on_a_slower_node_type_scores_below_its_node_count():
    from mtgym.policy.play import play
    from mtgym.testing import ScriptPolicy

    # nodes 2-3 run every class 2x slower: the best node type is nodes 0-1's
    sd = np.ones((4, 4))
    sd[2:] = 2.0
    inst = tiny_instance(
        4, [linear_job("a", 7.0, 2, 1e12)], t_end=3600.0, group_size=4, slowdown=sd
    )
    fast = play(inst, ScriptPolicy([(0.0, {0: 0, 1: 0})])).metrics
    slow = play(inst, ScriptPolicy([(0.0, {2: 0, 3: 0})])).metrics
    assert fast.normalized_throughput == pytest.approx(2.0, rel=1e-9)
    assert slow.normalized_throughput < fast.normalized_throughput


@pytest.mark.parametrize(
    ("x", "want"),
    [
        ([1.0, 1.0, 1.0], 1.0),
        ([1.0, 0.0, 0.0, 0.0], 0.25),  # one job got everything: 1/n
        ([1.0, 2.0], 9.0 / 10.0),
        ([0.0, 0.0], 1.0),  # all treated alike
        ([3.0], 1.0),
    ],
)
def test_jain_index__values(x, want):
    from mtgym.metrics import jain_index

    assert jain_index(np.array(x)) == pytest.approx(want)
    assert jain_index(np.array(x) * 1000.0) == pytest.approx(want)  # scale-free


def test_jain_index__empty_is_nan():
    from mtgym.metrics import jain_index

    assert np.isnan(jain_index(np.array([])))


def test_normalized_rates__per_submitted_job_over_its_time_in_the_system():
    from mtgym.metrics import normalized_rates

    inst = three_jobs()  # rate 1 per node, submitted at 10, 20, 50
    C, A = JobStatus.COMPLETED, JobStatus.ACTIVE
    st = state_at(inst, 40.0, [C, A, A], [30.0, np.nan, np.nan])
    st.progress = np.array([100.0, 10.0, 0.0])
    # job 0: 100 samples over 30 - 10 s; job 1: 10 over 40 - 20 s; job 2 not yet submitted
    assert normalized_rates(st, inst) == pytest.approx([100.0 / 20.0, 10.0 / 20.0])


def test_normalized_efficiency__at_most_one_on_a_real_episode():
    from dataclasses import replace

    from mtgym.generate.default import default_generator
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy

    g = default_generator()
    gen = replace(
        g, num_nodes=16, group_size=4, horizon_s=3 * 3600.0, jobs=replace(g.jobs, num_jobs=8)
    )
    for name in ("greedy", "equal-share"):
        m = play(gen(0), make_policy(name)).metrics
        assert 0.0 < m.normalized_efficiency <= 1.0, name
        assert 0.0 < m.fairness_jain <= 1.0, name
        # at most every offered node-second at a reference rate
        assert m.normalized_samples <= m.offered_node_s * (1 + 1e-12), name
