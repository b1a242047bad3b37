"""``play``: the one driver of a policy through an instance, decision epoch by epoch.

Every consumer (``mtgym run``, ``evaluate``, the Ray backend, training evaluation, the bridge
recorder, the reproductions) plays an episode through it, so a MILP, a heuristic and a
learned agent are driven the same way.
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
    """Metrics plus the final state and timing of one episode."""

    metrics: EpisodeMetrics
    state: ClusterState
    wall_s: float
    policy_s: float  # time spent in policy.decide
    decisions: int
    repairs: int  # decisions that needed a repair

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

    The policy decides at every decision event (BFTrainer re-solves on each node and job
    event) or, with ``decision_interval_s``, only every that many seconds (events in
    between are handled with the standing allocation). Left as None, it is the policy's own
    schedule: a round-based policy's ``round_s`` (PAL), else its ``decision_interval_s``
    attribute (a learned agent trained on a fixed interval). ``debug`` (default: the
    ``MTGYM_DEBUG`` environment variable) checks every invariant after each step.
    ``to_horizon`` keeps replaying the supply after the workload is done (benchmarks).

    Raises:
        PolicyUnsupportedError: the policy cannot run on this instance (from its ``reset``),
            naming the instance's scenario.
    """
    if decision_interval_s is None:
        # the policy's own schedule: a round-based policy's rounds (PAL), else the
        # interval a learned agent was trained on
        decision_interval_s = getattr(policy, "round_s", None)
        if decision_interval_s is None:
            decision_interval_s = getattr(policy, "decision_interval_s", None)
    if decision_interval_s is not None and not decision_interval_s > 0:
        raise ValueError(f"decision_interval_s must be > 0, got {decision_interval_s!r}")
    if debug is None:
        debug = os.environ.get("MTGYM_DEBUG", "") not in ("", "0")
    t_wall = time.perf_counter()
    state = initial_state(instance)
    views = ViewBuilder(instance, policy.info_mode)
    try:
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
