"""``play``: the one driver of a policy through an instance, decision epoch by epoch.

Every consumer (``mtgym run``, ``evaluate``, the Ray backend, training evaluation, the bridge
recorder, the reproductions) plays an episode through it, so a MILP, a heuristic and a
learned agent are driven the same way.

**Schedule.** The policy decides at every decision event (BFTrainer re-solves on each node
and job event) or, with ``decision_interval_s``, only every that many seconds (events in
between are handled with the standing allocation). Left as None, it is the policy's own
schedule: a round-based policy's ``round_s`` (PAL), else its ``decision_interval_s``
attribute (a learned agent trained on a fixed interval).

**End.** A run stops at ``until`` (capped at the horizon), when every job has finished
(unless ``to_horizon``, which keeps replaying the supply: benchmarks), or when a step
neither advances time nor sees an event.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from mtgym.core.errors import PolicyUnsupportedError
from mtgym.core.instance import Instance
from mtgym.core.types import DECISION_EVENTS, EventKind
from mtgym.metrics import EpisodeMetrics, compute_metrics
from mtgym.policy.base import Policy
from mtgym.sim.dynamics import StepInfo, advance, initial_state
from mtgym.sim.invariants import check_state
from mtgym.sim.state import ClusterState
from mtgym.sim.view import ViewBuilder


@dataclass
class EpisodeResult:
    """Metrics plus the final state and timing of one episode.

    Attributes:
        metrics: The episode's metrics (``compute_metrics`` of the final state).
        state: The final state.
        wall_s: Wall seconds of the whole episode, the policy's time included.
        policy_s: Wall seconds spent in ``policy.decide``.
        decisions: Calls of ``policy.decide``.
        repairs: Decisions whose allocation the simulator had to repair.
    """

    metrics: EpisodeMetrics
    state: ClusterState
    wall_s: float
    policy_s: float
    decisions: int
    repairs: int

    @property
    def decision_ms(self) -> float:
        """Mean decision latency of the policy, milliseconds."""
        return 1e3 * self.policy_s / max(self.decisions, 1)


def play(
    instance: Instance,
    policy: Policy,
    *,
    until: float | None = None,
    decision_interval_s: float | None = None,
    debug: bool | None = None,
    on_step: Callable[[ClusterState, StepInfo], None] | None = None,
    to_horizon: bool = False,
) -> EpisodeResult:
    """Run ``policy`` from ``instance.t_start`` until the workload is done or the horizon.

    When it decides and when it stops: the module docstring.

    Args:
        instance: The episode.
        policy: The policy; ``reset`` once, then ``decide`` at each epoch.
        until: Stop at this time, seconds; None: the instance's horizon.
        decision_interval_s: Seconds between decisions, > 0; None: the policy's own.
        debug: Check every invariant after each step (slow); None: the ``MTGYM_DEBUG``
            environment variable (set and not ``0``).
        on_step: Called after each step with the state (updated in place) and the
            step's ``StepInfo``.
        to_horizon: Keep stepping after the workload is done (to the horizon or ``until``).

    Raises:
        ValueError: ``decision_interval_s`` (given or the policy's) is not > 0.
        InvariantError: with ``debug``, a broken invariant (a simulator bug).
        PolicyUnsupportedError: the policy cannot run on this instance (from its ``reset``),
            naming the instance's scenario.
    """
    if decision_interval_s is None:  # the policy's own schedule (module docstring)
        decision_interval_s = getattr(policy, "round_s", None)
        if decision_interval_s is None:
            decision_interval_s = getattr(policy, "decision_interval_s", None)
    if decision_interval_s is not None and not decision_interval_s > 0:
        raise ValueError(f"decision_interval_s must be > 0, got {decision_interval_s!r}")
    if debug is None:
        debug = os.environ.get("MTGYM_DEBUG", "") not in ("", "0")
    t_wall = time.perf_counter()
    state = initial_state(instance)
    try:
        views = ViewBuilder(instance, policy.info_mode, policy_name=policy.name)
        policy.reset(views(state))
    except PolicyUnsupportedError as exc:  # the policy does not know the scenario's name
        raise exc.with_scenario(instance.name) from None
    limit = instance.t_end if until is None else min(until, instance.t_end)
    policy_s = 0.0
    decisions = repairs = 0
    stop_on = DECISION_EVENTS if decision_interval_s is None else EventKind.HORIZON
    prev = state.copy() if debug else None
    while state.time < limit:
        t0 = time.perf_counter()
        alloc = policy.decide(views(state))
        policy_s += time.perf_counter() - t0
        decisions += 1
        step_until = (
            limit if decision_interval_s is None else min(limit, state.time + decision_interval_s)
        )
        state, info = advance(state, instance, alloc, until=step_until, stop_on=stop_on, copy=False)
        if info.repair is not None and info.repair.repaired:
            repairs += 1
        if debug:
            check_state(state, instance, prev)
            prev = state.copy()
        if on_step is not None:
            on_step(state, info)
        if (info.all_done and not to_horizon) or (
            info.t1 == info.t0 and info.kinds == EventKind.NONE
        ):
            break
    return EpisodeResult(
        metrics=compute_metrics(state, instance),
        state=state,
        wall_s=time.perf_counter() - t_wall,
        policy_s=policy_s,
        decisions=decisions,
        repairs=repairs,
    )
