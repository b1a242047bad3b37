"""Helpers to build small hand-checkable instances and to roll policies out under checks.

``tiny_instance`` (``mtgym.generate.uniform.uniform_instance``) builds identical nodes from
``JobRow``s such as ``linear_job``'s, whose exact rates make expected samples and times
easy to compute by hand. ``RawRandomPolicy`` and ``ScriptPolicy`` are policies for tests:
the first stresses the allocation repair path, the second plays a plan written in the
test. ``checked_rollout`` checks every state invariant after each step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import Allocation, AppClass, JobStatus
from mtgym.generate.uniform import uniform_instance as tiny_instance  # noqa: F401 (re-exported)
from mtgym.generate.workload import JobRow
from mtgym.policy.base import Policy
from mtgym.sim.dynamics import StepInfo, advance, initial_state
from mtgym.sim.invariants import check_state
from mtgym.sim.state import ClusterState
from mtgym.sim.view import InfoMode, SchedulerView, ViewBuilder


def linear_job(
    name: str,
    rate_per_node: float,
    max_nodes: int,
    work: float,
    *,
    submit_s: float = 0.0,
    min_nodes: int = 1,
    r_up_s: float = 0.0,
    r_down_s: float = 0.0,
    startup_s: float = 0.0,
    ckpt_every: float = np.inf,
    campaign: int = -1,
    rungs: Sequence[float] = (),
    quality: float = 0.0,
    app_class: AppClass = AppClass.D,
) -> JobRow:
    """A table job whose rate is exactly ``rate_per_node * n`` for n = 0..max_nodes.

    Args:
        name: the job's name.
        rate_per_node: samples/s on one node (the curve is linear through 0).
        max_nodes: the largest node count (the curve has max_nodes + 1 breakpoints).
        work: samples to train.
        submit_s: submission time (s).
        min_nodes: the smallest node count it runs on.
        r_up_s: seconds of progress lost when scaled up (0: free rescales).
        r_down_s: seconds of progress lost when scaled down.
        startup_s: seconds to launch from 0 nodes.
        ckpt_every: samples between periodic checkpoints (inf: only at rescales).
        campaign: its campaign's index (-1: none).
        rungs: fractions of ``work`` where its campaign judges it (successive halving).
        quality: its hidden trial quality (higher survives the rungs).
        app_class: its application class (PAL's per-class slowdowns).
    """
    n = np.arange(max_nodes + 1, dtype=np.float64)
    return JobRow(
        name=name,
        model="linear",
        app_class=app_class,
        submit_s=submit_s,
        min_nodes=min_nodes,
        max_nodes=max_nodes,
        work=work,
        r_up_s=r_up_s,
        r_down_s=r_down_s,
        startup_s=startup_s,
        ckpt_every=ckpt_every,
        curve_nodes=n,
        curve_tput=rate_per_node * n,
        campaign=campaign,
        rungs=tuple(rungs),
        quality=quality,
    )


class RawRandomPolicy:
    """Random allocations, feasible or not: each idle node gets a random active job or none.

    Exercises the repair path (over max, below min) as much as the dynamics.

    Args:
        seed: the seed of its generator (a run is reproducible).
        p_idle: the probability that an idle node is offered to no job.
        p_keep: the probability that a node already running a job keeps it.
    """

    name = "random-raw"
    info_mode = InfoMode.USER

    def __init__(self, seed: int = 0, p_idle: float = 0.3, p_keep: float = 0.5) -> None:
        self.rng = np.random.default_rng(seed)
        self.p_idle = p_idle
        self.p_keep = p_keep

    def reset(self, view: SchedulerView) -> None:
        """Nothing to reset."""

    def decide(self, view: SchedulerView) -> Allocation:
        """A random node map over the active jobs.

        Each available node draws an active job uniformly (or none with ``p_idle``), then
        keeps its current job with ``p_keep``; unavailable nodes get -1. Node counts are
        not checked against ``min_nodes`` / ``max_nodes``: the simulator repairs them.

        Args:
            view: the decision-time snapshot.
        """
        active = np.flatnonzero(view.status == JobStatus.ACTIVE)
        N = view.num_nodes
        if active.size == 0:
            return Allocation(np.full(N, -1, dtype=np.int32))
        pick = active[self.rng.integers(0, active.size, size=N)]
        a = np.where(self.rng.random(N) < self.p_idle, -1, pick).astype(np.int32)
        keep = self.rng.random(N) < self.p_keep
        a = np.where(keep & (view.node_job >= 0), view.node_job, a)
        return Allocation(np.where(view.available, a, -1).astype(np.int32))


class ScriptPolicy:
    """Plays a fixed plan: from time t on, node -> job (only nodes that are idle now).

    ``plan`` is a list of (t, {node: job}); the latest entry with t <= now applies.

    A node of the mapping that is not idle now is left out (``view.available``); nodes
    not in the mapping get no job. It sees the truth (``InfoMode.ORACLE``).

    Args:
        plan: the (time s, {node: job}) entries, in any order (sorted here).
        name: the policy's name.
    """

    info_mode = InfoMode.ORACLE

    def __init__(self, plan: Sequence[tuple[float, dict[int, int]]], name: str = "script"):
        self.plan = sorted(plan, key=lambda p: p[0])
        self.name = name

    def reset(self, view: SchedulerView) -> None:
        """Nothing to reset."""

    def decide(self, view: SchedulerView) -> Allocation:
        """The plan's node map at ``view.time``, on the idle nodes.

        An entry applies from its time on, with a 1e-9 s tolerance for rounding.

        Args:
            view: the decision-time snapshot.
        """
        m: dict[int, int] = {}
        for t, mapping in self.plan:
            if t <= view.time + 1e-9:
                m = mapping
        a = np.full(view.num_nodes, -1, dtype=np.int32)
        for n, j in m.items():
            if view.available[n]:
                a[n] = j
        return Allocation(a)


def checked_rollout(
    instance: Instance, policy: Policy, *, max_steps: int = 10_000
) -> list[tuple[ClusterState, StepInfo]]:
    """Roll ``policy`` out, checking every invariant after each step; returns the trajectory.

    Each step asks the policy for an allocation and advances to the next decision event
    (``advance``, pure). The rollout ends when every job is done, at ``t_end``, when a
    step makes no progress (same time, no event), or after ``max_steps``.

    Args:
        instance: the instance (not modified).
        policy: the policy; reset on the first view, with views of its ``info_mode``.
        max_steps: the most steps played.

    Returns:
        ``(state, info)`` after each step, in order (the initial state is not included).

    Raises:
        InvariantError: a state breaks an invariant (``mtgym.sim.invariants.check_state``,
            the initial state included).
    """
    state = initial_state(instance)
    check_state(state, instance)
    views = ViewBuilder(instance, policy.info_mode, policy_name=policy.name)
    policy.reset(views(state))
    out = []
    for _ in range(max_steps):
        new, info = advance(state, instance, policy.decide(views(state)))
        check_state(new, instance, state)
        out.append((new, info))
        if info.all_done or new.time >= instance.t_end or (info.t1 == info.t0 and not info.kinds):
            break
        state = new
    return out
