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
