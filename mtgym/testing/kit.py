"""Helpers to build small hand-checkable instances and to roll policies out under checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mtgym.core.instance import Campaigns, CostModel, Instance, Supply
from mtgym.core.topology import Topology
from mtgym.core.types import Allocation, AppClass, JobStatus
from mtgym.generate.cluster import build_cluster
from mtgym.generate.workload import JobRow, build_jobs
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
    """A table job whose rate is exactly ``rate_per_node * n`` for n = 0..max_nodes."""
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


def tiny_instance(
    num_nodes: int,
    rows: Sequence[JobRow],
    *,
    windows: Sequence[tuple[int, float, float]] | None = None,
    t_end: float = 1e6,
    costs: CostModel | None = None,
    group_size: int = 2,
    slowdown: np.ndarray | None = None,
    locality_factor: tuple[float, float, float] | None = None,
    campaigns: Campaigns | None = None,
) -> Instance:
    """Identical single-GPU nodes (or ``slowdown`` (N, 4) per node), groups of ``group_size``.

    ``windows`` are (node, start, end); default: every node idle on [0, t_end).
    """
    topo = Topology.uniform(num_nodes, group_size, locality_factor=locality_factor)
    cl = build_cluster(
        np.random.default_rng(0),
        gpus_per_node=1,
        gpu_type_names=("V100",),
        gpu_type=np.zeros(num_nodes, dtype=int),
        topology=topo,
        variability=None,
        profile_noise=0.0,
    )
    if slowdown is not None:
        from dataclasses import replace

        sd = np.asarray(slowdown, dtype=np.float64)
        cl = replace(cl, device_slowdown=sd[:, None, :], slowdown=sd, profiled_slowdown=sd)
    if windows is None:
        windows = [(n, 0.0, t_end) for n in range(num_nodes)]
    w = np.array(windows, dtype=np.float64).reshape(-1, 3)
    supply = Supply.from_windows(w[:, 0].astype(int), w[:, 1], w[:, 2], num_nodes=num_nodes)
    jobs = build_jobs(list(rows), cl)
    return Instance(
        "tiny",
        cl,
        supply,
        jobs,
        campaigns=campaigns or Campaigns(),
        costs=costs or CostModel(),
        t_end=t_end,
        seed=0,
    ).validate()


class RawRandomPolicy:
    """Random allocations, feasible or not: each idle node gets a random active job or none.

    Exercises the repair path (over max, below min) as much as the dynamics.
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
        """A random node map over the active jobs."""
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
    """

    info_mode = InfoMode.ORACLE

    def __init__(self, plan: Sequence[tuple[float, dict[int, int]]], name: str = "script"):
        self.plan = sorted(plan, key=lambda p: p[0])
        self.name = name

    def reset(self, view: SchedulerView) -> None:
        """Nothing to reset."""

    def decide(self, view: SchedulerView) -> Allocation:
        """The plan's node map at ``view.time``, on the idle nodes."""
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
    """Roll ``policy`` out, checking every invariant after each step; returns the trajectory."""
    state = initial_state(instance)
    check_state(state, instance)
    views = ViewBuilder(instance, policy.info_mode)
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
