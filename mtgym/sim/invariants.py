"""``check_state``: the model's invariants, used by the tests and by the debug flag.

Set ``MTGYM_DEBUG=1`` (or pass ``debug=True`` to ``mtgym.policy.play.play``) to check
them after every step.
"""

from __future__ import annotations

import numpy as np

from mtgym.core.errors import InvariantError
from mtgym.core.instance import Instance
from mtgym.core.types import JobStatus
from mtgym.sim.state import ClusterState


def check_state(
    state: ClusterState, instance: Instance, prev: ClusterState | None = None, *, deep: bool = True
) -> None:
    """Raise ``InvariantError`` naming the first broken invariant.

    - a node runs at most one job, and only while it is idle (a reclaimed node is released
      at once), and only for an active job;
    - node counts agree with the node map; a running job is within [min_nodes, max_nodes];
    - progress is within [0, work], and never decreases (with ``prev``);
    - offered node-time = allocated + unallocated, and productive <= allocated <= offered;
    - a node is idle exactly when it is inside an open window, which covers now;
    - a job without nodes has no pause pending; progress <= milestone; checkpoint <= progress;
    - a job has a finish time exactly when finished, and is FUTURE exactly before submission;
    - accumulators never decrease (with ``prev``);
    - ``deep``: rates equal a recomputation from the node map, and offered node-time equals
      the supply's idle node-time since ``t_start`` (O(N log N + W): debug runs only).

    Tolerances: 1e-9 of a job's work (at least 1e-9 samples) for progress, 1e-6 relative for
    node-time, 1e-12 relative for rates.

    Args:
        state: the state to check.
        instance: its instance.
        prev: an earlier state of the same episode, for the monotonicity checks (None:
            skipped).
        deep: also run the recomputations (the costly checks).

    Raises:
        InvariantError: the first invariant found broken, with the node or job concerned.
    """
    tol = 1e-9 * np.maximum(1.0, instance.jobs.work)
    _check_node_map(state, instance)
    _check_progress(state, instance, prev, tol)
    _check_windows_and_status(state, instance, tol)
    if prev is not None:
        _check_accumulators_grow(state, prev)
    if deep:
        _check_recomputed(state, instance)
    _check_node_time(state)


def _check_node_map(state: ClusterState, instance: Instance) -> None:
    """Nodes run active jobs while idle only; counts and rates agree with the node map."""
    jobs = instance.jobs
    nj = state.node_job
    if np.any((nj >= 0) & ~state.available):
        n = int(np.flatnonzero((nj >= 0) & ~state.available)[0])
        raise InvariantError(
            f"node {n} runs job {int(nj[n])} but is not idle (reclaimed nodes must be released)"
        )
    if np.any(nj >= instance.num_jobs) or np.any(nj < -1):
        raise InvariantError("node_job holds an out-of-range job id")
    counts = np.bincount(nj[nj >= 0], minlength=instance.num_jobs)
    if not np.array_equal(counts, state.n_nodes):
        j = int(np.flatnonzero(counts != state.n_nodes)[0])
        raise InvariantError(
            f"job {j}: n_nodes={int(state.n_nodes[j])} but the node map gives {int(counts[j])}"
        )
    running = counts > 0
    if np.any(running & (state.status != JobStatus.ACTIVE)):
        j = int(np.flatnonzero(running & (state.status != JobStatus.ACTIVE))[0])
        raise InvariantError(
            f"job {j} holds nodes with status {JobStatus(int(state.status[j])).name}"
        )
    bad = running & ((counts < jobs.min_nodes) | (counts > jobs.max_nodes))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise InvariantError(
            f"job {j} runs on {int(counts[j])} nodes, outside "
            f"[{int(jobs.min_nodes[j])}, {int(jobs.max_nodes[j])}]"
        )
    if np.any(state.rate[~running] != 0):
        raise InvariantError("a job without nodes has a non-zero rate")


def _check_progress(
    state: ClusterState, instance: Instance, prev: ClusterState | None, tol: np.ndarray
) -> None:
    """Progress within [0, work] (work when completed) and never decreasing; no negative
    debt; time never goes backwards.
    """
    jobs = instance.jobs
    if np.any(state.progress < -tol) or np.any(state.progress > jobs.work + tol):
        raise InvariantError("progress outside [0, work]")
    if np.any(state.debt < -tol):
        raise InvariantError("negative debt")
    done = state.status == JobStatus.COMPLETED
    if np.any(np.abs(state.progress[done] - jobs.work[done]) > tol[done]):
        raise InvariantError("a completed job has progress != work")
    if prev is not None:
        dec = state.progress < prev.progress - tol
        if dec.any():
            j = int(np.flatnonzero(dec)[0])
            raise InvariantError(
                f"job {j}: progress decreased {prev.progress[j]} -> {state.progress[j]}"
            )
        if state.time < prev.time:
            raise InvariantError("time went backwards")


def _check_windows_and_status(state: ClusterState, instance: Instance, tol: np.ndarray) -> None:
    """Open windows match the idle nodes and cover now; pauses, milestones, checkpoints,
    finish times and FUTURE statuses are consistent.
    """
    jobs = instance.jobs
    t = state.time
    w = state.window
    if not np.array_equal(state.available, w >= 0):
        raise InvariantError("available does not match the open windows")
    sup = instance.supply
    open_w = w[w >= 0]
    if open_w.size and (np.any(sup.start_s[open_w] > t) or np.any(sup.end_s[open_w] <= t)):
        raise InvariantError("an open window does not cover the current time")
    idle_paused = (state.n_nodes == 0) & (state.stall_until > t)
    if idle_paused.any():
        raise InvariantError(
            f"job {int(np.flatnonzero(idle_paused)[0])} has no nodes but a pause pending"
        )
    if np.any(state.progress > state.milestone + tol):
        raise InvariantError("progress beyond the next milestone")
    if np.any(state.ckpt_progress > state.progress + tol):
        raise InvariantError("a checkpoint ahead of progress")
    finished = state.status >= JobStatus.COMPLETED
    if not np.array_equal(finished, ~np.isnan(state.finish_time)):
        raise InvariantError("finish_time set for an unfinished job or missing for a finished one")
    future = state.status == JobStatus.FUTURE
    if np.any(future & (jobs.submit_s <= t)) or np.any(~future & (jobs.submit_s > t)):
        raise InvariantError("job status FUTURE does not match the submission times")


def _check_accumulators_grow(state: ClusterState, prev: ClusterState) -> None:
    """No accumulator decreased since ``prev`` (1e-9 absolute slack).

    The global node-time and job-time integrals, and per job the rescale, start and
    pre-emption counts and the held and stalled seconds.
    """
    for name in (
        "offered_node_s",
        "allocated_node_s",
        "productive_node_s",
        "unused_node_s",
        "active_job_s",
    ):
        if getattr(state, name) < getattr(prev, name) - 1e-9:
            raise InvariantError(f"accumulator {name} decreased")
    for name in ("rescales", "starts", "preemptions", "node_s", "stalled_s"):
        if np.any(getattr(state, name) < getattr(prev, name) - 1e-9):
            raise InvariantError(f"per-job accumulator {name} decreased")


def _check_recomputed(state: ClusterState, instance: Instance) -> None:
    """Rates equal a recomputation from the node map; offered node-time equals the
    supply's idle node-time since ``t_start``.
    """
    t, sup = state.time, instance.supply
    from mtgym.sim.dynamics import throughput_model

    rate, _, _ = throughput_model(instance).job_rates(state.node_job)
    if not np.allclose(rate, state.rate, rtol=1e-12, atol=0.0):
        raise InvariantError("rates do not match the node map")
    offered = sup.offered_node_seconds(instance.t_start, t)
    if abs(offered - state.offered_node_s) > 1e-6 * max(1.0, offered):
        raise InvariantError(f"offered node-s {state.offered_node_s} != supply's {offered}")


def _check_node_time(state: ClusterState) -> None:
    """Offered = allocated + unused node-time; productive <= allocated <= offered; per-job
    node-time adds up to the allocated node-time.
    """
    eps = 1e-6 * max(1.0, state.offered_node_s)
    if abs(state.offered_node_s - state.allocated_node_s - state.unused_node_s) > eps:
        raise InvariantError(
            f"offered node-s {state.offered_node_s} != allocated {state.allocated_node_s}"
            f" + unused {state.unused_node_s}"
        )
    if state.allocated_node_s > state.offered_node_s + eps:
        raise InvariantError(
            f"allocated node-s {state.allocated_node_s} > offered {state.offered_node_s}"
        )
    if state.productive_node_s > state.allocated_node_s + eps:
        raise InvariantError("productive node-s exceed allocated node-s")
    if abs(state.node_s.sum() - state.allocated_node_s) > eps:
        raise InvariantError("per-job node-seconds do not add up to the allocated node-seconds")
