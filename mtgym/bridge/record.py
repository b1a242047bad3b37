"""Record the decisions a policy takes in the simulator as a bridge trace.

``RecordDecisions`` wraps a policy (it *is* a ``Policy``) and is also the ``on_step``
callback of ``mtgym.policy.play.play``:

- in ``decide`` it sees the allocation the policy returns, repairs it exactly as the
  simulator will (``repair_allocation``), and writes one line per job whose node set the
  decision changes, at the decision time;
- in ``on_step`` it sees the state after the simulator's events and writes the changes those
  events made (a node reclaimed by its host, a job completed or stopped, a job released
  below its minimum), at the time each happened (a reclaim at its window's end, a completion
  at the job's finish time), so decisions taken every ``decision_interval_s`` keep the exact
  reclaim times.

Every line carries the simulator's predicted rate on that node set (``ThroughputModel``) and
the header carries each job's predicted curve on packed best nodes.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from mtgym.bridge.trace import INTERVAL_KEY, TraceEvent, TraceHeader, TraceJob, TraceWriter
from mtgym.core.instance import Instance
from mtgym.core.types import Allocation, AppClass, JobStatus
from mtgym.policy.base import Policy
from mtgym.policy.play import EpisodeResult, play
from mtgym.sim.dynamics import StepInfo, repair_allocation, throughput_model, validate_allocation
from mtgym.sim.state import ClusterState
from mtgym.sim.view import SchedulerView


def trace_header(
    instance: Instance, *, scenario: str, policy: str, seed: int | None, t_end: float | None = None
) -> TraceHeader:
    """The header of a trace of ``instance``: its jobs and their predicted curves.

    Job ids are the instance's job indices as text. Each job's ``curve`` maps ``n`` (1 to
    its ``max_nodes``) to the simulator's rate in samples/s on ``n`` packed nodes of its
    best type (``ThroughputModel.ideal_curve``).

    Args:
        instance: the episode's instance.
        scenario: the scenario name, stored in the header.
        policy: the policy name, stored in the header.
        seed: the episode seed (None: not known).
        t_end: where the recording stops, in simulated seconds (None: the instance's
            ``t_end``; never later than it).
    """
    jobs = instance.jobs
    model = throughput_model(instance)
    tjobs = {}
    for j in range(instance.num_jobs):
        curve = model.ideal_curve(j)
        tjobs[str(j)] = TraceJob(
            name=jobs.name[j],
            model=jobs.model[j],
            app_class=AppClass(int(jobs.app_class[j])).name,
            min_nodes=int(jobs.min_nodes[j]),
            max_nodes=int(jobs.max_nodes[j]),
            submit_s=float(jobs.submit_s[j]),
            work=float(jobs.work[j]),
            r_up_s=float(jobs.r_up_s[j]),
            r_down_s=float(jobs.r_down_s[j]),
            startup_s=float(jobs.startup_s[j]),
            curve={n: float(curve[n]) for n in range(1, len(curve))},
        )
    names = instance.cluster.node_names
    return TraceHeader(
        scenario=scenario,
        policy=policy,
        seed=seed,
        t_start=float(instance.t_start),
        t_end=float(instance.t_end if t_end is None else min(t_end, instance.t_end)),
        num_nodes=instance.num_nodes,
        gpus_per_node=instance.cluster.gpus_per_node,
        node_names=list(names) if names is not None else None,
        jobs=tjobs,
    )


class RecordDecisions:
    """A policy wrapper and ``on_step`` callback that writes a trace (see module doc).

    It copies the inner policy's ``name``, ``info_mode``, ``round_s`` and
    ``decision_interval_s``, so ``play`` treats it as the inner policy (same view, same
    schedule).

    Args:
        policy: the policy whose decisions are recorded.
        instance: the episode's instance (nodes, jobs, supply windows).
        writer: the open trace; the header is already written.

    Attributes:
        events: trace lines written so far.
    """

    def __init__(self, policy: Policy, instance: Instance, writer: TraceWriter) -> None:
        self.policy = policy
        self.instance = instance
        self.writer = writer
        self.name = policy.name
        self.info_mode = policy.info_mode
        # (``play`` decides on the inner policy's own interval, e.g. a learned agent's)
        self.decision_interval_s = getattr(policy, "decision_interval_s", None)
        self.round_s = getattr(policy, "round_s", None)  # (PAL's rounds: play's first rule)
        self._model = throughput_model(instance)
        self._cur = np.full(instance.num_nodes, -1, dtype=np.int32)
        self._t = float(instance.t_start)
        self.events = 0

    # -- Policy ------------------------------------------------------------------------
    def reset(self, view: SchedulerView) -> None:
        """Reset the inner policy and take the view's node map as the recorded state.

        Args:
            view: the first view of the episode (no job holds nodes yet at ``t_start``).
        """
        self.policy.reset(view)
        self._cur = np.array(view.node_job, dtype=np.int32, copy=True)
        self._t = float(view.time)

    def decide(self, view: SchedulerView) -> Allocation:
        """The inner policy's decision, recorded as the simulator will apply it.

        The recorded map is the one ``repair_allocation`` makes of it (nodes not idle or
        given to inactive jobs dropped, jobs cut to ``max_nodes``, jobs below ``min_nodes``
        given none), so the trace holds what the simulator runs, not what the policy asked
        for.

        Args:
            view: the current view; changes are written at ``view.time``.

        Returns:
            The inner policy's allocation, unchanged (the simulator repairs it itself).
        """
        alloc = self.policy.decide(view)
        node_job = alloc.node_job if isinstance(alloc, Allocation) else alloc
        a = validate_allocation(node_job, self.instance.num_nodes, self.instance.num_jobs)
        shim = SimpleNamespace(available=view.available, status=view.status, node_job=view.node_job)
        repair_allocation(shim, self.instance, a)  # type: ignore[arg-type]
        self._emit(float(view.time), a, {})
        return alloc

    # -- on_step -----------------------------------------------------------------------
    def on_step(self, state: ClusterState, info: StepInfo) -> None:
        """Record what the simulator's events changed between ``info.t0`` and ``info.t1``.

        Each lost node is dated: a reclaim at the end of the node's supply window that falls
        in ``(t0, t1]``, a completion or stop at the job's finish time, anything else (a
        release below the minimum) at ``t1``, or at the time of the reclaim that caused it.
        Losses at or after the instance's ``t_end`` are not written (the end line stops
        every job). Gains never come from events: they were written in ``decide``.

        Args:
            state: the simulator's state after the step.
            info: the step's interval (``t0``, ``t1``, simulated seconds).
        """
        new = state.node_job
        changed = np.flatnonzero(new != self._cur)
        if changed.size == 0:
            return
        sup = self.instance.supply
        when: dict[int, float] = {}  # lost node -> time it left
        reason: dict[int, str] = {}
        for n in changed.tolist():
            j = int(self._cur[n])
            if j < 0:
                continue
            t = float(info.t1)
            why = "release"
            if not state.available[n]:
                w = np.flatnonzero((sup.node == n) & (sup.start_s <= info.t0 + 1e-9))
                ends = sup.end_s[w]
                ends = ends[(ends > info.t0 - 1e-9) & (ends <= info.t1 + 1e-9)]
                t = float(ends.min()) if ends.size else float(info.t1)
                why = "reclaim"
            elif state.status[j] >= JobStatus.COMPLETED and np.isfinite(state.finish_time[j]):
                t = float(state.finish_time[j])
                why = "complete" if state.status[j] == JobStatus.COMPLETED else "stopped"
            if t >= self.instance.t_end:
                continue  # windows cut at t_end are not reclaims: the end line stops all
            when[n] = t
            reason[n] = why
        if not when:
            self._cur = np.array(new, dtype=np.int32, copy=True)
            return
        for n in [m for m in when if reason[m] == "release"]:
            # released with a reclaimed sibling (below the minimum): at that reclaim's time
            j = int(self._cur[n])
            rs = [when[m] for m in when if reason[m] == "reclaim" and int(self._cur[m]) == j]
            if rs:
                when[n] = max(rs)
        # Events only take nodes away (gains come from decisions): apply the losses in time
        # order. A job's reason at a time is its most telling one (a reclaim beats the
        # release of the siblings it left below the minimum).
        base = self._cur.copy()
        for t in sorted(set(when.values())):
            step = base.copy()
            why_by_job: dict[int, str] = {}
            for n, tn in when.items():
                if tn <= t:
                    step[n] = -1
                if tn == t:
                    j = int(base[n])
                    if why_by_job.get(j) in (None, "release"):
                        why_by_job[j] = reason[n]
            self._emit(t, step, why_by_job)
        self._cur = np.array(new, dtype=np.int32, copy=True)  # losses at t_end: silent

    # -- writing -----------------------------------------------------------------------
    def _emit(self, t: float, node_job: np.ndarray, why: dict[int, str]) -> None:
        """Write one line per job whose node set differs from the recorded one, then adopt it.

        Args:
            t: the change's simulated time; raised to the last written time if earlier, so
                the trace never goes backwards.
            node_job: (N,) the job index on each node, -1 for none.
            why: the reason per job index; jobs not in it get ``"decision"``.
        """
        node_job = np.asarray(node_job, dtype=np.int32)
        diff = np.flatnonzero(node_job != self._cur)
        if diff.size == 0:
            return
        jobs = set(node_job[diff].tolist()) | set(self._cur[diff].tolist())
        jobs.discard(-1)
        for j in sorted(jobs):
            nodes = np.flatnonzero(node_job == j)
            rate = self._model.rate_on(j, nodes) if nodes.size else 0.0
            self.writer.event(
                TraceEvent(
                    t=max(t, self._t),
                    job=str(j),
                    nodes=tuple(int(n) for n in nodes),
                    reason=why.get(j, "decision"),
                    rate=float(rate),
                )
            )
            self.events += 1
        self._t = max(t, self._t)
        self._cur = node_job.copy()


def record_episode(
    instance: Instance,
    policy: Policy,
    out: str | Path,
    *,
    scenario: str,
    seed: int | None = None,
    until: float | None = None,
    decision_interval_s: float | None = None,
    **run_kwargs: Any,
) -> tuple[EpisodeResult, Path]:
    """Run ``policy`` on ``instance`` and write its decisions to the trace ``out``.

    The trace ends with an end line at the episode's last simulated time; if ``play``
    raises, the file is closed without it (a truncated trace that ``read_trace`` rejects).

    Args:
        instance: the episode's instance.
        policy: the policy to run and record.
        out: the trace file to write (replaced if it exists).
        scenario: the scenario name for the header.
        seed: the episode seed for the header.
        until: stop the episode at this simulated time (None: when ``play`` ends).
        decision_interval_s: decide only every that many simulated seconds (None: the
            policy's own schedule, see ``play``).
        **run_kwargs: passed on to ``play`` (``debug``, ``to_horizon``).

    Returns:
        ``play``'s result and the trace's path.
    """
    header = trace_header(instance, scenario=scenario, policy=policy.name, seed=seed, t_end=until)
    # the schedule ``play`` will decide on (its rule), so a dataset made of the trace
    # (``mtgym dataset from-trace``) decides at the same times
    interval = decision_interval_s
    if interval is None:
        interval = getattr(policy, "round_s", None)
    if interval is None:
        interval = getattr(policy, "decision_interval_s", None)
    header.extra[INTERVAL_KEY] = interval
    writer = TraceWriter(out, header)
    rec = RecordDecisions(policy, instance, writer)
    try:
        result = play(
            instance,
            rec,
            until=until,
            decision_interval_s=decision_interval_s,
            on_step=rec.on_step,
            **run_kwargs,
        )
        # the end line: every job still running stops there
        writer.close(float(result.state.time))
    finally:
        writer.__exit__()
    return result, Path(out)
